"""The owner in the full-text indexes (v22), on both backends: a user's text search and
recall return only that user's rows, the index narrows to them (PostgreSQL's GIN scan
and SQLite's FTS5 match carry the owner), and no query text matches an owner — not the
token's or the lexeme's literal text, not a prefix of it, not a name."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime

import pytest
from store_builders import batch, conversation, session

from boundary.sqltrace import traced
from memoir.memory.item_rows import MemoryItemRow, MemorySourceRow, key_sig
from memoir.memory.item_store import memory_parts
from memoir.store import SearchFilters, Store
from memoir.store.index_doc import owner_lexeme, owner_token, owner_tsquery
from memoir.store.search_text import parse_query
from memoir.store.values import ItemFilter

T0 = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)
USERS = ("alice", "bob")
# each user's words; "kestrel" is said by both
TURNS = {
    "alice": [("kestrel nesting on the tower", "noted the kestrel", None)],
    "bob": [("kestrel migration south", "noted", None)],
}

CONTENT = {"alice": "Watches kestrels daily.", "bob": "Counts kestrels yearly."}


def _fill(store: Store, users: tuple[str, ...] = USERS) -> None:
    for user in users:
        sid = f"{user}-s"
        made = conversation(sid, TURNS[user])
        store.ingest.apply(batch(replace(session(sid), user=user), made))
        content = CONTENT[user]
        memory_parts(store).items.save(
            [
                MemoryItemRow(
                    id=f"{user}-i",
                    session_id=sid,
                    project="proj",
                    scope="global",
                    kind="fact",
                    content=content,
                    normalized=content.casefold(),
                    keys=("kestrel",),
                    operation_id=f"op-{user}",
                    created_at=T0,
                    sources=(MemorySourceRow(sid, 1, content),),
                    owner=user,
                    scope_key="",
                    key_sig=key_sig(("kestrel",)),
                )
            ]
        )


def _search(store: Store, query: str, user: str | None) -> list[str]:
    return [h.exchange_id for h in store.index.search(query, SearchFilters(user=user), 10)]


def _recall(store: Store, query: str, user: str | None) -> list[str]:
    return memory_parts(store).items.rank_text(parse_query(query), ItemFilter(owner=user), 10)


def test_a_users_search_and_recall_return_only_their_rows(store: Store) -> None:
    _fill(store)
    assert _search(store, "kestrel", "alice") == ["alice-s:1"]
    assert _search(store, "kestrel", "bob") == ["bob-s:1"]
    assert sorted(_search(store, "kestrel", None)) == ["alice-s:1", "bob-s:1"]
    assert _search(store, "migration", "alice") == []  # bob's word
    assert _search(store, "tower OR migration", "bob") == ["bob-s:1"]
    assert _search(store, "kestrel", "carol") == []  # a user with nothing
    assert _recall(store, "kestrel", "alice") == ["alice-i"]
    assert _recall(store, "kestrel", "bob") == ["bob-i"]
    assert sorted(_recall(store, "kestrel", None)) == ["alice-i", "bob-i"]
    assert _recall(store, "kestrel", "carol") == []
    assert _recall(store, "yearly", "alice") == []  # bob's word


@pytest.mark.parametrize("user", [None, "alice", "bob"])
@pytest.mark.parametrize(
    "query",
    [
        owner_token("alice"),  # SQLite's token, as typed
        owner_token("alice")[:8] + "*",  # a prefix of it
        owner_lexeme("alice"),  # PostgreSQL's lexeme, as typed: "#alice"
        "alice",  # the name (no exchange or item says it)
        f'"{owner_token("alice")}"',
    ],
)
def test_no_query_text_matches_an_owner(store: Store, query: str, user: str | None) -> None:
    _fill(store)
    assert _search(store, query, user) == []
    assert _recall(store, query, user) == []


def test_the_index_holds_each_rows_owner(store: Store) -> None:
    """What the migration and every write put in the index: on SQLite the token in the
    ``owner`` columns; on PostgreSQL the owner and its lexeme in ``tsv``."""
    _fill(store)
    if store.backend == "sqlite":  # type: ignore[attr-defined]
        rows = store._db.rows("SELECT owner FROM exchange_fts ORDER BY rowid")  # type: ignore[attr-defined]
        assert rows == [(owner_token("alice"),), (owner_token("bob"),)]
        items = store._db.rows("SELECT owner FROM memory_fts ORDER BY rowid")  # type: ignore[attr-defined]
        assert items == [(owner_token("alice"),), (owner_token("bob"),)]
        return
    got = store._db.rows(  # type: ignore[attr-defined]
        "SELECT d.owner_doc, d.tsv @@ ?::tsquery, d.tsv @@ ?::tsquery FROM exchange_search d "
        "ORDER BY d.exchange_pk",
        (owner_tsquery("alice"), owner_tsquery("bob")),
    )
    assert [tuple(r) for r in got] == [("alice", True, False), ("bob", False, True)]
    items = store._db.rows(  # type: ignore[attr-defined]
        "SELECT id, tsv @@ ?::tsquery FROM memory_items ORDER BY id", (owner_tsquery("alice"),)
    )
    assert [tuple(r) for r in items] == [("alice-i", True), ("bob-i", False)]


def test_an_owner_name_with_quotes_and_backslashes_is_one_lexeme(store: Store) -> None:
    odd = "o'brien\\x y"
    sid = "odd-s"
    made = conversation(sid, [("kestrel on the roof", "yes", None)])
    store.ingest.apply(batch(replace(session(sid), user=odd), made))
    assert _search(store, "kestrel", odd) == ["odd-s:1"]
    assert _search(store, "kestrel", "o'brien") == []
    assert _search(store, "kestrel", "y") == []


def test_the_index_itself_narrows_to_the_owner(
    store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Alice's index rows relabelled as bob's: her own search finds nothing though the
    SQL filter after the match would keep them — the owner is part of the index match."""
    _fill(store)
    db = store._db  # type: ignore[attr-defined]
    if store.backend == "sqlite":  # type: ignore[attr-defined]
        with db.tx() as tx:
            tx.run(
                "UPDATE exchange_fts SET owner = ? WHERE user MATCH 'tower'", (owner_token("bob"),)
            )
            tx.run(
                "UPDATE memory_fts SET owner = ? WHERE body MATCH 'daily'", (owner_token("bob"),)
            )
        assert _recall(store, "kestrel", "alice") == []
        assert _recall(store, "kestrel", "bob") == ["bob-i"]
    else:
        with db.tx() as tx:
            tx.run("UPDATE exchange_search SET owner_doc = 'bob' WHERE owner_doc = 'alice'")
        from boundary.sqltrace import traced

        with traced(monkeypatch) as ran:
            assert _recall(store, "kestrel", "alice") == ["alice-i"]
        (sql, params, _), *_ = [s for s in ran.statements if "tsv @@" in s[0]]
        assert "i.tsv @@ ?::tsquery" in sql and owner_tsquery("alice") in params
    assert _search(store, "kestrel", "alice") == []
    assert _search(store, "kestrel", "bob") == ["bob-s:1"]


