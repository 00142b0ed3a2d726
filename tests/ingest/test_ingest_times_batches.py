"""Inferred times do not depend on how a transcript is cut into batches (issue 34, point
7): an untimed event at a batch's start takes the last known time of an earlier batch,
untimed events before the first known time take it even when it lies batches ahead, and
the last events take the previous one. Real stores: SQLite, and PostgreSQL when the test
cluster is configured."""

from __future__ import annotations

import os
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from memoir.config import Settings
from memoir.demo import ClaudeWriter
from memoir.ingest import batches as batches_module
from memoir.ingest import plan as times_module
from memoir.ingest import sync as sync_module
from memoir.store import Store

SID = "eeeeeeee-3333-4444-8555-666666666666"
FIRST = datetime(2025, 4, 1, 7, 0, tzinfo=UTC)
MTIME = datetime(2025, 4, 30, 23, 0, tzinfo=UTC)
TINY_BATCH = 300  # less than one record of the transcript below: a record a batch


class _Quiet:
    def rewritten(self, session_id: str) -> None:
        pass

    def removed(self, session_id: str, project: str) -> None:
        pass


@pytest.fixture
def twin(store: Store, tmp_path: Path) -> Iterator[Store]:
    from conftest import fresh_store

    with fresh_store(store.backend, tmp_path / "baseline.db") as other:
        yield other


def _transcript(path: Path) -> list[datetime | None]:
    """Twelve records: five untimed, then timed and untimed ones alternating in runs, and
    three untimed at the end. Returns each record's own time (None: left out)."""
    w = ClaudeWriter(SID, cwd="/home/ann/ops")
    own: list[datetime | None] = []
    for n in range(12):
        (w.user if n % 2 == 0 else w.assistant)(f"message {n} " + "pad " * 60)
        at = FIRST + timedelta(minutes=n) if n in (5, 6, 8) else None
        w.records[-1].pop("timestamp")
        if at is not None:
            w.records[-1]["timestamp"] = at.isoformat()
        own.append(at)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(w.bytes())
    os.utime(path, (MTIME.timestamp(), MTIME.timestamp()))
    return own


def _sync(tmp_path: Path, name: str, store: Store, src: Path) -> None:
    settings = Settings.from_env({"MEMOIR_HOME": str(tmp_path / name)}, sources=(src,))
    report = sync_module.sync(settings, store, observer=_Quiet())
    assert report.errors == [] and report.files_indexed == 1


def test_times_inferred_in_tiny_batches_are_those_of_one_read(
    store: Store, twin: Store, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    src = tmp_path / "src"
    own = _transcript(src / "-home-ann-ops" / f"{SID}.jsonl")
    monkeypatch.setattr(batches_module, "BATCH_BYTES", 1 << 40)
    _sync(tmp_path, "one", twin, src)

    looks: list[int] = []
    real_look = times_module.TimeAhead._look

    def counted(self: times_module.TimeAhead, after: Any) -> datetime | None:
        looks.append(after.offset)
        return real_look(self, after)

    monkeypatch.setattr(times_module.TimeAhead, "_look", counted)
    monkeypatch.setattr(batches_module, "BATCH_BYTES", TINY_BATCH)
    batches = 0
    real_apply = store.ingest.apply

    def apply(batch: Any) -> None:
        nonlocal batches
        batches += 1
        real_apply(batch)

    monkeypatch.setattr(store.ingest, "apply", apply)
    _sync(tmp_path, "many", store, src)
    assert batches >= 12, "the file was not read a record a batch"
    assert len(looks) == 1  # the first batch looked ahead once; the others kept the answer

    events = store.events.of(SID)
    five, six, eight = (FIRST + timedelta(minutes=n) for n in (5, 6, 8))
    expected = [five] * 6 + [six, six, eight, eight, eight, eight]
    assert [e.timestamp for e in events] == expected
    assert [e.time_inferred for e in events] == [t is None for t in own]
    assert events == twin.events.of(SID)
    assert store.exchanges.of(SID) == twin.exchanges.of(SID)
    assert store.sessions.get(SID) == twin.sessions.get(SID)
    key = str(src / "-home-ann-ops" / f"{SID}.jsonl")
    state, baseline = store.ingest.source(key), twin.ingest.source(key)
    assert state is not None and baseline is not None
    assert state.parser_state["known_at"] == baseline.parser_state["known_at"] == eight.isoformat()


def test_a_transcript_with_no_time_in_any_batch_takes_its_mtime(
    store: Store, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    src = tmp_path / "src"
    path = src / "-home-ann-ops" / f"{SID}.jsonl"
    w = ClaudeWriter(SID, cwd="/home/ann/ops")
    for n in range(6):
        (w.user if n % 2 == 0 else w.assistant)(f"untimed {n} " + "pad " * 60)
        w.records[-1].pop("timestamp")
    path.parent.mkdir(parents=True)
    path.write_bytes(w.bytes())
    os.utime(path, (MTIME.timestamp(), MTIME.timestamp()))
    monkeypatch.setattr(batches_module, "BATCH_BYTES", TINY_BATCH)
    _sync(tmp_path, "home", store, src)
    events = store.events.of(SID)
    assert len(events) == 6
    assert {(e.timestamp, e.time_inferred) for e in events} == {(MTIME, True)}
    assert [(x.started_at, x.ended_at) for x in store.exchanges.of(SID)] == [(MTIME, MTIME)] * 3
