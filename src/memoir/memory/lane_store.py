"""Memory's SQL beside the memory items': long-term memory's lane state per session, and
the keyed items a framework's store keeps.

The lane state (:class:`MemoryPart`): the committed cursor, the durable queue of
operations, the one pending failure, policy denial markers, receipts — and the settlement
that writes an operation's outcome in one transaction.

Keyed items (:class:`KeyedItemsPart`): JSON values one owner keeps under a namespace and a
key (v20), with the full-text ranking their search uses — SQLite's ``keyed_fts`` (bm25),
PostgreSQL's generated ``tsv`` column (``ts_rank``), both read from the structured query
of :mod:`memoir.store.search_text` as recall's are; and each item's vector by the home's
embedder, kept beside it. The rules (filters, namespace matching, paging) live in
:mod:`memoir.memory.keyed`; here is only the SQL. A namespace is its labels joined by
``.`` (:data:`SEP`; the caller checks that no label holds one), so the items under a
namespace prefix are those whose namespace is the prefix or starts with the prefix and a
``.``.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from memoir.errors import ConcurrentWrite, StoreError
from memoir.llm.port import UsageRecord
from memoir.memory.item_rows import (
    DENIAL_COLS,
    OP_COLS,
    PENDING_COLS,
    RECEIPT_COLS,
    DenialRow,
    MemoryOpRow,
    PendingRow,
    ReceiptRow,
    Settlement,
    column_marks,
    denial_from_row,
    op_from_row,
    pending_from_row,
    receipt_from_row,
)
from memoir.memory.item_sql import ItemWriter
from memoir.model.event import scrub_deep
from memoir.store.codec import dumps, stored_time
from memoir.store.db import Db, Part, Tx, fold_index_text, run_plan
from memoir.store.parts.summaries import usage_plan
from memoir.store.search_sql import item_tsquery
from memoir.store.search_text import ParsedQuery, to_fts5

__all__ = [
    "SEP",
    "KeyedItemsPart",
    "KeyedRow",
    "MemoryPart",
    "VectorRow",
]


log = logging.getLogger(__name__)


class MemoryPart(Part):
    def __init__(self, db: Db, items: ItemWriter) -> None:
        super().__init__(db)
        self.items = items

    # the cursor ------------------------------------------------------------------------
    def cursor(self, session_id: str) -> int:
        """The last event ordinal settled for memory (0: none yet)."""
        rows = self._db.rows(
            "SELECT through FROM memory_cursors WHERE session_id = ?", (session_id,)
        )
        return int(rows[0][0]) if rows else 0

    def cursors(self) -> dict[str, int]:
        return {
            r[0]: int(r[1]) for r in self._db.rows("SELECT session_id, through FROM memory_cursors")
        }

    # the lane's queue ------------------------------------------------------------------
    def enqueue(self, op: MemoryOpRow) -> bool:
        """Queue ``op`` durably; False when an operation of that id is queued or settled
        already (a duplicate dispatch is one operation)."""
        with self._db.tx() as tx:
            if tx.run("SELECT 1 FROM memory_receipts WHERE operation_id = ?", (op.operation_id,)):
                return False
            added = tx.run(
                f"INSERT INTO memory_ops ({OP_COLS}) VALUES ({column_marks(OP_COLS)}) "
                "ON CONFLICT (operation_id) DO NOTHING RETURNING operation_id",
                (
                    op.operation_id,
                    op.session_id,
                    op.trigger,
                    op.anchor,
                    op.coverage_through,
                    op.context_through,
                    dumps(op.request),
                    tx.time(op.enqueued_at),
                ),
            )
        return bool(added)

    def queued(self, session_id: str | None = None) -> list[MemoryOpRow]:
        """Operations not yet settled, oldest first (of one session, or all)."""
        where, params = ("WHERE session_id = ? ", (session_id,)) if session_id else ("", ())
        rows = self._db.rows(
            f"SELECT {OP_COLS} FROM memory_ops {where}ORDER BY enqueued_at, operation_id", params
        )
        return [op_from_row(r) for r in rows]

    def drop_op(self, operation_id: str) -> None:
        with self._db.tx() as tx:
            tx.run("DELETE FROM memory_ops WHERE operation_id = ?", (operation_id,))

    # pending failures, denials, receipts ---------------------------------------------
    def pending(self, session_id: str) -> PendingRow | None:
        rows = self._db.rows(
            f"SELECT {PENDING_COLS} FROM memory_pending WHERE session_id = ?", (session_id,)
        )
        return pending_from_row(rows[0]) if rows else None

    def all_pending(self) -> list[PendingRow]:
        rows = self._db.rows(f"SELECT {PENDING_COLS} FROM memory_pending ORDER BY created_at")
        return [pending_from_row(r) for r in rows]

    def fail(self, row: PendingRow, *, drop_op: str | None = None) -> None:
        """Record the session's pending failure (replacing any) and, in the same
        transaction, take ``drop_op`` off the queue (its identity lives on in ``row``)."""
        with self._db.tx() as tx:
            self._put_pending(tx, row)
            if drop_op is not None:
                tx.run("DELETE FROM memory_ops WHERE operation_id = ?", (drop_op,))

    def clear_pending(self, session_id: str) -> None:
        with self._db.tx() as tx:
            tx.run("DELETE FROM memory_pending WHERE session_id = ?", (session_id,))

    def deny(self, row: DenialRow) -> None:
        """Write a durable denial marker (before any cursor skip over it); idempotent."""
        with self._db.tx() as tx:
            tx.run(
                f"INSERT INTO memory_denials ({DENIAL_COLS}) VALUES ({column_marks(DENIAL_COLS)}) "
                "ON CONFLICT (session_id, range_after, range_through) DO NOTHING",
                (
                    row.session_id,
                    row.range_after,
                    row.range_through,
                    row.reason,
                    row.checkpoint_id,
                    tx.time(row.created_at),
                ),
            )

    def denials(self, session_id: str) -> list[DenialRow]:
        rows = self._db.rows(
            f"SELECT {DENIAL_COLS} FROM memory_denials WHERE session_id = ? ORDER BY range_after",
            (session_id,),
        )
        return [denial_from_row(r) for r in rows]

    def receipt(self, operation_id: str) -> ReceiptRow | None:
        rows = self._db.rows(
            f"SELECT {RECEIPT_COLS} FROM memory_receipts WHERE operation_id = ?", (operation_id,)
        )
        return receipt_from_row(rows[0]) if rows else None

    def receipts(
        self, session_id: str | None = None, *, owner: str | None = None
    ) -> list[ReceiptRow]:
        """The receipts of ``session_id`` (all with None), of ``owner``'s sessions only
        when given, oldest first."""
        clauses: list[str] = []
        params: tuple[str, ...] = ()
        if session_id:
            clauses.append("session_id = ?")
            params += (session_id,)
        if owner is not None:
            clauses.append("session_id IN (SELECT id FROM sessions WHERE user_name = ?)")
            params += (owner,)
        where = f"WHERE {' AND '.join(clauses)} " if clauses else ""
        rows = self._db.rows(
            f"SELECT {RECEIPT_COLS} FROM memory_receipts {where}ORDER BY created_at, operation_id",
            params,
        )
        return [receipt_from_row(r) for r in rows]

    # settlement ------------------------------------------------------------------------
    def settle(self, s: Settlement) -> bool:
        """Write ``s`` in one transaction (see :class:`Settlement`); False when the
        operation had settled already. ``ConcurrentWrite`` when the cursor is no longer at
        ``cursor_from`` (nothing is written)."""
        r = s.receipt
        if s.cursor_to is not None and s.cursor_to < (s.cursor_from or 0):
            raise StoreError(
                f"the memory cursor only moves forward ({s.cursor_from} → {s.cursor_to})"
            )
        with self._db.tx() as tx:
            if not self._put_receipt(tx, r):
                tx.run(
                    "DELETE FROM memory_ops WHERE operation_id = ?", (r.operation_id,)
                )  # a replay: its queue entry goes, nothing else changes
                return False
            if s.cursor_to is not None:
                self._move_cursor(tx, r.session_id, s.cursor_from or 0, s.cursor_to)
            for item in sorted(s.items, key=lambda i: (i.normalized, i.id)):  # lock order
                run_plan(tx, self.items.save(item))
            if s.pending is not None:
                self._put_pending(tx, s.pending)
            elif s.clear_pending:
                tx.run("DELETE FROM memory_pending WHERE session_id = ?", (r.session_id,))
            for op in {r.operation_id, *s.done_ops}:
                tx.run("DELETE FROM memory_ops WHERE operation_id = ?", (op,))
        return True

    def record_usage(self, records: Sequence[UsageRecord]) -> None:
        """Write the usage of model calls held off the calls (``holding_usage``); as
        for any metered call, a ledger that cannot be written fails nothing."""
        try:
            if records:
                self._db.apply(usage_plan(records))
        except Exception as exc:
            log.warning("usage ledger: could not record %d model call(s): %s", len(records), exc)

    def _put_receipt(self, tx: Tx, r: ReceiptRow) -> bool:
        added = tx.run(
            f"INSERT INTO memory_receipts ({RECEIPT_COLS}) VALUES ({column_marks(RECEIPT_COLS)}) "
            "ON CONFLICT (operation_id) DO NOTHING RETURNING operation_id",
            (
                r.operation_id,
                r.session_id,
                r.trigger,
                r.outcome,
                r.reason,
                r.range_after,
                r.range_through,
                r.checkpoint_id,
                r.prompt,
                r.model,
                r.items,
                r.dropped,
                r.model_calls,
                r.input_tokens,
                tx.time(r.created_at),
                dumps(r.data),
            ),
        )
        return bool(added)

    def _move_cursor(self, tx: Tx, session_id: str, expected: int, through: int) -> None:
        now = tx.time(datetime.now(UTC))
        moved = tx.run(
            "UPDATE memory_cursors SET through = ?, updated_at = ? WHERE session_id = ? "
            "AND through = ? RETURNING session_id",
            (through, now, session_id, expected),
        )
        if not moved and expected == 0:
            moved = tx.run(
                "INSERT INTO memory_cursors (session_id, through, updated_at) VALUES (?, ?, ?) "
                "ON CONFLICT (session_id) DO NOTHING RETURNING session_id",
                (session_id, through, now),
            )
        if not moved:
            raise ConcurrentWrite(
                f"the memory cursor of session {session_id} moved on since it was read "
                f"(expected {expected})"
            )

    def _put_pending(self, tx: Tx, p: PendingRow) -> None:
        tx.run("DELETE FROM memory_pending WHERE session_id = ?", (p.session_id,))
        tx.run(
            f"INSERT INTO memory_pending ({PENDING_COLS}) VALUES ({column_marks(PENDING_COLS)})",
            (
                p.session_id,
                p.operation_id,
                p.trigger,
                p.anchor,
                p.range_after,
                p.coverage_through,
                p.context_through,
                p.coverage_hash,
                p.failure,
                p.message,
                p.checkpoint_id,
                p.turn,
                p.failures,
                tx.time(p.created_at),
            ),
        )


# keyed items --------------------------------------------------------------------------


SEP = "."

_COLS = "i.namespace, i.key, i.value, i.created_at, i.updated_at"


@dataclass(frozen=True, slots=True)
class KeyedRow:
    namespace: str  # labels joined by SEP
    key: str
    value: str  # JSON text
    created_at: datetime
    updated_at: datetime


@dataclass(frozen=True, slots=True)
class VectorRow:
    namespace: str
    key: str
    body: str
    updated_at: datetime
    vector_model: str
    vector: bytes | None


def _row(r: Any) -> KeyedRow:
    return KeyedRow(str(r[0]), str(r[1]), str(r[2]), stored_time(r[3]), stored_time(r[4]))


def _under(prefix: str) -> tuple[str, list[Any]]:
    """The clause (over alias ``i``) of the namespaces at or under ``prefix``."""
    if not prefix:
        return "1 = 1", []
    head = prefix + SEP
    return "(i.namespace = ? OR substr(i.namespace, 1, ?) = ?)", [prefix, len(head), head]


class KeyedItemsPart(Part):
    def __init__(self, db: Db, *, postgres: bool) -> None:
        super().__init__(db)
        self._postgres = postgres

    # reads -----------------------------------------------------------------------------
    def get(self, owner: str, namespace: str, key: str) -> KeyedRow | None:
        rows = self._db.rows(
            f"SELECT {_COLS} FROM keyed_items i WHERE i.owner = ? AND i.namespace = ? "
            "AND i.key = ?",
            (owner, namespace, key),
        )
        return _row(rows[0]) if rows else None

    def newest(self, owner: str, prefix: str, *, limit: int, offset: int) -> list[KeyedRow]:
        """The items under ``prefix``, most recently changed first."""
        where, params = _under(prefix)
        rows = self._db.rows(
            f"SELECT {_COLS} FROM keyed_items i WHERE i.owner = ? AND {where} "
            "ORDER BY i.updated_at DESC, i.namespace, i.key LIMIT ? OFFSET ?",
            (owner, *params, limit, offset),
        )
        return [_row(r) for r in rows]

    def rank_text(self, owner: str, prefix: str, query: ParsedQuery, limit: int) -> list[KeyedRow]:
        """The items under ``prefix`` whose indexed text matches ``query``, best first."""
        where, params = _under(prefix)
        if self._postgres:
            if query.empty:
                return []
            tsq: list[Any] = []
            expr = item_tsquery(query, tsq)
            sql = (
                f"SELECT {_COLS} FROM keyed_items i, (SELECT {expr}) AS q(q) "
                f"WHERE i.tsv @@ q.q AND i.owner = ? AND {where} "
                "ORDER BY ts_rank(i.tsv, q.q) DESC, i.namespace, i.key LIMIT ?"
            )
            rows = self._db.rows(sql, (*tsq, owner, *params, limit))
        else:
            match = to_fts5(query)
            if match is None:
                return []
            rows = self._db.rows(
                f"SELECT {_COLS} FROM keyed_fts f JOIN keyed_items i ON i.fts_row = f.rowid "
                f"WHERE keyed_fts MATCH ? AND i.owner = ? AND {where} "
                "ORDER BY bm25(keyed_fts), i.namespace, i.key LIMIT ?",
                (match, owner, *params, limit),
            )
        return [_row(r) for r in rows]

    def vector_candidates(self, owner: str, prefix: str, limit: int) -> list[VectorRow]:
        """The newest ``limit`` items under ``prefix`` with text to rank, with their
        vectors (bytes, or None) and the embedder that made them."""
        where, params = _under(prefix)
        rows = self._db.rows(
            f"SELECT i.namespace, i.key, i.body, i.updated_at, i.vector_model, i.vector "
            f"FROM keyed_items i WHERE i.owner = ? AND i.body <> '' AND {where} "
            "ORDER BY i.updated_at DESC, i.namespace, i.key LIMIT ?",
            (owner, *params, limit),
        )
        return [
            VectorRow(
                str(r[0]),
                str(r[1]),
                str(r[2]),
                stored_time(r[3]),
                str(r[4]),
                None if r[5] is None else bytes(r[5]),
            )
            for r in rows
        ]

    def put_vectors(self, owner: str, model: str, rows: Sequence[tuple[VectorRow, bytes]]) -> None:
        """Keep each item's vector by ``model``, unless the item changed since it was read
        (the vector would be of text it no longer holds)."""
        with self._db.tx() as tx:
            tx.many(
                "UPDATE keyed_items SET vector_model = ?, vector = ? WHERE owner = ? AND "
                "namespace = ? AND key = ? AND updated_at = ?",
                [
                    (model, blob, owner, r.namespace, r.key, tx.time(r.updated_at))
                    for r, blob in rows
                ],
            )

    def namespaces(self, owner: str) -> list[str]:
        """Every namespace ``owner`` keeps an item in, sorted."""
        rows = self._db.rows(
            "SELECT DISTINCT namespace FROM keyed_items WHERE owner = ? ORDER BY namespace",
            (owner,),
        )
        return [str(r[0]) for r in rows]

    # writes ----------------------------------------------------------------------------
    def put(
        self, owner: str, namespace: str, key: str, value: str, body: str, now: datetime
    ) -> None:
        """Store ``value`` (JSON text) with the text search ranks on (``body``; empty:
        not searchable by query); an existing item keeps its ``created_at``."""
        body = scrub_deep(body)  # NUL and lone surrogates: text no backend stores
        with self._db.tx() as tx:
            if self._postgres:
                tx.run(
                    "INSERT INTO keyed_items (owner, namespace, key, value, body, created_at, "
                    "updated_at) VALUES (?, ?, ?, ?, ?, ?, ?) ON CONFLICT (owner, namespace, "
                    "key) DO UPDATE SET value = excluded.value, body = excluded.body, "
                    "updated_at = excluded.updated_at, vector_model = '', vector = NULL",
                    (
                        owner,
                        namespace,
                        key,
                        value,
                        fold_index_text(body),
                        tx.time(now),
                        tx.time(now),
                    ),
                )
            else:
                _put_sqlite(tx, owner, namespace, key, value, body, tx.time(now))

    def delete(self, owner: str, namespace: str, key: str) -> bool:
        with self._db.tx() as tx:
            gone = tx.run(
                "DELETE FROM keyed_items WHERE owner = ? AND namespace = ? AND key = ? "
                "RETURNING key",
                (owner, namespace, key),
            )
        return bool(gone)

    def count(self, owner: str | None = None) -> int:
        if owner is None:
            return int(self._db.rows("SELECT count(*) FROM keyed_items")[0][0])
        rows = self._db.rows("SELECT count(*) FROM keyed_items WHERE owner = ?", (owner,))
        return int(rows[0][0])


def _put_sqlite(
    tx: Tx, owner: str, namespace: str, key: str, value: str, body: str, now: Any
) -> None:
    found: Sequence[Any] = tx.run(
        "SELECT fts_row FROM keyed_items WHERE owner = ? AND namespace = ? AND key = ?",
        (owner, namespace, key),
    )
    if found:
        fts_row = int(found[0][0])
        tx.run(
            "UPDATE keyed_items SET value = ?, body = ?, updated_at = ?, vector_model = '', "
            "vector = NULL WHERE fts_row = ?",
            (value, body, now, fts_row),
        )
        tx.run("DELETE FROM keyed_fts WHERE rowid = ?", (fts_row,))
    else:
        (row,) = tx.run(
            "INSERT INTO keyed_items (owner, namespace, key, value, body, created_at, "
            "updated_at, fts_row) VALUES (?, ?, ?, ?, ?, ?, ?, (SELECT COALESCE(max(fts_row), "
            "0) + 1 FROM keyed_items)) RETURNING fts_row",
            (owner, namespace, key, value, body, now, now),
        )
        fts_row = int(row[0])
    if body:
        tx.run("INSERT INTO keyed_fts (rowid, body) VALUES (?, ?)", (fts_row, body))
