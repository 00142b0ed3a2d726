"""How long the `memoir` command takes to start, against the interpreter's own floors
measured in the same run (issue 39, point 1).

    .venv/bin/python bench/cli_startup_bench.py [--home DIR] [--runs N]

Each row times two whole processes in turn, pair by pair (A B A B …, after one warm-up
pair), with the same interpreter, and prints the median of each and the median of the
per-pair ratios A/B, so a machine whose speed drifts during the run still compares like
with like. The rows and their targets:

- ``memoir --version`` against ``python -c pass``: ≤ 3×;
- ``memoir --help`` against ``python -c 'import typer'`` (the CLI framework's own cost): ≤ 1.5×;
- ``memoir search`` on the demo home, no embedder, against the same typer floor: ≤ 3×;
- the same search in text mode with the embedder on ``auto``: no vector is needed, so no
  model is loaded (≤ 3×);
- the same search by meaning too (the demo home holds MiniLM vectors when the embeddings
  extra is installed): the model is loaded, for scale; no target. Peak memory of the three.

``memoir`` runs as ``python -m memoir.cli`` with this interpreter (what the console script
does, less its two-line wrapper). ``--home``: a home made by ``memoir demo --home DIR``;
without it one is made in a temp folder first (≈ 15 s).
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence

__all__: list[str] = []

PY = sys.executable
MEMOIR = [PY, "-m", "memoir.cli"]


def _run(argv: Sequence[str], env: dict[str, str]) -> float:
    """One whole process, its output read and dropped: wall seconds."""
    start = time.perf_counter()
    proc = subprocess.run(argv, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    took = time.perf_counter() - start
    if proc.returncode != 0:
        tail = proc.stderr.decode()[-400:]
        raise SystemExit(f"{' '.join(argv)} failed ({proc.returncode}): {tail}")
    return took


def _peak_mb(argv: Sequence[str], env: dict[str, str]) -> int:
    """The peak resident memory of one run of ``argv``, in MB (its own process, so the
    children's running maximum of this one does not hide it)."""
    probe = (
        "import resource, subprocess, sys; subprocess.run(sys.argv[1:], check=True, "
        "stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL); "
        "print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss // 1024)"
    )
    out = subprocess.run([PY, "-c", probe, *argv], env=env, capture_output=True, check=True)
    return int(out.stdout)


def pair(
    a: Sequence[str], b: Sequence[str], env: dict[str, str], runs: int
) -> tuple[float, float, float]:
    """Medians of A, of B, and of A/B pair by pair, after one warm-up pair."""
    _run(a, env), _run(b, env)
    rows = []
    for _ in range(runs):
        ta = _run(a, env)
        tb = _run(b, env)
        rows.append((ta, tb, ta / tb))
    return tuple(statistics.median(r[i] for r in rows) for i in range(3))  # type: ignore[return-value]


def _demo_home(env: dict[str, str]) -> str:
    home = tempfile.mkdtemp(prefix="memoir-cli-bench-")
    subprocess.run(
        [*MEMOIR, "demo", "--home", home], env=env, check=True, stdout=subprocess.DEVNULL
    )
    return home


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--home", help="a home made by `memoir demo --home DIR`")
    parser.add_argument("--runs", type=int, default=9, help="counted pairs per row")
    args = parser.parse_args(argv)
    env = {k: v for k, v in os.environ.items() if not k.startswith("MEMOIR_")}
    env["COLUMNS"] = "100"
    home = args.home or _demo_home(env)
    env["MEMOIR_HOME"] = home
    bare, typer_floor = [PY, "-c", "pass"], [PY, "-c", "import typer"]
    search = [*MEMOIR, "search", "flaky coupon timezone"]
    rows = [
        ("memoir --version", [*MEMOIR, "--version"], "python -c pass", bare, env, 3.0),
        ("memoir --help", [*MEMOIR, "--help"], "python -c 'import typer'", typer_floor, env, 1.5),
        (
            "memoir search (MEMOIR_EMBEDDER=none)",
            search,
            "python -c 'import typer'",
            typer_floor,
            {**env, "MEMOIR_EMBEDDER": "none"},
            3.0,
        ),
        (
            "memoir search --mode text (embedder auto)",
            [*search, "--mode", "text"],
            "python -c 'import typer'",
            typer_floor,
            env,
            3.0,
        ),
        (
            "memoir search (embedder auto: loads the model)",
            search,
            "python -c 'import typer'",
            typer_floor,
            env,
            None,
        ),
    ]
    print(f"python {sys.version.split()[0]} · {args.runs} pairs a row · home {home}")
    print(f"{'command':50} {'median':>8} {'floor':>26} {'median':>8} {'A/B':>6} {'target':>7}")
    for name, a, floor_name, b, row_env, target in rows:
        ta, tb, ratio = pair(a, b, row_env, args.runs)
        print(
            f"{name:50} {ta * 1000:6.0f}ms {floor_name:>26} {tb * 1000:6.0f}ms "
            f"{ratio:5.2f}× {'≤' + format(target, '.1f') + '×' if target else '-':>7}"
        )
    for name, a, _, _, row_env, _ in rows[2:]:
        print(f"peak memory, {name}: {_peak_mb(a, row_env)} MB")
    print(f"load average: {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
