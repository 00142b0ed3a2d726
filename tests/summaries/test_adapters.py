"""Both adapters keep every state and feed the same decision table the same answers."""

from __future__ import annotations

from pathlib import Path

import pytest

from memoir.model import Author, Event, EventKind, Harness, Session
from memoir.summaries.files import FileSummaryStore
from memoir.summaries.port import Conversation, DatabaseSummaryStore, SummaryStore
from memoir.summaries.state import SummaryKind, SummaryState, decide

from .helpers import PROJECT, FakeStore
from .test_policy import NOW, POLICY, TABLE


def _files(tmp_path: Path, current: int) -> tuple[SummaryStore, Conversation]:
    folder = tmp_path / "archive" / PROJECT
    folder.mkdir(parents=True)
    path = folder / "s1.jsonl"
    with open(path, "wb") as handle:
        handle.truncate(current)  # sparse: the size is what matters
    adapter = FileSummaryStore(tmp_path / "archive", None)
    return adapter, Conversation("s1", PROJECT, current, SummaryState.missing(), path)


def _database(tmp_path: Path, current: int) -> tuple[SummaryStore, Conversation]:
    store = FakeStore()
    store.session_rows["s1"] = Session("s1", PROJECT, Harness.API)
    store.event_log["s1"] = [
        Event("s1", i + 1, EventKind.META, Author.SYSTEM, "") for i in range(current)
    ]
    return DatabaseSummaryStore(store), Conversation("s1", PROJECT, current, SummaryState.missing())


ADAPTERS = {"files": _files, "database": _database}
ROWS = [
    pytest.param(adapter, *row[1:], id=f"{adapter}-{row[0]}")
    for adapter in ADAPTERS
    for row in TABLE
    if not (adapter == "database" and row[1].kind is SummaryKind.LEGACY)  # a file-only form
]


@pytest.mark.parametrize(("adapter", "state", "current", "expected"), ROWS)
def test_same_table_through_each_adapter(tmp_path, adapter, state, current, expected) -> None:
    current = min(current, 5000)  # keep the event list of the database case small
    summaries, conv = ADAPTERS[adapter](tmp_path, current)
    if state.kind is not SummaryKind.MISSING:
        summaries.write(conv, state)
    scanned = {c.session_id: c for c in summaries.scan(full=True)}["s1"]
    refreshed = summaries.refresh(conv)
    assert scanned.current == refreshed.current == current
    for seen in (scanned, refreshed):
        assert decide(seen.state, seen.current, POLICY, NOW) is expected
    assert refreshed.state.kind is state.kind
    assert refreshed.state.failure == state.failure
    assert refreshed.state.body == state.body


@pytest.mark.parametrize("adapter", list(ADAPTERS))
def test_find(tmp_path, adapter) -> None:
    summaries, _ = ADAPTERS[adapter](tmp_path, 3)
    found = summaries.find("s1")
    assert found is not None and found.current == 3
    assert summaries.find("nope") is None


def test_file_writes_are_atomic_and_leave_no_temp_files(tmp_path) -> None:
    summaries, conv = _files(tmp_path, 10)
    summaries.write(conv, SummaryState.real("Body", 10))
    summaries.write(conv, SummaryState.real("Body 2", 10))
    names = sorted(p.name for p in (tmp_path / "archive" / PROJECT).iterdir())
    assert names == ["s1-summary.txt", "s1.jsonl"]
    assert summaries.refresh(conv).state.body == "Body 2"


DB_ROWS = [
    pytest.param(*row[1:], id=row[0]) for row in TABLE if row[1].kind is not SummaryKind.LEGACY
]


@pytest.mark.parametrize(("state", "current", "expected"), DB_ROWS)
def test_same_table_on_the_real_stores(store, state, current, expected) -> None:
    """The database adapter over the real SQLite and PostgreSQL stores."""
    from memoir.store.values import IngestBatch

    current = min(current, 300)
    session = Session("s1", PROJECT, Harness.API)
    events = tuple(
        Event("s1", i + 1, EventKind.USER_TEXT, Author.USER, f"m{i}") for i in range(current)
    )
    store.ingest.apply(IngestBatch(session, events=events))
    summaries = DatabaseSummaryStore(store)
    conv = Conversation("s1", PROJECT, current, SummaryState.missing())
    if state.kind is not SummaryKind.MISSING:
        summaries.write(conv, state)
    (scanned,) = summaries.scan()
    assert scanned.current == current
    assert decide(scanned.state, scanned.current, POLICY, NOW) is expected
    assert summaries.refresh(conv).state == state


@pytest.mark.parametrize("sid", ["../s1", "a/b", "", ".hidden", "x\\y"])
def test_file_adapter_never_leaves_the_archive(tmp_path, sid) -> None:
    summaries, _ = _files(tmp_path, 3)
    assert summaries.find(sid) is None
