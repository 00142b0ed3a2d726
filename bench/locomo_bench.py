"""LoCoMo retrieval benchmark: a thin script over ``memoir bench locomo``.

    .venv/bin/python bench/locomo_bench.py [DIR] [--json] [--embedder auto|minilm|hash|none]

DIR defaults to ../shared/bench/locomo. The code lives in ``memoir.bench`` so the
installed CLI runs the same thing.
"""

from __future__ import annotations

import sys
from pathlib import Path

from memoir.cli.app import main

__all__: list[str] = []

DEFAULT_DIR = Path(__file__).resolve().parents[2] / "shared" / "bench" / "locomo"

if __name__ == "__main__":
    args = sys.argv[1:]
    if not args or args[0].startswith("-"):
        args = [str(DEFAULT_DIR), *args]
    main(["bench", "locomo", *args])
