"""How an item is written inside a settlement's transaction: saved new, merged into the
live item it duplicates, or saved as the successor of the item it supersedes.

Two live items of one owner and scope never share their normalized content: a partial
unique index says so (migration v13), so the loser of a race between two extractions of
one fact finds the winner's row and merges into it. A merge into an item worded
differently (same key set, or a near-duplicate by meaning) is the engine's decision,
handed in as ``merge_into``. On PostgreSQL the rows
read to merge into or to supersede are locked (``FOR UPDATE``); SQLite's write
transaction already runs alone.
"""

from __future__ import annotations

from dataclasses import replace
from datetime import datetime

from memoir.store.codec import dumps
from memoir.store.db import Tx
from memoir.store.memory_rows import ITEM_COLS, MemoryItemRow, item_from_row, key_sig
from memoir.store.memory_text import ItemText

__all__ = ["ItemWriter"]


def _marks(cols: str) -> str:
    return ", ".join("?" for _ in cols.split(","))


def _earliest(*values: datetime | None) -> datetime | None:
    return min((v for v in values if v is not None), default=None)


def _latest(*values: datetime | None) -> datetime | None:
    return max((v for v in values if v is not None), default=None)


class ItemWriter:
    def __init__(self, text: ItemText, row_lock: str) -> None:
        self.text = text
        self.lock = row_lock

    def save(self, tx: Tx, item: MemoryItemRow) -> str:
        """Write ``item`` (see the module); the id of the live item now holding it."""
        if tx.run("SELECT id FROM memory_items WHERE id = ?", (item.id,)):
            return item.id  # a replay writes nothing twice
        item = replace(
            item,
            key_sig=item.key_sig or key_sig(item.keys),
            scope_key=item.scope_key or (item.project if item.scope == "project" else ""),
        )
        head = self._head(tx, item.supersedes) if item.supersedes else None
        target = self._merge_target(tx, item)
        if target is not None:
            self._merge(tx, target, item)
            return target.id
        valid_from = item.valid_from or item.first_observed_at or item.created_at
        if head is not None and head.valid_from is not None and valid_from < head.valid_from:
            item = replace(item, superseded_by=head.id, valid_until=head.valid_from)  # older news
            head = None
        if head is not None:
            tx.run(
                "UPDATE memory_items SET superseded_by = ?, valid_until = ? WHERE id = ?",
                (item.id, tx.time(valid_from), head.id),
            )
        if not self._insert(tx, replace(item, valid_from=valid_from)):
            target = self._match(tx, item)  # a concurrent writer saved the same fact first
            if target is None:
                return item.id  # the same operation, replayed concurrently
            self._merge(tx, target, item)
            if head is not None:
                tx.run(
                    "UPDATE memory_items SET superseded_by = ? WHERE id = ?", (target.id, head.id)
                )
            return target.id
        return item.id

    # reads ---------------------------------------------------------------------------
    def _row(self, tx: Tx, item_id: str) -> MemoryItemRow | None:
        rows = tx.run(f"SELECT {ITEM_COLS} FROM memory_items WHERE id = ?{self.lock}", (item_id,))
        return item_from_row(rows[0]) if rows else None

    def _head(self, tx: Tx, item_id: str) -> MemoryItemRow | None:
        """The live end of the chain ``item_id`` is on (locked), or None when it is gone."""
        seen: set[str] = set()
        row = self._row(tx, item_id)
        while row is not None and row.superseded_by is not None and row.id not in seen:
            seen.add(row.id)
            row = self._row(tx, row.superseded_by)
        return row if row is not None and row.live else None

    def _merge_target(self, tx: Tx, item: MemoryItemRow) -> MemoryItemRow | None:
        if item.merge_into:
            near = self._row(tx, item.merge_into)
            if (
                near is not None
                and near.live
                and (near.owner, near.scope_key) == (item.owner, item.scope_key)
            ):
                return near
        return self._match(tx, item)

    def _match(self, tx: Tx, item: MemoryItemRow) -> MemoryItemRow | None:
        """The live item of the same owner and scope with the same normalized content."""
        rows = tx.run(
            f"SELECT {ITEM_COLS} FROM memory_items WHERE owner = ? AND scope_key = ? AND "
            f"normalized = ? AND superseded_by IS NULL{self.lock}",
            (item.owner, item.scope_key, item.normalized),
        )
        return item_from_row(rows[0]) if rows else None

    # writes --------------------------------------------------------------------------
    def _insert(self, tx: Tx, item: MemoryItemRow) -> bool:
        added = tx.run(
            f"INSERT INTO memory_items ({ITEM_COLS}) VALUES ({_marks(ITEM_COLS)}) "
            "ON CONFLICT DO NOTHING RETURNING id",
            (
                item.id,
                item.session_id,
                item.project,
                item.scope,
                item.kind,
                item.content,
                item.normalized,
                dumps(list(item.keys)),
                dumps(item.temporal),
                item.operation_id,
                tx.time(item.created_at),
                tx.time(item.observed_at),
                item.superseded_by,
                tx.time(item.forgotten_at),
                item.owner,
                item.scope_key,
                item.key_sig,
                tx.time(item.first_observed_at),
                tx.time(item.valid_from),
                tx.time(item.valid_until),
            ),
        )
        if not added:
            return False
        tx.many(
            "INSERT INTO memory_sources (item_id, n, session_id, ordinal, quote, operation_id) "
            "VALUES (?, ?, ?, ?, ?, ?)",
            [
                (item.id, n, q.session_id, q.ordinal, q.quote, q.operation_id or item.operation_id)
                for n, q in enumerate(item.sources)
            ],
        )
        self.text.index(tx, item.id, item.content, item.keys)
        return True

    def _merge(self, tx: Tx, target: MemoryItemRow, item: MemoryItemRow) -> None:
        """``item``'s quotes appended to ``target`` (each once) and its observed range and
        validity widened to cover both."""
        have = {
            (str(s), int(o), str(q))
            for s, o, q in tx.run(
                "SELECT session_id, ordinal, quote FROM memory_sources WHERE item_id = ?",
                (target.id,),
            )
        }
        n = int(
            tx.run(
                "SELECT COALESCE(max(n), -1) FROM memory_sources WHERE item_id = ?", (target.id,)
            )[0][0]
        )
        new = []
        for q in item.sources:
            if (q.session_id, q.ordinal, q.quote) not in have:
                have.add((q.session_id, q.ordinal, q.quote))
                n += 1
                op = q.operation_id or item.operation_id
                new.append((target.id, n, q.session_id, q.ordinal, q.quote, op))
        tx.many(
            "INSERT INTO memory_sources (item_id, n, session_id, ordinal, quote, operation_id) "
            "VALUES (?, ?, ?, ?, ?, ?)",
            new,
        )
        first = _earliest(target.first_observed_at, item.first_observed_at)
        tx.run(
            "UPDATE memory_items SET observed_at = ?, first_observed_at = ?, valid_from = ? "
            "WHERE id = ?",
            (
                tx.time(_latest(target.observed_at, item.observed_at)),
                tx.time(first),
                tx.time(_earliest(target.valid_from, item.valid_from, first)),
                target.id,
            ),
        )
