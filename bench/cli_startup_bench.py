"""How long the `memoir` command takes to start, against the interpreter's own floors
measured in the same run (issue 39, point 1).

    PYTHONPATH=src .venv/bin/python bench/cli_startup_bench.py [--home DIR] [--runs N]
        [--before-ref REF]

Each row times two whole processes in turn, pair by pair (A B A B …, after one warm-up
pair), with the same interpreter, and prints the median of each and the median of the
per-pair ratios A/B, so a machine whose speed drifts during the run still compares like
with like. ``--before-ref REF`` adds a third arm to each row: the same command from
``git archive REF src`` (today's ``main``, say), timed in the same rounds (before, floor,
after, floor, …), its ratio to the same floor printed beside. Each ``src`` is compiled to
bytecode first, as an install does (``PYTHONDONTWRITEBYTECODE`` would otherwise have every
run compile every module). The rows and their targets:

- ``memoir --version`` against ``python -c pass``: ≤ 3×;
- ``memoir --help`` against ``python -c 'import typer'`` (the CLI framework's own cost): ≤ 1.5×;
- ``memoir search`` on the demo home, no embedder, against the same typer floor: ≤ 3×,
  its output read through a pipe with no COLUMNS (a program calling it); the same with
  ``COLUMNS=100`` (output wrapped by rich) for scale;
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
from pathlib import Path

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


def triple(
    a: Sequence[str], b: Sequence[str], env: dict[str, str], before_env: dict[str, str], runs: int
) -> tuple[float, float, float, float, float]:
    """:func:`pair` with a third arm, A run with ``before_env``, in the same rounds
    (before, B, A, B): medians of A, of B, of A/B, of A-before, of A-before/B."""
    _run(a, before_env), _run(b, env), _run(a, env)
    rows = []
    for _ in range(runs):
        t_before = _run(a, before_env)
        tb1 = _run(b, env)
        ta = _run(a, env)
        tb2 = _run(b, env)
        rows.append((ta, tb2, ta / tb2, t_before, t_before / tb1))
    return tuple(statistics.median(r[i] for r in rows) for i in range(5))  # type: ignore[return-value]


def _src_of_memoir(env: dict[str, str]) -> Path:
    """The folder the ``memoir`` package is imported from with ``env``."""
    code = "import memoir, pathlib; print(pathlib.Path(memoir.__file__).parents[1])"
    out = subprocess.run([PY, "-c", code], env=env, capture_output=True, text=True, check=True)
    return Path(out.stdout.strip())


def _compiled(src: Path) -> None:
    subprocess.run([PY, "-m", "compileall", "-q", str(src)], check=True, stdout=subprocess.DEVNULL)


def _archive(ref: str) -> Path:
    """``git archive REF src`` unpacked in a temp folder: its ``src``."""
    root = Path(__file__).resolve().parents[1]
    into = Path(tempfile.mkdtemp(prefix="memoir-cli-before-"))
    tar = subprocess.run(
        ["git", "-C", str(root), "archive", ref, "src"], capture_output=True, check=True
    )
    subprocess.run(["tar", "-x", "-C", str(into)], input=tar.stdout, check=True)
    return into / "src"


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
    parser.add_argument("--before-ref", help="also time this git ref's src (e.g. main)")
    args = parser.parse_args(argv)
    env = {k: v for k, v in os.environ.items() if not k.startswith("MEMOIR_")}
    env["COLUMNS"] = "100"
    _compiled(_src_of_memoir(env))
    before_src = _archive(args.before_ref) if args.before_ref else None
    if before_src is not None:
        _compiled(before_src)
    home = args.home or _demo_home(env)
    env["MEMOIR_HOME"] = home
    piped = {k: v for k, v in env.items() if k != "COLUMNS"}  # a program reading a pipe
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
            {**piped, "MEMOIR_EMBEDDER": "none"},
            3.0,
        ),
        (
            "memoir search (the same, COLUMNS=100)",
            search,
            "python -c 'import typer'",
            typer_floor,
            {**env, "MEMOIR_EMBEDDER": "none"},
            None,
        ),
        (
            "memoir search --mode text (embedder auto)",
            [*search, "--mode", "text"],
            "python -c 'import typer'",
            typer_floor,
            piped,
            3.0,
        ),
        (
            "memoir search (embedder auto: loads the model)",
            search,
            "python -c 'import typer'",
            typer_floor,
            piped,
            None,
        ),
    ]
    print(f"python {sys.version.split()[0]} · {args.runs} pairs a row · home {home}")
    if before_src is not None:
        print(f"before: {args.before_ref} ({before_src})")
    print(
        f"{'command':50} {'median':>8} {'floor':>26} {'median':>8} {'A/B':>6} {'target':>7}"
        + (f" {'before':>8} {'A/B':>6}" if before_src else "")
    )
    for name, a, floor_name, b, row_env, target in rows:
        extra = ""
        if before_src is None:
            ta, tb, ratio = pair(a, b, row_env, args.runs)
        else:
            before_env = {**row_env, "PYTHONPATH": str(before_src)}
            ta, tb, ratio, t_before, r_before = triple(a, b, row_env, before_env, args.runs)
            extra = f" {t_before * 1000:6.0f}ms {r_before:5.2f}×"
        print(
            f"{name:50} {ta * 1000:6.0f}ms {floor_name:>26} {tb * 1000:6.0f}ms "
            f"{ratio:5.2f}× {'≤' + format(target, '.1f') + '×' if target else '-':>7}{extra}"
        )
    for name, a, _, _, row_env, _ in rows[2:]:
        print(f"peak memory, {name}: {_peak_mb(a, row_env)} MB")
    print(f"load average: {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
