"""`memoir mcp` start-up: process start → `initialize` answered (the SDK's stdio client),
the first `search` call, and a bare `memoir --version` in the same run for scale.

    .venv/bin/python bench/mcp_startup_bench.py HOME_DIR [RUNS]

HOME_DIR: any synced home (the demo's will do). Medians of RUNS (default 9) processes.
"""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

import anyio
from mcp.client.session import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client

__all__: list[str] = []

EXE = str(Path(sys.executable).with_name("memoir"))


async def _start(env: dict[str, str]) -> tuple[float, float]:
    t = time.perf_counter()
    params = StdioServerParameters(command=EXE, args=["mcp"], env=env)
    async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
        await session.initialize()
        took = time.perf_counter() - t
        await session.call_tool("search", {"query": "coupon", "mode": "text", "limit": 1})
        return took, time.perf_counter() - t


def _version(env: dict[str, str]) -> float:
    t = time.perf_counter()
    subprocess.run([EXE, "--version"], env=env, check=True, capture_output=True)
    return time.perf_counter() - t


def main() -> None:
    home = sys.argv[1]
    runs = int(sys.argv[2]) if len(sys.argv) > 2 else 9
    env = {"MEMOIR_HOME": home, "HOME": os.environ["HOME"], "PATH": os.environ["PATH"]}
    rows = [(*anyio.run(_start, env), _version(env)) for _ in range(runs)]
    for name, col in (("initialize", 0), ("+ first search", 1), ("--version", 2)):
        print(f"{name}: {statistics.median(r[col] for r in rows):.3f} s")
    print(f"load average: {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
