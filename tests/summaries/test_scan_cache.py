"""The archive scan: every transcript stat-ed, summary files re-read only when needed."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

import memoir.summaries.files as files_mod
from memoir.summaries.files import FULL_RESCAN_MS, FileSummaryStore, ScanCache
from memoir.summaries.state import SummaryKind, SummaryState

from .helpers import PROJECT, append

OLD_NS = 1_700_000_000 * 10**9


def _layout(tmp_path: Path) -> tuple[FileSummaryStore, Path]:
    folder = tmp_path / "archive" / PROJECT
    folder.mkdir(parents=True)
    for sid, summary in (
        ("done", '__COVERAGE__ {"bytes":4,"schema":1}\nDone.'),
        ("empty", ""),
        ("failing", '__ERRORED__\n{"attempts":1,"lastAttempt":5}\nboom\n'),
        ("new", None),
    ):
        (folder / f"{sid}.jsonl").write_bytes(b"abcd")
        if summary is not None:
            (folder / f"{sid}-summary.txt").write_text(summary)
    os.utime(folder, ns=(OLD_NS, OLD_NS))  # not "hot": the cache may trust it
    return FileSummaryStore(tmp_path / "archive", None, cache_path=tmp_path / "cache.json"), folder


@pytest.fixture
def reads(monkeypatch: pytest.MonkeyPatch) -> list[Path]:
    seen: list[Path] = []
    real = files_mod._read_state

    def counting(path: Path, *, head_only: bool) -> SummaryState:
        seen.append(path)
        return real(path, head_only=head_only)

    monkeypatch.setattr(files_mod, "_read_state", counting)
    return seen


def test_unchanged_folder_reads_no_summary_file(tmp_path, reads) -> None:
    summaries, _ = _layout(tmp_path)
    first = sorted(c.session_id for c in summaries.scan())
    assert first == ["failing", "new"]  # done and empty are settled
    assert len(reads) == 3
    reads.clear()
    assert sorted(c.session_id for c in summaries.scan()) == ["failing", "new"]
    assert reads == []


def test_in_place_growth_is_seen_without_a_folder_change(tmp_path, reads) -> None:
    summaries, folder = _layout(tmp_path)
    summaries.scan()
    append(folder / "done.jsonl", b"more")
    append(folder / "empty.jsonl", b"more")  # an empty file is a skip forever
    os.utime(folder, ns=(OLD_NS, OLD_NS))
    reads.clear()
    grown = {c.session_id: c for c in summaries.scan()}
    assert sorted(grown) == ["done", "failing", "new"]
    assert grown["done"].current == 8 and grown["done"].state.coverage.amount == 4
    assert reads == []


def test_a_folder_change_rereads_it(tmp_path, reads) -> None:
    summaries, folder = _layout(tmp_path)
    summaries.scan()
    (folder / "new-summary.txt").write_text('__COVERAGE__ {"bytes":4,"schema":1}\nNew.')
    reads.clear()
    assert [c.session_id for c in summaries.scan()] == ["failing"]
    assert reads  # the folder was listed and read again


def test_hot_folder_is_never_trusted(tmp_path, reads) -> None:
    summaries, folder = _layout(tmp_path)
    os.utime(folder)  # modified just now
    summaries.scan()
    reads.clear()
    summaries.scan()
    assert len(reads) == 3


def test_old_or_corrupt_cache_means_a_full_read(tmp_path, reads) -> None:
    summaries, _ = _layout(tmp_path)
    summaries.scan()
    cache = ScanCache.load(tmp_path / "cache.json")
    assert cache is not None and PROJECT in cache.dirs
    cache.full_at_ms -= FULL_RESCAN_MS + 1
    cache.save(tmp_path / "cache.json")
    reads.clear()
    summaries.scan()
    assert len(reads) == 3
    (tmp_path / "cache.json").write_text("{nonsense")
    reads.clear()
    summaries.scan()
    assert len(reads) == 3


def test_full_scan_lists_everything(tmp_path) -> None:
    summaries, _ = _layout(tmp_path)
    summaries.scan()
    every = {c.session_id: c.state.kind for c in summaries.scan(full=True)}
    assert every == {
        "done": SummaryKind.REAL,
        "empty": SummaryKind.EMPTY,
        "failing": SummaryKind.ERRORED,
        "new": SummaryKind.MISSING,
    }


def test_removed_folder_and_removed_transcript(tmp_path) -> None:
    summaries, folder = _layout(tmp_path)
    summaries.scan()
    (folder / "new.jsonl").unlink()
    assert [c.session_id for c in summaries.scan()] == ["failing"]
    for child in folder.iterdir():
        child.unlink()
    folder.rmdir()
    assert summaries.scan() == []
    assert ScanCache.load(tmp_path / "cache.json").dirs == {}


def test_trusting_folder_mtimes_skips_settled_stats(tmp_path, reads) -> None:
    summaries, folder = _layout(tmp_path)
    summaries.trust_folder_mtime = True
    summaries.scan()
    append(folder / "done.jsonl", b"more")
    os.utime(folder, ns=(OLD_NS, OLD_NS))
    assert sorted(c.session_id for c in summaries.scan()) == ["failing", "new"]  # not seen
    os.utime(folder, ns=(OLD_NS + 10**9, OLD_NS + 10**9))  # the writer's bump
    assert sorted(c.session_id for c in summaries.scan()) == ["done", "failing", "new"]
