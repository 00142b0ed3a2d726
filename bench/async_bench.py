"""The event loop under ``AsyncMemoir``: 50 tasks at once (append twice, search, recall, the
context block, search again), a ticker asking to run every 10 ms beside them. Reports the
run's wall time and the ticker's largest and median wait, median over ``--runs`` runs, and
what one ``memory_context`` call costs.

    PYTHONPATH=src .venv/bin/python bench/async_bench.py [--runs 5] [--database-url URL]

A throwaway home (SQLite) unless ``--database-url`` names PostgreSQL (use an empty schema).
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import statistics
import tempfile
import time

from memoir import search as backfill
from memoir.aio import AsyncMemoir
from memoir.app import Memoir
from memoir.config import Settings


def _chat(i: int) -> list[dict[str, str]]:
    return [
        {"id": f"t{i}-u", "role": "user", "content": f"task {i} asks about widget{i}"},
        {"id": f"t{i}-a", "role": "assistant", "content": f"answer {i} about widget{i}"},
    ]


async def _runs(memoir: Memoir, count: int) -> list[tuple[float, float, float]]:
    """``count`` runs on one AsyncMemoir (closing the store at the end)."""
    async with AsyncMemoir(memoir) as aio:
        return [await _one_run(aio, run) for run in range(count)]


async def _one_run(aio: AsyncMemoir, run: int) -> tuple[float, float, float]:
    """(wall seconds, largest tick wait, median tick wait) of one run of 50 tasks."""
    loop = asyncio.get_running_loop()

    async def task(i: int) -> None:
        sid = f"r{run}-c{i % 10}"
        await aio.append(sid, _chat(i), project="load")
        await aio.append(sid, _chat(i))
        await aio.search("pgbouncer transaction", limit=3)
        await aio.recall("database PostgreSQL")
        await aio.context(project="infra")
        await aio.search(f"widget{i}", mode="text", limit=5)

    ticks: list[float] = []
    stop = asyncio.Event()

    async def ticker() -> None:
        ticks.append(loop.time())
        while not stop.is_set():
            await asyncio.sleep(0.01)
            ticks.append(loop.time())

    ticking = asyncio.create_task(ticker())
    began = loop.time()
    await asyncio.gather(*(task(i) for i in range(50)))
    took = loop.time() - began
    stop.set()
    await ticking
    waits = [b - a for a, b in itertools.pairwise(ticks)]
    return took, max(waits), statistics.median(waits)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--database-url", default=None)
    args = parser.parse_args()
    backfill.WRITE_MAX = 0  # no embedding on write: the loop, not the embedder, is measured
    env = {"MEMOIR_HOME": tempfile.mkdtemp(prefix="memoir-async-"), "MEMOIR_EMBEDDER": "hash"}
    if args.database_url:
        env["MEMOIR_DATABASE_URL"] = args.database_url
    with Memoir.open(Settings.from_env(env, sources=())) as memoir:
        memoir.append(
            "s1",
            [
                {"role": "user", "content": "Remember that we decided to use PostgreSQL."},
                {
                    "role": "assistant",
                    "content": "PostgreSQL it is; pgbouncer in transaction mode.",
                },
            ],
            project="infra",
        )
        memoir.remember("s1")
        memoir.context()
        costs = []
        for _ in range(7):
            started = time.perf_counter()
            memoir.context(project="infra")
            costs.append(time.perf_counter() - started)
        print(f"backend: {memoir.store.backend}")
        runs = asyncio.run(_runs(memoir, args.runs))
    print(f"memory_context, median of 7: {statistics.median(costs) * 1000:.2f} ms")
    for name, index in (("run wall", 0), ("largest tick wait", 1), ("median tick wait", 2)):
        values = sorted(r[index] for r in runs)
        shown = ", ".join(f"{v * 1000:.0f}" for v in values)
        print(
            f"{name}, ms (median of {len(runs)}): {statistics.median(values) * 1000:.0f} [{shown}]"
        )


if __name__ == "__main__":
    main()
