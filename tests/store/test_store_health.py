"""The shared store suite, part 4: stats, integrity checks and index repair."""

from __future__ import annotations

from typing import Any

from store_builders import ingest

from memoir.store import SearchFilters, Store
from memoir.store.port import SessionDamage

TURNS = [
    ("alpha question about wal", "alpha answer", "Bash"),
    ("beta question", "beta answer", None),
]


def raw(store: Store, sql: str, params: tuple[Any, ...] = ()) -> list[Any]:
    """Run SQL (``?`` placeholders) in one transaction of either backend."""
    with store._tx() as tx:  # type: ignore[attr-defined]
        return tx.run(sql, params)


def orphan_index_row(store: Store) -> None:
    if store.backend == "sqlite":
        raw(
            store,
            "INSERT INTO exchange_fts (rowid, user, assistant, tools, meta) "
            "VALUES (999, 'ghost', '', '', '')",
        )
    else:
        raw(
            store,
            "INSERT INTO exchange_search (exchange_pk, user_doc, assistant_doc, "
            "tools_doc, meta_doc) VALUES (999, 'ghost', '', '', '')",
        )


def drop_index_row(store: Store, exchange_id: str) -> None:
    pk = raw(store, "SELECT pk FROM exchanges WHERE id = ?", (exchange_id,))[0][0]
    if store.backend == "sqlite":
        raw(store, "DELETE FROM exchange_fts WHERE rowid = ?", (pk,))
    else:
        raw(store, "DELETE FROM exchange_search WHERE exchange_pk = ?", (pk,))


def test_stats_counts(store: Store) -> None:
    ingest(store, "s1", TURNS)
    ingest(store, "s2", TURNS[:1], project="other", subagent=True)
    stats = store.stats()
    expected = {
        "sessions": 2,
        "exchanges": 3,
        "events": 10,
        "projects": 2,
        "skipped_lines": 0,
        "index_rows": 3,
        "subagent_sessions": 1,
        "embeddings": 0,
    }
    assert {k: stats[k] for k in expected} == expected


def test_a_consistent_store_has_no_problems(store: Store) -> None:
    assert store.integrity_problems() == []
    ingest(store, "s1", TURNS)
    assert store.integrity_problems() == []


def test_missing_and_orphan_index_rows_are_found_and_repaired(store: Store) -> None:
    ingest(store, "s1", TURNS)
    drop_index_row(store, "s1:1")
    orphan_index_row(store)
    problems = store.integrity_problems()
    assert any(p.startswith("1 exchanges missing from the search index: s1:1") for p in problems)
    assert any(p.startswith("1 orphan index rows") and "999" in p for p in problems)
    assert store.index.search("wal", SearchFilters(), 10) == []

    assert store.index.repair() == 2
    assert store.integrity_problems() == []
    assert [h.exchange_id for h in store.index.search("wal", SearchFilters(), 10)] == ["s1:1"]
    assert store.index.search("ghost", SearchFilters(), 10) == []


def test_event_gaps_and_broken_spans_are_found(store: Store) -> None:
    ingest(store, "s1", TURNS)
    raw(store, "DELETE FROM events WHERE session_id = ? AND ordinal IN (4, 5)", ("s1",))
    problems = store.integrity_problems()
    assert "1 sessions with gaps in their event ordinals: s1" in problems
    assert any(p.startswith("2 exchanges whose event span is missing") for p in problems)


def test_orphan_embeddings_and_sources_are_found(store: Store) -> None:
    raw(
        store,
        "INSERT INTO embeddings (model, exchange_id, dim, vec) VALUES (?, ?, ?, ?)",
        ("m", "nowhere:1", 1, b"\x00\x00\x00\x00"),
    )
    raw(
        store,
        'INSERT INTO sources (path, session_id, harness, size, "offset", line_count, '
        "mtime_ns, prefix_hash, tail_hash) VALUES ('/x', 'ghost', 'codex', 1, 1, 1, 1, "
        "'', '')",
    )
    problems = store.integrity_problems()
    assert "1 embeddings of missing exchanges: nowhere:1" in problems
    assert "1 sources of unknown sessions: /x" in problems


def test_repair_of_an_empty_store(store: Store) -> None:
    assert store.index.repair() == 0
    assert store.stats()["index_rows"] == 0


THREE = [*TURNS, ("gamma question about yaks", "gamma answer", None)]


def test_a_lost_exchange_row_is_found_and_rebuilt_from_the_events(store: Store) -> None:
    from memoir.ingest.verify import rebuild_exchanges

    ingest(store, "s1", THREE)
    kept = {x.id: x for x in store.exchanges.of("s1")}
    lost = "s1:7"
    assert lost in kept
    raw(store, "DELETE FROM embeddings WHERE exchange_id = ?", (lost,))
    drop_index_row(store, lost)
    raw(store, "DELETE FROM exchanges WHERE id = ?", (lost,))
    problems = store.integrity_problems()
    assert f"1 exchange rows lost (their events belong to no exchange): {lost}" in problems
    assert store.damaged_sessions() == SessionDamage(exchanges_lost=("s1",))

    assert rebuild_exchanges(store, "s1") is True
    assert store.integrity_problems() == []
    assert {x.id: x for x in store.exchanges.of("s1")} == kept
    assert [h.exchange_id for h in store.index.search("yaks", SearchFilters(), 10)] == [lost]
    assert store.damaged_sessions() == SessionDamage()
    assert rebuild_exchanges(store, "nobody") is False


def test_missing_events_name_the_session_to_read_again(store: Store) -> None:
    ingest(store, "s1", THREE)
    ingest(store, "s2", TURNS)
    raw(store, "DELETE FROM events WHERE session_id = ? AND ordinal = 3", ("s1",))
    assert store.damaged_sessions() == SessionDamage(events_lost=("s1",))
    # the prompt of an exchange gone with its exchange row: its events are not whole either
    raw(store, "DELETE FROM events WHERE session_id = ? AND ordinal = 1", ("s2",))
    raw(store, "DELETE FROM exchanges WHERE id = ?", ("s2:1",))
    assert store.damaged_sessions() == SessionDamage(events_lost=("s1", "s2"))
