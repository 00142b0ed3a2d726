"""The values of the ``jobs`` table as the store reads and writes them (the jobs engine
turns them into :class:`memoir.jobs.Job`)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from memoir.store.codec import from_iso, loads, stored_time, value_from_row

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
    convert: dict[str, Callable[[Any], Any]] = {
        "phase": lambda v: v or "",
        "error": lambda v: v or "",
        "created_at": stored_time,
        "data": lambda v: loads(v) or {},
        **dict.fromkeys(("completed", "total", "attempts"), lambda v: int(v or 0)),
        **dict.fromkeys(("started_at", "finished_at", "heartbeat_at", "claimed_at"), from_iso),
    }
    return value_from_row(JobRow, JOB_COLS, r, convert=convert, rename={"user_name": "user"})