def _relabel_alices_rows_as_bobs(store: Store) -> None:
    db = store._db  # type: ignore[attr-defined]
    with db.tx() as tx:
        if store.backend == "sqlite":  # type: ignore[attr-defined]
            tx.run(
                "UPDATE exchange_fts SET owner = ? WHERE user MATCH 'tower'", (owner_token("bob"),)
            )
            tx.run(
                "UPDATE memory_fts SET owner = ? WHERE body MATCH 'daily'", (owner_token("bob"),)
            )
        else:
            tx.run("UPDATE exchange_search SET owner_doc = 'bob' WHERE owner_doc = 'alice'")


def test_a_home_of_one_owner_leaves_the_owner_out_of_the_match(
    store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Where one user holds every row, the owner's token would narrow nothing (and cost a
    second posting list per term, doubling a text search on a one-user home): the match
    leaves it out, and takes it again once another user holds a row. Alice's index rows
    relabelled as bob's tell which: found while she is alone, not once bob has a row."""
    from boundary.sqltrace import traced

    _fill(store, ("alice",))
    _relabel_alices_rows_as_bobs(store)
    assert _search(store, "kestrel", "alice") == ["alice-s:1"]  # the owner left out
    with traced(monkeypatch) as ran:
        assert _recall(store, "kestrel", "alice") == ["alice-i"]
    assert not any(owner_tsquery("alice") in params for _, params, _ in ran.statements)
    if store.backend == "sqlite":  # type: ignore[attr-defined]
        assert not any(owner_token("alice") in str(params) for _, params, _ in ran.statements)
    _fill(store, ("bob",))  # a second owner: the owner narrows again
    _relabel_alices_rows_as_bobs(store)
    assert _search(store, "kestrel", "alice") == []
    assert _search(store, "kestrel", "bob") == ["bob-s:1"]
    with traced(monkeypatch) as ran:
        assert _recall(store, "kestrel", "bob") == ["bob-i"]
    mark = owner_token("bob") if store.backend == "sqlite" else owner_tsquery("bob")  # type: ignore[attr-defined]
    assert any(mark in str(params) for _, params, _ in ran.statements)
    if store.backend == "sqlite":  # type: ignore[attr-defined]
        assert _recall(store, "kestrel", "alice") == []  # her item's index row says bob


