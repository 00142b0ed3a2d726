"""The memory parts on both backends: the lane's queue, settlement in one transaction
(idempotent, compare-and-set on the cursor), pending failures, denial markers, items with
their quotes, forgetting, switches; and the v9 → v10 migration with rows in place."""

from __future__ import annotations

import sqlite3
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from memoir.errors import ConcurrentWrite, MemoirError, NotFound
from memoir.memory.item_rows import (
    DenialRow,
    MemoryItemRow,
    MemoryOpRow,
    MemorySourceRow,
    PendingRow,
    ReceiptRow,
    Settlement,
)
from memoir.memory.item_store import memory_parts
from memoir.store import Store
from memoir.store import sqlite_store as sqlite_store_module
from memoir.store.migrations import CURRENT_VERSION
from memoir.store.values import CheckpointRow

T0 = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)


def _receipt(op: str, outcome: str = "extracted", through: int = 4, **kw: object) -> ReceiptRow:
    return ReceiptRow(op, "s1", "compaction", outcome, 0, through, T0, **kw)  # type: ignore[arg-type]


def _item(
    item_id: str,
    op: str,
    quote: str = "I prefer tabs",
    ordinal: int = 1,
    content: str = "Prefers tabs.",
    keys: tuple[str, ...] = ("tabs", "indentation"),
) -> MemoryItemRow:
    return MemoryItemRow(
        id=item_id,
        session_id="s1",
        project="p",
        scope="project",
        kind="preference",
        content=content,
        normalized=content.casefold(),
        keys=keys,
        operation_id=op,
        created_at=T0,
        sources=(MemorySourceRow("s1", ordinal, quote),),
    )


def _pending(op: str, failures: int = 1) -> PendingRow:
    return PendingRow(
        "s1", op, "compaction", "ck", 0, 4, 6, "h", "truncated", T0, failures=failures
    )


def test_settlement_writes_items_cursor_receipt_and_is_idempotent(store: Store) -> None:
    s = Settlement(
        _receipt("op1", items=1), items=(_item("i1", "op1"),), cursor_from=0, cursor_to=4
    )
    assert memory_parts(store).memory.settle(s) is True
    assert memory_parts(store).memory.cursor("s1") == 4
    assert memory_parts(store).memory.receipt("op1").outcome == "extracted"  # type: ignore[union-attr]
    (item,) = memory_parts(store).items.find(session_id="s1")
    assert item.keys == ("tabs", "indentation")
    assert item.sources == (MemorySourceRow("s1", 1, "I prefer tabs", "op1"),)
    # a replay changes nothing: no second item, cursor unchanged, no CAS error
    assert memory_parts(store).memory.settle(s) is False
    assert [i.id for i in memory_parts(store).items.find()] == ["i1"] and memory_parts(
        store
    ).memory.cursor("s1") == 4


def test_a_stale_cursor_writes_nothing(store: Store) -> None:
    memory_parts(store).memory.settle(Settlement(_receipt("op1"), cursor_from=0, cursor_to=4))
    stale = Settlement(
        _receipt("op2", through=8), items=(_item("i2", "op2"),), cursor_from=0, cursor_to=8
    )
    with pytest.raises(ConcurrentWrite):
        memory_parts(store).memory.settle(stale)
    assert (
        memory_parts(store).memory.receipt("op2") is None and memory_parts(store).items.find() == []
    )
    assert memory_parts(store).memory.cursor("s1") == 4


def test_enqueue_is_once_per_operation_and_settling_dequeues(store: Store) -> None:
    op = MemoryOpRow("op1", "s1", "extract", "call-7", T0, 3, 5, {"hint": "x"})
    assert memory_parts(store).memory.enqueue(op) is True
    assert memory_parts(store).memory.enqueue(op) is False  # a duplicate dispatch is one operation
    later = MemoryOpRow("op0", "s1", "compaction", "ck", T0 + timedelta(seconds=1))
    memory_parts(store).memory.enqueue(later)
    assert [o.operation_id for o in memory_parts(store).memory.queued("s1")] == ["op1", "op0"]
    assert memory_parts(store).memory.queued("s1")[0] == op
    memory_parts(store).memory.settle(
        Settlement(_receipt("op1", "no_op"), cursor_from=0, cursor_to=3)
    )
    assert [o.operation_id for o in memory_parts(store).memory.queued()] == ["op0"]
    assert memory_parts(store).memory.enqueue(op) is False  # settled: never queued again


def test_pending_failure_is_set_replaced_and_cleared_with_the_settlement(store: Store) -> None:
    memory_parts(store).memory.settle(
        Settlement(_receipt("op1", "failed"), pending=_pending("op1"))
    )
    assert memory_parts(store).memory.pending("s1") == _pending("op1")
    memory_parts(store).memory.settle(
        Settlement(_receipt("op2", "failed"), pending=_pending("op1", 2))
    )
    assert memory_parts(store).memory.pending("s1").failures == 2  # type: ignore[union-attr]
    assert [p.session_id for p in memory_parts(store).memory.all_pending()] == ["s1"]
    memory_parts(store).memory.settle(
        Settlement(_receipt("op3", "discarded"), cursor_to=4, clear_pending=True)
    )
    assert (
        memory_parts(store).memory.pending("s1") is None
        and memory_parts(store).memory.cursor("s1") == 4
    )


def test_denials_are_durable_and_idempotent(store: Store) -> None:
    row = DenialRow("s1", 0, 9, "incognito", T0, "ck1")
    memory_parts(store).memory.deny(row)
    memory_parts(store).memory.deny(row)
    assert memory_parts(store).memory.denials("s1") == [row]
    assert memory_parts(store).memory.denials("other") == []


