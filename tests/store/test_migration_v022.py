"""Migration v22: every full-text index row names its owner — on both backends, from a
database at v21 with two users' sessions, exchanges, index rows and memory items in it.
After it, each user's search and recall find their own rows (through the owner in the
index), the rows are all there, and nothing else changed."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path

import pytest
from store_builders import batch, conversation, session

from conftest import fresh_pg_schema
from memoir.memory.item_store import memory_parts
from memoir.model import build_exchanges
from memoir.store import SearchFilters, Store
from memoir.store.codec import dumps, event_params, exchange_params, session_params
from memoir.store.index_doc import owner_token, owner_tsquery
from memoir.store.migrations import CURRENT_VERSION
from memoir.store.migrations.v007_v013 import fts_body
from memoir.store.search_text import parse_query
from memoir.store.values import ItemFilter

Opener = Callable[[int | None], Store]
T0 = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)
SAID = {
    "alice": [
        ("kestrel nesting on the tower", "noted the kestrel", None),
        ("the kestrel eggs hatched", "ok", None),
    ],
    "bob": [("kestrel migration south", "noted", None)],
}
ITEMS = {"alice": "Watches kestrels daily.", "bob": "Counts kestrels yearly."}


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


def _fill_v21(store: Store) -> None:
    """Rows as a v21 Memoir held them: sessions, events, exchanges, the index rows of
    that schema (no owner: the index rebuild writes as many columns as the table has)
    and memory items with their v13 full-text rows."""
    assert store.schema_version() == 21
    sqlite = store.backend == "sqlite"  # type: ignore[attr-defined]
    with store._db.tx() as tx:  # type: ignore[attr-defined]
        for n, (user, turns) in enumerate(SAID.items(), start=1):
            sid = f"{user}-s"
            events = conversation(sid, turns)
            tx.run(
                "INSERT INTO sessions (id, project, harness, user_name, source_path, cwd, "
                "incognito, archived, subagent, memory_disabled, created_at, updated_at) "
                "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                session_params(replace(session(sid), user=user), tx.time),
            )
            tx.many(
                "INSERT INTO events (session_id, ordinal, kind, author, ts, tool_name, call_id, "
                "source_offset, source_line, payload, text, time_inferred) "
                "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                [event_params(e, tx.time) for e in events],
            )
            tx.many(
                "INSERT INTO exchanges (id, session_id, first_ordinal, last_ordinal, "
                "started_at, ended_at, line_start, line_end, tool_names, user_text, "
                "assistant_text, tool_excerpt) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                [exchange_params(x, tx.time) for x in build_exchanges(events)],
            )
            content = ITEMS[user]
            tx.run(
                "INSERT INTO memory_items (id, session_id, project, scope, kind, content, "
                "normalized, keys, temporal, operation_id, created_at, owner, scope_key, "
                "key_sig, valid_from, fts_row) "
                "VALUES (?, ?, 'proj', 'global', 'fact', ?, ?, ?, ?, ?, ?, ?, '', 'kestrel', ?, ?)",
                (
                    f"{user}-i",
                    sid,
                    content,
                    content.casefold(),
                    dumps(["kestrel"]),
                    dumps(None),
                    f"op-{user}",
                    tx.time(T0),
                    user,
                    tx.time(T0),
                    n if sqlite else None,
                ),
            )
            if sqlite:
                tx.run(
                    "INSERT INTO memory_fts (rowid, body) VALUES (?, ?)",
                    (n, fts_body(content, ["kestrel"])),
                )
    store.index.repair()  # the v21 index rows


def _search(store: Store, query: str, user: str | None) -> list[str]:
    return sorted(h.exchange_id for h in store.index.search(query, SearchFilters(user=user), 10))


def _recall(store: Store, query: str, user: str | None) -> list[str]:
    return sorted(
        memory_parts(store).items.rank_text(parse_query(query), ItemFilter(owner=user), 10)
    )


def test_v22_puts_each_rows_owner_in_the_index(opener: Opener) -> None:
    old = opener(21)
    _fill_v21(old)
    assert old.stats()["index_rows"] == 3
    assert _search(old, "kestrel", None) == ["alice-s:1", "alice-s:3", "bob-s:1"]
    old.close()

    store = opener(None)
    assert store.schema_version() == CURRENT_VERSION
    assert store.stats()["index_rows"] == 3
    assert _search(store, "kestrel", None) == ["alice-s:1", "alice-s:3", "bob-s:1"]
    assert _search(store, "kestrel", "alice") == ["alice-s:1", "alice-s:3"]
    assert _search(store, "kestrel", "bob") == ["bob-s:1"]
    assert _search(store, "tower", "bob") == []
    assert _search(store, owner_token("alice"), "alice") == []
    assert _recall(store, "kestrel", None) == ["alice-i", "bob-i"]
    assert _recall(store, "kestrel", "alice") == ["alice-i"]
    assert _recall(store, "yearly", "alice") == []
    db = store._db  # type: ignore[attr-defined]
    if store.backend == "sqlite":  # type: ignore[attr-defined]
        owners = db.rows("SELECT rowid, owner FROM memory_fts ORDER BY rowid")
        assert owners == [(1, owner_token("alice")), (2, owner_token("bob"))]
        marks = db.rows(
            "SELECT count(*) FROM exchange_fts WHERE owner MATCH ?", (owner_token("alice"),)
        )
        assert marks == [(2,)]
    else:
        rows = db.rows(
            "SELECT owner_doc, count(*), bool_and(tsv @@ ?::tsquery) FROM exchange_search "
            "GROUP BY owner_doc ORDER BY owner_doc",
            (owner_tsquery("alice"),),
        )
        assert [tuple(r) for r in rows] == [("alice", 2, True), ("bob", 1, False)]
    # the exchanges, their sessions and the items are as they were
    assert [x.id for x in store.exchanges.of("alice-s")] == ["alice-s:1", "alice-s:3"]
    got = store.sessions.get("bob-s")
    assert got is not None and got.user == "bob"
    assert [i.content for i in memory_parts(store).items.find(owner="bob")] == [ITEMS["bob"]]
    assert store.integrity_problems() == []
    # a write after the migration indexes its owner too
    carol = conversation("carol-s", [("kestrel sighting", None, None)])
    store.ingest.apply(batch(replace(session("carol-s"), user="carol"), carol))
    assert _search(store, "kestrel", "carol") == ["carol-s:1"]
    assert _search(store, "kestrel", "alice") == ["alice-s:1", "alice-s:3"]