def test_the_item_vector_models_are_sought_in_their_index(store: Store) -> None:
    """Which embedders items have vectors of (what the test embedder's guard asks on every
    recall): each once, sorted, read by seeking the embedder index (v24), never by reading
    every user's vector rows."""
    import numpy as np

    from memoir.memory.item_store import _VECTOR_MODELS

    _fill(store)
    items = memory_parts(store).items
    assert items.vector_models() == []
    one = np.ones(4, dtype=np.float32)
    items.put_vectors("minilm", {"alice-i": one, "bob-i": one})
    items.put_vectors("hash", {"bob-i": one})
    items.put_vectors("e5", {"alice-i": one})
    assert items.vector_models() == ["e5", "hash", "minilm"]
    db = store._db  # type: ignore[attr-defined]
    with db.tx() as tx:
        if store.backend == "sqlite":  # type: ignore[attr-defined]
            plan = " | ".join(str(r[-1]) for r in tx.run("EXPLAIN QUERY PLAN " + _VECTOR_MODELS))
            assert "SCAN memory_vectors" not in plan, plan
        else:  # a tiny table is read whole when it may: the plan with that ruled out
            tx.run("SET LOCAL enable_seqscan = off")
            plan = " | ".join(str(r[0]) for r in tx.run("EXPLAIN " + _VECTOR_MODELS))
            assert "Seq Scan" not in plan, plan
    assert "memory_vectors_embedder" in plan, plan


def test_a_users_lookup_of_another_users_item_misses_in_the_owner_index(
    store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Alice's lookup of Bob's item by its id seeks (owner, id) (v25) and misses there, as
    her lookup of an id nobody has does: Bob's row is never read (with only the primary
    key, SQLite found it and then dropped it for its owner, which took measurably longer
    than a miss)."""
    _fill(store)
    with traced(monkeypatch) as ran:
        assert memory_parts(store).items.get("bob-i", owner="alice") is None
        assert memory_parts(store).items.get("bob-i", owner="bob") is not None
    monkeypatch.undo()
    exact = [(sql, params) for sql, params, _n in ran.statements if params == ("bob-i", "alice")]
    assert len(exact) == 1, ran.statements
    sql, params = exact[0]
    with store._db.tx() as tx:  # type: ignore[attr-defined]
        if store.backend == "sqlite":  # type: ignore[attr-defined]
            plan = " | ".join(str(r[-1]) for r in tx.run("EXPLAIN QUERY PLAN " + sql, params))
        else:  # a tiny table is read whole when it may: the plan with that ruled out
            tx.run("SET LOCAL enable_seqscan = off")
            plan = " | ".join(str(r[0]) for r in tx.run("EXPLAIN " + sql, params))
    assert "memory_items_owner_id" in plan, plan


@pytest.mark.parametrize(
    ("owners", "user", "held"),
    [
        ((), "alice", False),
        (("alice",), "alice", False),
        (("alice", "bob"), "alice", True),  # another owner after her
        (("alice", "bob"), "bob", True),  # another owner before him
        (("bob",), "alice", True),  # she holds nothing, someone does
        (("alice", "bob", "carol"), "bob", True),
    ],
)
def test_others_hold_asks_for_an_owner_either_side(
    store: Store, owners: tuple[str, ...], user: str, held: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    from memoir.store.search_sql import items_of_others as _others_hold

    monkeypatch.setitem(CONTENT, "carol", "Carol keeps notes.")
    monkeypatch.setitem(TURNS, "carol", [("carol says hello", "hello", None)])
    _fill(store, owners)
    with store._db.tx() as tx:  # type: ignore[attr-defined]
        assert _others_hold(tx, user) is held


def test_others_hold_seeks_the_owner_index_on_a_table_never_analyzed(store: Store) -> None:
    """Thousands of another owner's items, no statistics yet (a table just filled, as
    after an import): the check still reads the owner index, never every row."""
    from memoir.memory.item_rows import ITEM_COLS
    from memoir.store.search_sql import others_hold_sql

    _fill(store)
    copied = ITEM_COLS.replace("id, ", "id || g, ", 1).replace("normalized", "normalized || g")
    copied = copied.replace("owner,", "'zed',")
    sql = others_hold_sql("memory_items", "owner").replace("?", "'alice'")
    with store._db.tx() as tx:  # type: ignore[attr-defined]
        if store.backend == "sqlite":  # type: ignore[attr-defined]
            tx.run(
                f"WITH RECURSIVE g(g) AS (SELECT 1 UNION ALL SELECT g + 1 FROM g WHERE g < 5000) "
                f"INSERT INTO memory_items ({ITEM_COLS}) SELECT {copied} "
                "FROM memory_items, g WHERE owner = 'bob'"
            )
            plan = " | ".join(str(r[-1]) for r in tx.run("EXPLAIN QUERY PLAN " + sql))
            assert "SCAN memory_items" not in plan, plan
        else:
            tx.run(
                f"INSERT INTO memory_items ({ITEM_COLS}) SELECT {copied} FROM memory_items, "
                "generate_series(1, 5000) g WHERE owner = 'bob'"
            )
            plan = " | ".join(str(r[0]) for r in tx.run("EXPLAIN " + sql))
            assert "Seq Scan" not in plan, plan
    assert "memory_items_owner" in plan, plan
