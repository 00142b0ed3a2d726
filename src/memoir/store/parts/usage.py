"""The usage ledger: one row per model call (tokens, latency, outcome)."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from memoir.llm.port import UsageRecord
from memoir.store.codec import stored_time
from memoir.store.db import Part

__all__ = ["UsagePart"]

_COLS = (
    "at, provider, model, purpose, outcome, input_tokens, output_tokens, latency_ms, "
    "user_name, session_id, job_id, request_id"
)


class UsagePart(Part):
    def record(self, record: UsageRecord) -> None:
        with self._db.tx() as tx:
            tx.run(
                f"INSERT INTO usage ({_COLS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
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
                ),
            )

    def records(self, since: datetime | None = None) -> list[UsageRecord]:
        with self._db.ro() as tx:
            if since is None:
                rows = tx.run(f"SELECT {_COLS} FROM usage ORDER BY at, id")
            else:
                rows = tx.run(
                    f"SELECT {_COLS} FROM usage WHERE at >= ? ORDER BY at, id",
                    (tx.time(since),),
                )
        return [_usage(r) for r in rows]


def _usage(r: Any) -> UsageRecord:
    return UsageRecord(
        at=stored_time(r[0]),
        provider=r[1],
        model=r[2],
        purpose=r[3],
        outcome=r[4],
        input_tokens=int(r[5]),
        output_tokens=int(r[6]),
        latency_ms=float(r[7]),
        user=r[8],
        session=r[9],
        job_id=r[10],
        request_id=r[11],
    )
