"""The usage ledger: one row per model call (tokens, latency, outcome)."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from memoir.llm.port import UsageRecord
from memoir.model.event import LOCAL_USER
from memoir.store.codec import stored_time, value_from_row
from memoir.store.db import Part

__all__ = ["UsagePart"]

_COLS = (
    "at, provider, model, purpose, outcome, input_tokens, output_tokens, latency_ms, "
    "user_name, session_id, job_id, request_id, redacted"
)


class UsagePart(Part):
    def record(self, record: UsageRecord) -> None:
        with self._db.tx() as tx:
            tx.run(
                f"INSERT INTO usage ({_COLS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (
                    tx.time(record.at),
                    record.provider,
                    record.model,
                    record.purpose,
                    record.outcome,
                    record.input_tokens,
                    record.output_tokens,
                    float(record.latency_ms),
                    record.user,
                    record.session,
                    record.job_id,
                    record.request_id,
                    record.redacted,
                ),
            )

    def records(
        self, since: datetime | None = None, *, owner: str | None = None
    ) -> list[UsageRecord]:
        """The calls recorded (since ``since``), oldest first; ``owner``: those made for
        that user — recorded with their name, or for one of their sessions; for the local
        user also the calls the home made for no user and no session (a sync's)."""
        clauses: list[str] = []
        params: list[Any] = []
        with self._db.ro() as tx:
            if since is not None:
                clauses.append("at >= ?")
                params.append(tx.time(since))
            if owner is not None:  # each branch one index seek (v19), not a scan of all
                home = (
                    " UNION ALL SELECT id FROM usage WHERE user_name IS NULL AND session_id IS NULL"
                    if owner == LOCAL_USER
                    else ""
                )
                clauses.append(
                    "id IN (SELECT id FROM usage WHERE user_name = ? UNION ALL "
                    "SELECT u.id FROM sessions s JOIN usage u ON u.session_id = s.id "
                    f"WHERE s.user_name = ?{home})"
                )
                params += [owner, owner]
            where = f" WHERE {' AND '.join(clauses)}" if clauses else ""
            rows = tx.run(f"SELECT {_COLS} FROM usage{where} ORDER BY at, id", params)
        return [_usage(r) for r in rows]


def _usage(r: Any) -> UsageRecord:
    return value_from_row(
        UsageRecord,
        _COLS,
        r,
        convert={
            "at": stored_time,
            "input_tokens": int,
            "output_tokens": int,
            "latency_ms": float,
            "redacted": int,
        },
        rename={"user_name": "user", "session_id": "session"},
    )
