"""Secret detector throughput (issue 41, point 1): MB/s of :func:`memoir.secrets.find_secrets`
over the texts of the demo corpus and LoCoMo dev, one call per message as masking and the
model boundary make them.

Run it once per tree in the same session, so both figures come from the same machine load:

    PYTHONPATH=/work/main/src .venv/bin/python bench/detector_bench.py --label before
    PYTHONPATH=src .venv/bin/python bench/detector_bench.py --label after

``--long-line`` times one text instead: the demo strings and a quarter of Memoir's source
(quoted strings, keys, ids) joined into a single line of half a megabyte (a pasted minified
file, a log without newlines), once.
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from memoir.secrets import find_secrets

ROOT = Path(__file__).resolve().parents[1]
DEMO = ROOT / "src" / "memoir" / "demo" / "corpus"
LOCOMO = Path("/work/shared/bench/locomo")


def _strings(value: Any) -> Iterator[str]:
    if isinstance(value, str):
        yield value
    elif isinstance(value, list):
        for v in value:
            yield from _strings(v)
    elif isinstance(value, dict):
        for v in value.values():
            yield from _strings(v)


def demo_texts(folder: Path = DEMO) -> list[str]:
    """Every string of every JSON line of the demo transcripts: messages, tool calls and
    tool output, as sync reads them."""
    out: list[str] = []
    for path in sorted(p for p in folder.rglob("*") if p.is_file()):
        for line in path.read_text(encoding="utf-8", errors="replace").splitlines():
            try:
                out.extend(s for s in _strings(json.loads(line)) if s.strip())
            except ValueError:
                if line.strip():
                    out.append(line)
    return out


def locomo_texts(folder: Path = LOCOMO) -> list[str]:
    """Every turn's text of the LoCoMo dev conversations."""
    out: list[str] = []
    for path in sorted(folder.glob("*.json")):
        conv = json.loads(path.read_text(encoding="utf-8"))
        conv = conv.get("conversation", conv)
        for key, turns in conv.items():
            if key.startswith("session_") and isinstance(turns, list):
                out.extend(t["text"] for t in turns if isinstance(t, dict) and t.get("text"))
    return out


def mb_per_s(texts: list[str], runs: int) -> tuple[float, float]:
    size = sum(len(t.encode()) for t in texts) / 1e6
    times = []
    for _ in range(runs):
        t0 = time.perf_counter()
        for t in texts:
            find_secrets(t)
        times.append(time.perf_counter() - t0)
    return size, size / statistics.median(times)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--label", default="")
    ap.add_argument("--long-line", action="store_true", help="one line of ~0.5 MB, once")
    args = ap.parse_args()
    find_secrets("warm up: AKIAIOSFODNN7EXAMPLE")
    if args.long_line:
        code = [f.read_text() for f in sorted((ROOT / "src" / "memoir").rglob("*.py"))[::4]]
        one = " ".join(t.replace("\n", " ") for t in [*demo_texts(), *code])
        line = " ".join([one] * (500_000 // len(one) + 1))[:500_000]
        t0 = time.perf_counter()
        found = find_secrets(line)
        took = time.perf_counter() - t0
        size = len(line.encode()) / 1e6
        print(f"{args.label}	one line	{size:.2f} MB	{took:.2f} s	{len(found)} found")
        return
    for name, texts in (("demo corpus", demo_texts()), ("LoCoMo dev", locomo_texts())):
        size, rate = mb_per_s(texts, args.runs)
        print(f"{args.label}\t{name}\t{len(texts)} texts\t{size:.2f} MB\t{rate:.2f} MB/s")


if __name__ == "__main__":
    main()
