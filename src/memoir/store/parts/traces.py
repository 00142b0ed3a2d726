"""Traces: what a compaction or a long-history summary did, kept for inspection."""

from __future__ import annotations

from typing import Any

from memoir.store.codec import dumps, loads, stored_time
from memoir.store.db import Part
from memoir.store.values import TraceRow

__all__ = ["TracesPart"]


class TracesPart(Part):
    def record(self, row: TraceRow) -> None:
        with self._db.tx() as tx:
            tx.run(
                "INSERT INTO traces (session_id, kind, at, data) VALUES (?, ?, ?, ?)",
                (row.session_id, row.kind, tx.time(row.at), dumps(row.data)),
            )

    def find(self, session_id: str | None = None, kind: str | None = None) -> list[TraceRow]:
        """Traces of a session and/or a kind (every one when neither is given), oldest first."""
        pairs = [(k, v) for k, v in (("session_id", session_id), ("kind", kind)) if v is not None]
        where = " WHERE " + " AND ".join(f"{k} = ?" for k, _ in pairs) if pairs else ""
        rows = self._db.rows(
            f"SELECT session_id, kind, at, data FROM traces{where} ORDER BY at, id",
            [v for _, v in pairs],
        )
        return [_trace(r) for r in rows]


def _trace(r: Any) -> TraceRow:
    return TraceRow(session_id=r[0], kind=r[1], at=stored_time(r[2]), data=loads(r[3]))
