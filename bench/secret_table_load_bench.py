"""How long the secret detector's generated tables take to load: as Python modules
(``memoir.secret_table``, ``memoir.secret_rule_table``, from bytecode, as ``REF``'s code has
them) against the JSON data files read by ``memoir.secrets`` (issue 36, point 3).

    PYTHONPATH=src .venv/bin/python bench/secret_table_load_bench.py [--before-ref main] [--runs N]

Each run is a fresh interpreter that first imports what both arms need anyway (``memoir``
and ``typing``; ``memoir.secrets`` and ``json``), then times the tables alone. The arms
alternate, and the median of the per-pair ratios is printed beside the medians.
"""

from __future__ import annotations

import argparse
import compileall
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

__all__: list[str] = []

OLD = (
    "import memoir, typing, time; t = time.perf_counter(); "
    "import memoir.secret_rule_table, memoir.secret_table; print(time.perf_counter() - t)"
)
NEW = (
    "import memoir.secrets, json, time; t = time.perf_counter(); "
    "from memoir.secrets.rules import rule_table; "
    "from memoir.secrets.screen import plugin_table; "
    "rule_table(); plugin_table(); print(time.perf_counter() - t)"
)


def _time(code: str, src: str) -> float:
    env = {**os.environ, "PYTHONPATH": src}
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True)
    out.check_returncode()
    return float(out.stdout)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--before-ref", default="main")
    parser.add_argument("--runs", type=int, default=25)
    args = parser.parse_args()
    here = str(Path(__file__).resolve().parents[1] / "src")
    with tempfile.TemporaryDirectory() as tmp:
        archive = subprocess.run(
            ["git", "archive", args.before_ref, "src"], capture_output=True, check=True
        ).stdout
        subprocess.run(["tar", "-x", "-C", tmp], input=archive, check=True)
        before = str(Path(tmp) / "src")
        compileall.compile_dir(before, quiet=1)
        compileall.compile_dir(here, quiet=1)
        old, new = [], []
        for _ in range(args.runs):
            old.append(_time(OLD, before))
            new.append(_time(NEW, here))
    ratio = statistics.median(n / o for o, n in zip(old, new, strict=True))
    print(f"Python tables ({args.before_ref}, bytecode): {statistics.median(old) * 1e3:.2f} ms")
    print(f"JSON tables (this tree): {statistics.median(new) * 1e3:.2f} ms")
    print(f"per-pair ratio JSON/Python: {ratio:.2f}; load average {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    main()
