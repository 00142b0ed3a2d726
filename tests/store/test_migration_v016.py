"""Migration v16: stored events without a time get the nearest known one, marked inferred,
with their exchanges, sessions and index rows following — on both backends, from a
database at v15 with rows in it."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from store_builders import T0, apply_before_v16, batch, conversation, session, source

from conftest import fresh_pg_schema
from memoir.model import Harness, Session, build_exchanges
from memoir.store import SearchFilters, Store
from memoir.store.migrations import CURRENT_VERSION

Opener = Callable[[int | None], Store]
MTIME = datetime(2024, 6, 2, 10, 0, tzinfo=UTC)
FED = datetime(2024, 7, 3, 11, 0, tzinfo=UTC)  # the API session's last write
TIMED = conversation("timed", [("dated", "yes", None)])


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def opener(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Opener]:
    opened: list[Store] = []
    if request.param == "sqlite":
        from memoir.store.sqlite_store import SQLiteStore

        def open_sqlite(target: int | None) -> Store:
            opened.append(SQLiteStore(tmp_path / "old.db", target_version=target))
            return opened[-1]

        yield open_sqlite
    else:
        from memoir.store.postgres_store import PostgresStore

        with fresh_pg_schema() as url:

            def open_pg(target: int | None) -> Store:
                opened.append(PostgresStore(url, target_version=target))
                return opened[-1]

            try:
                yield open_pg
            finally:
                for s in opened:
                    s.close()
            return
    for s in opened:
        s.close()


def _fill_v15(store: Store) -> None:
    assert store.schema_version() == 15
    # "part": a synced transcript, times on its second exchange only
    part = conversation(
        "part", [("untimed opening about kestrels", "reply", None), ("timed one", "ok", None)]
    )
    part = [e if e.ordinal >= 3 else replace(e, timestamp=None) for e in part]
    apply_before_v16(store, batch(session("part"), part, source=source("part")))
    # "chat": a synced JSON chat with no time at all; its source saw the file at MTIME
    chat = [
        replace(e, timestamp=None)
        for e in conversation("chat", [("marmalade with seville oranges", "yes", None)])
    ]
    undated = replace(session("chat"), created_at=None, updated_at=None)
    src = replace(source("chat"), mtime_ns=int(MTIME.timestamp() * 1e9))
    apply_before_v16(store, batch(undated, chat, source=src))
    # "fed": appended over the API without times: no source, its last write at FED
    fed = [replace(e, timestamp=None) for e in conversation("fed", [("quokka census", None, None)])]
    api = Session(id="fed", project="api", harness=Harness.API, created_at=T0, updated_at=FED)
    apply_before_v16(store, batch(api, fed))
    # "timed": every event has its time: nothing changes
    apply_before_v16(store, batch(session("timed"), TIMED))


def _dates(store: Store, words: str, after: datetime, before: datetime) -> list[str]:
    hits = store.index.search(words, SearchFilters(after=after, before=before), 10)
    return [h.exchange_id for h in hits]


def test_v16_dates_every_stored_event(opener: Opener) -> None:
    old = opener(15)
    _fill_v15(old)
    old.close()
    store = opener(None)
    assert store.schema_version() == CURRENT_VERSION

    part = store.events.of("part")
    second = part[2].timestamp  # the first event with a time of its own
    assert second is not None and not part[2].time_inferred
    # the first exchange's events had none before them: the next known one
    assert [(e.timestamp, e.time_inferred) for e in part[:2]] == [(second, True)] * 2
    opening = store.exchanges.of("part")[0]
    assert (opening.started_at, opening.ended_at) == (second, second)

    chat = store.events.of("chat")
    assert {(e.timestamp, e.time_inferred) for e in chat} == {(MTIME, True)}
    (x,) = store.exchanges.of("chat")
    assert (x.started_at, x.ended_at) == (MTIME, MTIME)
    got = store.sessions.get("chat")
    assert got is not None and (got.created_at, got.updated_at) == (MTIME, MTIME)

    fed = store.events.of("fed")
    assert [(e.timestamp, e.time_inferred) for e in fed] == [(FED, True)]

    assert store.events.of("timed") == TIMED

    # date filters now find them, around those times only (the index rows were rewritten)
    day = timedelta(days=1)
    assert _dates(store, "marmalade", MTIME - day, MTIME + day) == ["chat:1"]
    assert _dates(store, "marmalade", MTIME + day, MTIME + 2 * day) == []
    assert _dates(store, "kestrels", second - day, second + day) == ["part:1"]
    assert _dates(store, "quokka", FED - day, FED + day) == ["fed:1"]
    # "recent": the undated chat has its time, in its place
    recent = [(i.session.id, i.last_at) for i in store.sessions.recent()]
    assert recent[:2] == [("fed", FED), ("chat", MTIME)]
    assert store.integrity_problems() == []


def test_v16_on_a_database_where_every_event_has_a_time_only_adds_the_column(
    opener: Opener,
) -> None:
    old = opener(15)
    apply_before_v16(old, batch(session("timed"), TIMED))
    old.close()
    store = opener(None)
    assert store.events.of("timed") == TIMED
    assert store.exchanges.of("timed") == build_exchanges(TIMED)
    assert store.sessions.get("timed") == session("timed")
