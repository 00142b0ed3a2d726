"""Job values, the pure rules about jobs, and the jobs engine's errors.

Values: :class:`Job` (the job as callers see it) and :class:`JobTiming` (the intervals that
govern workers). Decisions are tested with tables: no clock, no I/O — the caller passes
``now`` and the job's times; the store's SQL selects by the same rules. Errors, under
:class:`memoir.errors.MemoirError`::

MemoirError
└── JobError                 a job could not be admitted or run
    ├── AdmissionUnavailable the configured admission store (Redis) cannot be reached:
    │                        new jobs fail closed (an HTTP server answers 503) while
    │                        every read keeps working from the database
    ├── Superseded           this worker's claim is gone (expired and retaken, or the
    │                        job cancelled): nothing it writes is kept
    └── JobAborted           the job's abort signal is set (worker stopping, or past
                             its abort interval): raised from its progress report
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from enum import StrEnum
from typing import Any, Literal

from memoir.config import Settings, check_job_intervals
from memoir.errors import MemoirError
from memoir.store.codec import JobRow

__all__ = [
    "ABANDONED",
    "AdmissionUnavailable",
    "Ending",
    "Job",
    "JobAborted",
    "JobError",
    "JobState",
    "JobTiming",
    "Superseded",
    "abandoned",
    "admission_key",
    "claim_expired",
    "claimable",
    "ending",
    "is_active",
    "should_abort",
    "stalled",
    "worker_gone",
]


class JobError(MemoirError):
    """A job could not be admitted or run."""


class AdmissionUnavailable(JobError):
    """The configured admission store cannot be reached; no new job is admitted."""


class Superseded(JobError):
    """This worker no longer holds the job's claim; its result is not persisted."""


class JobAborted(JobError):
    """Raised from a job's progress report once its abort signal is set (the worker is
    stopping, or the job ran past its abort interval): the handler stops there."""


STALLED_BEATS = 3  # heartbeats missed before a running job is reported as stalled

_ACTIVE = ("queued", "running")


def is_active(state: str) -> bool:
    """A queued or running job is active: a second request for its session is a duplicate
    and gets this job."""
    return state in _ACTIVE


def claim_expired(state: str, claimed_at: datetime | None, now: datetime, claim_s: float) -> bool:
    """A running job whose claim is older than ``claim_s``: another worker may take it
    over (the old worker, if still alive, is superseded)."""
    if state != "running" or claimed_at is None:
        return False
    return now - claimed_at > timedelta(seconds=claim_s)


def claimable(state: str, claimed_at: datetime | None, now: datetime, claim_s: float) -> bool:
    """May a worker claim this job now? Queued ones, and running ones with an expired claim."""
    return state == "queued" or claim_expired(state, claimed_at, now, claim_s)


def abandoned(
    state: str,
    heartbeat_at: datetime | None,
    claimed_at: datetime | None,
    created_at: datetime,
    now: datetime,
    abandon_s: float,
) -> bool:
    """A running job with no heartbeat (or, before its first, no claim) for ``abandon_s``:
    its worker died."""
    if state != "running":
        return False
    last = heartbeat_at or claimed_at or created_at
    return now - last > timedelta(seconds=abandon_s)


def stalled(
    state: str,
    heartbeat_at: datetime | None,
    claimed_at: datetime | None,
    created_at: datetime,
    now: datetime,
    heartbeat_s: float,
) -> bool:
    """A running job whose worker missed :data:`STALLED_BEATS` heartbeats: shown as
    stalled (nobody may be working on it) long before it is :func:`abandoned`."""
    if state != "running":
        return False
    last = heartbeat_at or claimed_at or created_at
    return now - last > timedelta(seconds=STALLED_BEATS * heartbeat_s)


def worker_gone(claimed_by: str | None, host: str, alive: Callable[[int], bool]) -> bool:
    """Is ``claimed_by`` (``host:pid:random``, :func:`memoir.jobs.default_worker_id`)
    a worker of this ``host`` whose process is gone? ``alive(pid)`` says whether a process
    runs. Another host's worker, or an id of another shape, is never judged here."""
    if not claimed_by:
        return False
    parts = claimed_by.rsplit(":", 2)
    if len(parts) != 3 or parts[0] != host or not parts[1].isdigit():
        return False
    return not alive(int(parts[1]))


def should_abort(started: datetime, now: datetime, abort_s: float) -> bool:
    """Has this run gone on for ``abort_s``? Then the handler is told to stop."""
    return now - started >= timedelta(seconds=abort_s)


class Ending(StrEnum):
    COMPLETE = "complete"  # the handler returned: persist completed (fenced)
    FAIL = "fail"  # it failed, or ran past its abort interval: persist failed (fenced)
    RELEASE = "release"  # the worker is stopping: back to the queue for another worker
    DROP = "drop"  # the claim is gone: write nothing, the replacement's result stands


def ending(*, raised: bool, superseded: bool, aborted: bool, stopping: bool) -> Ending:
    """What a worker does with a job once its handler has returned (``raised``: with an
    exception; ``aborted``: the exception was the abort signal's) — ``superseded``: the
    worker learned its claim was gone; ``stopping``: the worker is shutting down."""
    if superseded:
        return Ending.DROP
    if not raised:
        return Ending.COMPLETE
    if aborted and stopping:
        return Ending.RELEASE
    return Ending.FAIL


def admission_key(prefix: str, kind: str, user: str, session_id: str) -> str:
    """The admission key of one (kind, user, session): one active job each."""
    return f"{prefix}job:{kind}:{len(user)}:{user}:{session_id}"


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
