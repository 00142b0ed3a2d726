"""Compaction checkpoints: a compaction persisted, so later turns replay it (and memory
extraction reads its frozen boundary)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from memoir.store.codec import dumps, loads, stored_time, value_from_row
from memoir.store.db import Part
from memoir.store.values import CheckpointRow

__all__ = ["CheckpointsPart"]

_COLS = "id, session_id, created_at, watermark, memory_boundary, disposition, previous_id, data"


class CheckpointsPart(Part):
    def put(self, row: CheckpointRow) -> None:
        with self._db.tx() as tx:
            tx.run(
                f"INSERT INTO checkpoints ({_COLS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?) "
                "ON CONFLICT (id) DO UPDATE SET session_id = excluded.session_id, "
                "created_at = excluded.created_at, watermark = excluded.watermark, "
                "memory_boundary = excluded.memory_boundary, "
                "disposition = excluded.disposition, previous_id = excluded.previous_id, "
                "data = excluded.data",
                (
                    row.id,
                    row.session_id,
                    tx.time(row.created_at),
                    row.watermark,
                    row.memory_boundary,
                    row.disposition,
                    row.previous_id,
                    dumps(row.data),
                ),
            )

    def of(self, session_id: str) -> list[CheckpointRow]:
        """A session's checkpoints, oldest first."""
        rows = self._db.rows(
            f"SELECT {_COLS} FROM checkpoints WHERE session_id = ? ORDER BY created_at, id",
            (session_id,),
        )
        return [_checkpoint(r) for r in rows]

    def latest_at_or_below(
        self, session_id: str, boundary: int, *, limit: int = 8
    ) -> list[CheckpointRow]:
        """The session's newest eligible checkpoints whose memory boundary is at or below
        ``boundary`` (an index seek, however many checkpoints the session has)."""
        rows = self._db.rows(
            f"SELECT {_COLS} FROM checkpoints WHERE session_id = ? AND disposition = ? "
            "AND memory_boundary <= ? ORDER BY memory_boundary DESC, created_at DESC, id "
            f"LIMIT {int(limit)}",
            (session_id, "eligible", boundary),
        )
        return [_checkpoint(r) for r in rows]

    def past_memory_cursor(self) -> list[CheckpointRow]:
        """Checkpoints whose memory boundary lies past their session's memory cursor
        (what memory recovery looks at), oldest first."""
        cols = ", ".join(f"c.{c.strip()}" for c in _COLS.split(","))
        rows = self._db.rows(
            f"SELECT {cols} FROM checkpoints c LEFT JOIN memory_cursors m "
            "ON m.session_id = c.session_id WHERE c.memory_boundary > coalesce(m.through, 0) "
            "ORDER BY c.created_at, c.id"
        )
        return [_checkpoint(r) for r in rows]


def _checkpoint(r: Any) -> CheckpointRow:
    convert: dict[str, Callable[[Any], Any]] = {
        "created_at": stored_time,
        "watermark": int,
        "memory_boundary": int,
        "data": loads,
    }
    return value_from_row(CheckpointRow, _COLS, r, convert=convert)
