"""Job values: the job as callers see it, and the intervals that govern workers."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Literal

from memoir.config import Settings, check_job_intervals
from memoir.jobs.decisions import stalled
from memoir.store.job_rows import JobRow

__all__ = ["ABANDONED", "Job", "JobState", "JobTiming"]

JobState = Literal["queued", "running", "completed", "failed"]

# what a job abandoned by its worker says (its completed episodes are cached for an hour)
ABANDONED = "the worker stopped sending heartbeats; retry to reuse completed episodes"


@dataclass(frozen=True, slots=True)
class Job:
    id: str
    kind: str
    user: str
    session_id: str
    state: JobState
    phase: str = ""
    completed: int = 0
    total: int = 0
    error: str = ""
    created_at: datetime | None = None
    started_at: datetime | None = None
    finished_at: datetime | None = None
    heartbeat_at: datetime | None = None
    attempts: int = 0
    data: dict[str, Any] = field(default_factory=dict)
    worker: str | None = None  # the worker holding it (host:pid:random), while it runs
    stalled: bool = False  # running, and its worker missed three heartbeats
    heartbeat_age_s: float | None = None  # seconds since its last heartbeat, while running

    @property
    def active(self) -> bool:
        return self.state in ("queued", "running")

    @classmethod
    def from_row(
        cls, row: JobRow, *, now: datetime | None = None, heartbeat_s: float | None = None
    ) -> Job:
        """The job a row holds; with ``now`` and ``heartbeat_s``, also whether it has
        stalled and how old its last heartbeat is."""
        age: float | None = None
        is_stalled = False
        if now is not None and row.state == "running":
            last = row.heartbeat_at or row.claimed_at or row.created_at
            age = round(max((now - last).total_seconds(), 0.0), 1)
            if heartbeat_s is not None:
                is_stalled = stalled(
                    row.state, row.heartbeat_at, row.claimed_at, row.created_at, now, heartbeat_s
                )
        return cls(
            id=row.id,
            kind=row.kind,
            user=row.user,
            session_id=row.session_id,
            state=row.state,  # type: ignore[arg-type]
            phase=row.phase,
            completed=row.completed,
            total=row.total,
            error=row.error,
            created_at=row.created_at,
            started_at=row.started_at,
            finished_at=row.finished_at,
            heartbeat_at=row.heartbeat_at,
            attempts=row.attempts,
            data=dict(row.data),
            worker=row.claimed_by if row.state == "running" else None,
            stalled=is_stalled,
            heartbeat_age_s=age,
        )

    def to_json(self) -> dict[str, Any]:
        """The job as an API shows it: its worker's id while one holds it, and whether it
        has stalled (no heartbeat for three intervals: the worker may be dead)."""

        def iso(t: datetime | None) -> str | None:
            return None if t is None else t.isoformat()

        return {
            "id": self.id,
            "kind": self.kind,
            "session": self.session_id,
            "state": self.state,
            "phase": self.phase,
            "completed": self.completed,
            "total": self.total,
            "error": self.error or None,
            "attempts": self.attempts,
            "created_at": iso(self.created_at),
            "started_at": iso(self.started_at),
            "finished_at": iso(self.finished_at),
            "heartbeat_at": iso(self.heartbeat_at),
            "worker": self.worker,
            "stalled": self.stalled,
            "heartbeat_age_s": self.heartbeat_age_s,
        }


@dataclass(frozen=True, slots=True)
class JobTiming:
    """Worker intervals in seconds (``MEMOIR_JOB_*_S``): a heartbeat every
    ``heartbeat_s``, the abort signal at ``abort_s`` of running, a claim another worker may
    take over after ``claim_s``, abandonment after ``abandon_s`` without a heartbeat — so
    the claim has expired before a job is abandoned."""

    heartbeat_s: float = 10.0
    abort_s: float = 600.0
    claim_s: float = 900.0
    abandon_s: float = 930.0

    def __post_init__(self) -> None:
        check_job_intervals(self.heartbeat_s, self.abort_s, self.claim_s, self.abandon_s)

    @classmethod
    def from_settings(cls, settings: Settings) -> JobTiming:
        return cls(
            heartbeat_s=settings.job_heartbeat_s,
            abort_s=settings.job_abort_s,
            claim_s=settings.job_claim_s,
            abandon_s=settings.job_abandon_s,
        )
