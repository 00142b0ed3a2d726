"""Pure decisions about jobs, tested with tables: no clock, no I/O — the caller passes
``now`` and the job's times. The store's SQL selects by the same rules."""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime, timedelta
from enum import StrEnum

__all__ = [
    "Ending",
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
    """Is ``claimed_by`` (``host:pid:random``, :func:`memoir.jobs.worker.default_worker_id`)
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
