"""Summary rows: what the database summary store (``MEMOIR_SUMMARY_STORE=database``) keeps
per session."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from memoir.store.codec import from_iso, value_from_row
from memoir.store.db import Part
from memoir.store.values import SummaryRow

__all__ = ["SummariesPart"]

_COLS = (
    "session_id, kind, body, covered, last_exchange, attempts, last_attempt_ms, "
    "resummary_attempts, resummary_last_attempt_ms, model, message, updated_at"
)


class SummariesPart(Part):
    def get(self, session_id: str) -> SummaryRow | None:
        rows = self._db.rows(f"SELECT {_COLS} FROM summaries WHERE session_id = ?", (session_id,))
        return _summary(rows[0]) if rows else None

    def put(self, row: SummaryRow) -> None:
        updated = row.updated_at or datetime.now(UTC)
        with self._db.tx() as tx:
            tx.run(
                f"INSERT INTO summaries ({_COLS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, "
                "?, ?) ON CONFLICT (session_id) DO UPDATE SET kind = excluded.kind, "
                "body = excluded.body, covered = excluded.covered, "
                "last_exchange = excluded.last_exchange, attempts = excluded.attempts, "
                "last_attempt_ms = excluded.last_attempt_ms, "
                "resummary_attempts = excluded.resummary_attempts, "
                "resummary_last_attempt_ms = excluded.resummary_last_attempt_ms, "
                "model = excluded.model, message = excluded.message, "
                "updated_at = excluded.updated_at",
                (
                    row.session_id,
                    row.kind,
                    row.body,
                    row.covered,
                    row.last_exchange,
                    row.attempts,
                    row.last_attempt_ms,
                    row.resummary_attempts,
                    row.resummary_last_attempt_ms,
                    row.model,
                    row.message,
                    tx.time(updated),
                ),
            )

    def all(self) -> list[SummaryRow]:
        return [
            _summary(r) for r in self._db.rows(f"SELECT {_COLS} FROM summaries ORDER BY session_id")
        ]


def _summary(r: Any) -> SummaryRow:
    ints = dict.fromkeys(("covered", "attempts", "last_attempt_ms"), int)
    return value_from_row(SummaryRow, _COLS, r, convert={**ints, "updated_at": from_iso})
