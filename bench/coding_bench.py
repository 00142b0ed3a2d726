"""Known-item search on realistic coding sessions: 64 Claude Code sessions over 5 projects
(prompts, replies, Bash / Read / Edit / Grep calls, tracebacks, pytest output with colours,
diffs), 40 planted items each asked for once — 20 by the exact token a person would paste
(an error string, a function or file name, a flag), 20 paraphrased. Reports, per mode, how
many planted exchanges rank first and in the top 5.

    .venv/bin/python bench/coding_bench.py [--json]

The corpus comes from bench/coding_corpus.py (seeded), synced into a throwaway home and
embedded when the embeddings extra is installed.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path

from memoir import service
from memoir.app import Memoir
from memoir.config import Settings

MODES = ("text", "vector", "hybrid")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    root = Path(tempfile.mkdtemp(prefix="memoir-coding-bench-"))
    corpus = root / "corpus"
    builder = Path(__file__).with_name("coding_corpus.py")
    subprocess.run([sys.executable, str(builder), str(corpus)], check=True, capture_output=True)
    known = json.loads((root / "known.json").read_text(encoding="utf-8"))
    settings = Settings.from_env({"MEMOIR_HOME": str(root / "home")}, sources=(corpus,))
    with Memoir.open(settings) as memoir:
        memoir.sync()
        modes = MODES if service.embedder(memoir) is not None else ("text",)
        if "vector" in modes:
            service.embed_pending(memoir)
        ranks: dict[str, list[tuple[str, int | None]]] = {m: [] for m in modes}
        for item in known:
            target = _target(memoir, item)
            for mode in modes:
                hits = memoir.search(item["query"], mode=mode, limit=20)
                ids = [h.exchange_id for h in hits]
                ranks[mode].append((item["kind"], ids.index(target) + 1 if target in ids else None))
    report = {mode: _counts(rows) for mode, rows in ranks.items()}
    if args.json:
        print(json.dumps(report, indent=2))
        return
    print(f"{len(known)} planted items; rank of the planted exchange (limit 20)")
    for mode, counts in report.items():
        print(
            f"{mode:7} top1 {counts['top1']:2}/{counts['n']}  top5 {counts['top5']:2}/{counts['n']}"
            f"  (exact: top1 {counts['exact_top1']}, top5 {counts['exact_top5']};"
            f" paraphrased: top1 {counts['paraphrase_top1']}, top5 {counts['paraphrase_top5']})"
        )


def _target(memoir: Memoir, item: dict) -> str:
    """The exchange the item was planted in: its session's one with the fingerprint."""
    found = [
        x.id
        for x in memoir.store.exchanges.of(item["session"])
        if item["fingerprint"] in x.user_text
    ]
    if len(found) != 1:
        raise SystemExit(f"{item['id']}: {len(found)} exchanges carry its fingerprint")
    return found[0]


def _counts(rows: list[tuple[str, int | None]]) -> dict[str, int]:
    out = {"n": len(rows)}
    exact = [r for kind, r in rows if kind == "exact"]
    para = [r for kind, r in rows if kind != "exact"]
    for name, subset in (("", [r for _, r in rows]), ("exact_", exact), ("paraphrase_", para)):
        out[name + "top1"] = sum(1 for r in subset if r == 1)
        out[name + "top5"] = sum(1 for r in subset if r is not None and r <= 5)
    return out


if __name__ == "__main__":
    main()