def test_items_forget_cited_and_prefix_lookup(store: Store) -> None:
    vim = _item("abcdff02", "op1", "I use vim", 3, "Uses vim.", ("vim", "editor"))
    items = (_item("abcdef01", "op1", ordinal=1), vim)
    memory_parts(store).memory.settle(Settlement(_receipt("op1", items=2), items=items))
    assert memory_parts(store).items.cited("s1") == {1: ["abcdef01"], 3: ["abcdff02"]}
    assert memory_parts(store).items.get("abcde").id == "abcdef01"  # type: ignore[union-attr]
    with pytest.raises(MemoirError, match="matches 2 items"):  # two match: ambiguous
        memory_parts(store).items.get("abcd")
    assert memory_parts(store).items.count() == 2 and store.stats()["memory_items"] == 2
    memory_parts(store).items.forget("abcdef01")
    assert [i.id for i in memory_parts(store).items.find()] == ["abcdff02"]
    assert memory_parts(store).items.cited("s1") == {3: ["abcdff02"]}
    with pytest.raises(NotFound):
        memory_parts(store).items.forget("abcdef01")


def test_project_switches(store: Store) -> None:
    assert memory_parts(store).items.project_disabled("p") is False
    memory_parts(store).items.switch_project("p", disabled=True)
    assert memory_parts(store).items.project_disabled("p") and memory_parts(
        store
    ).items.disabled_projects() == ["p"]
    memory_parts(store).items.switch_project("p", disabled=False)
    assert memory_parts(store).items.project_disabled("p") is False


def test_v9_database_upgrades_to_v10_with_checkpoints_in_place(tmp_path: Path) -> None:
    path = tmp_path / "old.db"
    old = sqlite_store_module.SQLiteStore(path, target_version=9)
    row = CheckpointRow("ck1", "s1", T0, 7, 7, "eligible", None, {"summary": "so far"})
    old.checkpoints.put(row)
    old.close()
    with sqlite3.connect(path) as conn:
        assert conn.execute("SELECT max(version) FROM schema_version").fetchone() == (9,)
    store = sqlite_store_module.SQLiteStore(path)
    try:
        assert store.schema_version() == CURRENT_VERSION
        assert store.checkpoints.of("s1") == [row]
        assert (
            memory_parts(store).memory.cursor("s1") == 0
            and memory_parts(store).memory.queued() == []
        )
    finally:
        store.close()


def test_deleting_a_session_removes_what_memory_derived_from_it(store: Store) -> None:
    from memoir.model import Harness, Session
    from memoir.store import IngestBatch

    store.ingest.apply(IngestBatch(Session("s1", "p", Harness.API)))
    memory_parts(store).memory.enqueue(MemoryOpRow("op9", "s1", "extract", "c", T0))
    memory_parts(store).memory.deny(DenialRow("s1", 0, 2, "incognito", T0))
    memory_parts(store).memory.settle(
        Settlement(_receipt("op1", items=1), items=(_item("i1", "op1"),), cursor_to=4)
    )
    memory_parts(store).memory.fail(_pending("op2"))
    store.sessions.delete("s1")
    assert memory_parts(store).items.find() == [] and memory_parts(store).items.cited("s1") == {}
    assert (
        memory_parts(store).memory.cursor("s1") == 0 and memory_parts(store).memory.queued() == []
    )
    assert (
        memory_parts(store).memory.pending("s1") is None
        and memory_parts(store).memory.denials("s1") == []
    )
    assert memory_parts(store).memory.receipts() == []


def test_v12_live_duplicates_merge_into_the_oldest_when_v13_adds_the_unique_index(
    tmp_path: Path,
) -> None:
    path = tmp_path / "old.db"
    old = sqlite_store_module.SQLiteStore(path, target_version=12)
    rows = [
        ("i-old", "I prefer tabs.", '["tabs"]', T0, 1, "I prefer tabs"),
        (
            "i-new",
            "I prefer tabs.",
            '["indentation", "tabs"]',
            T0 + timedelta(days=1),
            5,
            "I prefer tabs!",
        ),
        ("i-keys", "Tabs, always.", '["tabs"]', T0 + timedelta(days=2), 9, "Tabs, always"),
        ("i-other", "I use vim.", '["vim"]', T0, 3, "I use vim"),
    ]
    with old._db.tx() as tx:
        for item_id, content, keys, at, ordinal, quote in rows:
            tx.run(
                "INSERT INTO memory_items (id, session_id, project, scope, kind, content, "
                "normalized, keys, operation_id, created_at, observed_at) "
                "VALUES (?, 's1', 'p', 'global', 'preference', ?, ?, ?, 'op', ?, ?)",
                (item_id, content, content.casefold(), keys, tx.time(at), tx.time(at)),
            )
            tx.run(
                "INSERT INTO memory_sources (item_id, n, session_id, ordinal, quote) "
                "VALUES (?, 0, 's1', ?, ?)",
                (item_id, ordinal, quote),
            )
    old.close()
    store = sqlite_store_module.SQLiteStore(path)
    try:
        items = {i.id: i for i in memory_parts(store).items.find()}
        assert sorted(items) == ["i-keys", "i-old", "i-other"]  # only the same content merged
        merged = items["i-old"]
        assert [(s.ordinal, s.quote) for s in merged.sources] == [
            (1, "I prefer tabs"),
            (5, "I prefer tabs!"),
        ]
        assert merged.first_observed_at == T0 and merged.observed_at == T0 + timedelta(days=1)
        assert merged.owner == "local" and merged.key_sig == "tabs"
        fts = (
            "SELECT i.id FROM memory_fts f JOIN memory_items i ON i.fts_row = f.rowid "
            "WHERE memory_fts MATCH 'vim'"
        )
        assert store._db.rows(fts) == [("i-other",)]
    finally:
        store.close()
