"""Before and after in one run: a bench script run again as a child process per round, on
another checkout's ``src`` (``PYTHONPATH``), the two checkouts alternating which goes
first, so drift on a shared machine falls on both. The child prints one JSON document
(``--json``); the parent puts the rounds of each arm side by side. Used by
``pg_write_bench.py`` and ``server_bench.py`` (``--before-src DIR``).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

__all__ = ["after_src", "arm_order", "run_child"]


def after_src() -> str:
    """The ``src`` folder of the memoir this process imports (the checkout under test)."""
    import memoir

    return str(Path(memoir.__file__).resolve().parents[1])


def arm_order(round_no: int) -> tuple[str, str]:
    """Which checkout goes first in a round: before first in even rounds."""
    return ("before", "after") if round_no % 2 == 0 else ("after", "before")


def run_child(script: Path, args: list[str], src: str, timeout: float = 1800) -> dict[str, Any]:
    """Run ``script`` with ``args`` (``--json`` among them) on the checkout at ``src``;
    its JSON document."""
    env = {**os.environ, "PYTHONPATH": src}
    done = subprocess.run(
        [sys.executable, str(script), *args],
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
    )
    if done.returncode != 0:
        raise RuntimeError(f"{script.name} on {src} failed:\n{done.stderr[-4000:]}")
    result: dict[str, Any] = json.loads(done.stdout)
    return result
