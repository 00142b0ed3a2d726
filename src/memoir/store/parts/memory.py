"""Long-term memory's lane state per session: the committed cursor, the durable queue of
operations, the one pending failure, policy denial markers, receipts — and the
settlement that writes an operation's outcome in one transaction."""

from __future__ import annotations

from datetime import UTC, datetime

from memoir.errors import ConcurrentWrite, StoreError
from memoir.store.codec import dumps
from memoir.store.db import Db, Part, Tx
from memoir.store.memory_rows import (
    DENIAL_COLS,
    OP_COLS,
    PENDING_COLS,
    RECEIPT_COLS,
    DenialRow,
    MemoryOpRow,
    PendingRow,
    ReceiptRow,
    Settlement,
    denial_from_row,
    op_from_row,
    pending_from_row,
    receipt_from_row,
)
from memoir.store.memory_sql import ItemWriter

__all__ = ["MemoryPart"]


def _marks(cols: str) -> str:
    return ", ".join("?" for _ in cols.split(","))


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
                f"INSERT INTO memory_ops ({OP_COLS}) VALUES ({_marks(OP_COLS)}) "
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
                f"INSERT INTO memory_denials ({DENIAL_COLS}) VALUES ({_marks(DENIAL_COLS)}) "
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
                self.items.save(tx, item)
            if s.pending is not None:
                self._put_pending(tx, s.pending)
            elif s.clear_pending:
                tx.run("DELETE FROM memory_pending WHERE session_id = ?", (r.session_id,))
            for op in {r.operation_id, *s.done_ops}:
                tx.run("DELETE FROM memory_ops WHERE operation_id = ?", (op,))
        return True

    def _put_receipt(self, tx: Tx, r: ReceiptRow) -> bool:
        added = tx.run(
            f"INSERT INTO memory_receipts ({RECEIPT_COLS}) VALUES ({_marks(RECEIPT_COLS)}) "
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
            f"INSERT INTO memory_pending ({PENDING_COLS}) VALUES ({_marks(PENDING_COLS)})",
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
