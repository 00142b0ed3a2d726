"""The values of the ``jobs`` table as the store reads and writes them (the jobs engine
turns them into :class:`memoir.jobs.Job`)."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from memoir.store.codec import from_iso, loads, stored_time

__all__ = ["ACTIVE_STATES", "JOB_COLS", "JobRow", "job_from_row"]

ACTIVE_STATES = ("queued", "running")

JOB_COLS = (
    "id, kind, user_name, session_id, state, phase, completed, total, error, created_at, "
    "started_at, finished_at, heartbeat_at, claimed_by, claimed_at, source_hash, attempts, data"
)


@dataclass(frozen=True, slots=True)
class JobRow:
    id: str
    kind: str
    user: str
    session_id: str
    state: str  # queued | running | completed | failed
    created_at: datetime
    phase: str = ""
    completed: int = 0
    total: int = 0
    error: str = ""
    started_at: datetime | None = None
    finished_at: datetime | None = None
    heartbeat_at: datetime | None = None
    claimed_by: str | None = None
    claimed_at: datetime | None = None
    source_hash: str | None = None
    attempts: int = 0
    data: dict[str, Any] = field(default_factory=dict)


def job_from_row(r: Any) -> JobRow:
    """A row selected as :data:`JOB_COLS`."""
    return JobRow(
        id=r[0],
        kind=r[1],
        user=r[2],
        session_id=r[3],
        state=r[4],
        phase=r[5] or "",
        completed=int(r[6] or 0),
        total=int(r[7] or 0),
        error=r[8] or "",
        created_at=stored_time(r[9]),
        started_at=from_iso(r[10]),
        finished_at=from_iso(r[11]),
        heartbeat_at=from_iso(r[12]),
        claimed_by=r[13],
        claimed_at=from_iso(r[14]),
        source_hash=r[15],
        attempts=int(r[16] or 0),
        data=loads(r[17]) or {},
    )
