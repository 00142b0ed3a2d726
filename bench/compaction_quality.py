"""Compaction retention benchmark (issue 26): a thin script over ``memoir bench compaction``.

    .venv/bin/python bench/compaction_quality.py [--turns 50,100,200,400]
        [--windows 8000,32000,128000] [--seeds 3] [--json]

Generates seeded agent histories with planted facts (``memoir.bench.compaction_data``),
plays each through an agent loop that compacts at the threshold, and prints fact
retention by position, recent retention and tokens used against the threshold, for the
offline model — and, when ``MEMOIR_LLM`` names a provider model (its key set), for that
model too. The code lives in ``memoir.bench.compaction`` so the installed CLI runs the
same thing; the figures are in docs/benchmarks.md.
"""

from __future__ import annotations

import os
import platform
import sys
from datetime import UTC, datetime

from memoir.cli.app import main

__all__: list[str] = []


def _run(args: list[str]) -> None:
    try:
        main(["bench", "compaction", *args])
    except SystemExit as exc:  # typer ends every command so; only a failure stops here
        if exc.code not in (0, None):
            raise


if __name__ == "__main__":
    args = sys.argv[1:]
    if "--json" not in args:
        print(
            f"{platform.machine()} {platform.system()}, {os.cpu_count()} cores, "
            f"CPython {platform.python_version()}, {datetime.now(UTC):%Y-%m-%d}"
        )
    _run([*args, "--model", "offline"])
    if os.environ.get("MEMOIR_LLM", "offline") != "offline":
        _run([*args, "--model", "configured"])
