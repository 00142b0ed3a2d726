"""Summary coverage scan benchmark: the per-sync scan with nothing to do.

Builds an archive of ``--conversations`` archived transcripts (sparse files made with
truncate: real sizes, multi-GB in all, no disk used) across ``--projects`` folders, each
with a current summary (``__COVERAGE__`` header covering the whole transcript), then times:

* ``baseline``: a bare loop that stats every transcript (the floor of any correct scan:
  in-place appends must be noticed, so every transcript is stat-ed);
* ``cold``: the first scan (lists every folder, reads every summary file's head);
* ``pass``: the whole summary pass of a sync with nothing to do (warm scan cache,
  decisions, no model), which is what a SessionStart sync pays. Target < 25 ms. Measured
  twice: stat-ing every settled transcript (needed while the archive writer appends in
  place without touching the folder) and trusting folder mtimes (when the writer bumps
  them, ``memoir.ingest.archive.BUMPS_FOLDER_MTIME``).

Reports medians over ``--runs``::

    .venv/bin/python bench/summary_scan_bench.py [--conversations 10000] [--projects 100]
        [--runs 15] [--json]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import tempfile
import time
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from memoir.config import Settings
from memoir.llm import OfflineModel
from memoir.summaries.files import FileSummaryStore
from memoir.summaries.session import ModelSource
from memoir.summaries.summary_pass import PassSettings, run_summary_pass

__all__: list[str] = []

TARGET_MS = 25.0
OLD_NS = 1_700_000_000 * 10**9


@dataclass
class _WritableStore:
    """All a pass with nothing to do asks of the store: whether it may write."""

    read_only: bool = False


def build(root: Path, conversations: int, projects: int) -> int:
    total = 0
    archive = root / "archive"
    for i in range(conversations):
        folder = archive / f"-Users-bench-project-{i % projects:03d}"
        folder.mkdir(parents=True, exist_ok=True)
        size = 50_000 + (i * 7919) % 400_000  # 50–450 KB, ~2.5 GB for 10,000
        sid = f"{i:08d}-0000-4000-8000-000000000000"
        with open(folder / f"{sid}.jsonl", "wb") as handle:
            handle.truncate(size)
        header = json.dumps(
            {"bytes": size, "lastExchange": "2025-09-19T17:36:33.487Z", "schema": 1},
            separators=(",", ":"),
        )
        (folder / f"{sid}-summary.txt").write_text(f"__COVERAGE__ {header}\nA summary.\n")
        total += size
    for folder in archive.iterdir():
        os.utime(folder, ns=(OLD_NS, OLD_NS))  # settled folders, as after any earlier sync
    return total


def baseline(archive: Path) -> int:
    count = 0
    for entry in os.scandir(archive):
        for name in os.listdir(entry.path):
            if name.endswith(".jsonl"):
                os.stat(os.path.join(entry.path, name))
                count += 1
    return count


def median_ms(fn: Any, runs: int) -> float:
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        fn()
        times.append((time.perf_counter() - start) * 1000)
    return statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--conversations", type=int, default=10_000)
    parser.add_argument("--projects", type=int, default=100)
    parser.add_argument("--runs", type=int, default=15)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="memoir-scan-bench-") as tmp:
        root = Path(tmp)
        total = build(root, args.conversations, args.projects)
        settings = Settings.from_env({"MEMOIR_HOME": str(root)}, sources=())
        cache = root / "cache" / "summary-scan.json"
        store = FileSummaryStore(settings.archive_dir, None, cache_path=cache)
        pass_settings = PassSettings.from_settings(settings)
        models = ModelSource.of(OfflineModel())  # never asked: nothing is due

        def cold() -> None:
            cache.unlink(missing_ok=True)
            assert store.scan() == []

        def sync_pass() -> None:
            report = run_summary_pass(
                _WritableStore(),  # type: ignore[arg-type]
                store,
                pass_settings,
                models,
                limit=10,
            )
            assert report.summarized == report.model_calls == 0

        base = median_ms(lambda: baseline(settings.archive_dir), args.runs)
        cold_ms = median_ms(cold, max(3, args.runs // 3))
        store.scan()  # warm the cache once
        pass_ms = median_ms(sync_pass, args.runs)
        store.trust_folder_mtime = True
        trusted_ms = median_ms(sync_pass, args.runs)
    result = {
        "conversations": args.conversations,
        "projects": args.projects,
        "archive_gb": round(total / 1e9, 2),
        "baseline_stat_loop_ms": round(base, 2),
        "cold_scan_ms": round(cold_ms, 2),
        "sync_pass_nothing_to_do_ms": round(pass_ms, 2),
        "pass_vs_baseline": round(pass_ms / base, 2),
        "sync_pass_trusting_folder_mtime_ms": round(trusted_ms, 2),
        "target_ms": TARGET_MS,
        "machine": f"{platform.machine()} {os.cpu_count()} cpu, Python {platform.python_version()}",
        "date": datetime.now(UTC).strftime("%Y-%m-%d"),
    }
    if args.json:
        print(json.dumps(result, indent=2))
        return
    for key, value in result.items():
        print(f"{key:>30}: {value}")


if __name__ == "__main__":
    main()
