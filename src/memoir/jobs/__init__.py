"""Background jobs, generic over what a job does (a handler per kind, supplied by the
caller — ``app.py`` wires kind ``summary`` to the summaries engine): the worker loop here,
the job service and the values beside it.

- :mod:`values` — :class:`Job` (what an API shows), :class:`JobTiming` (the worker
  intervals), the pure rules (abandoned? claim expired? what ends a run) and the errors;
- :mod:`service` — :class:`JobService`: request (a duplicate is the same job), get,
  latest, list, cancel; admission, one active job per (kind, user, session): Redis
  compare-and-set across replicas, or a bounded in-process LRU;
- here — :class:`Worker`: claim, heartbeat, abort, fenced finish, resumption of
  abandoned jobs. Jobs are rows of the store's ``jobs`` part; the engine knows nothing of
  summaries.

The worker takes queued jobs and runs each through its kind's handler. A handler is
``handler(job, progress, abort) -> dict | None``: ``progress(phase, completed, total)``
records its progress (and raises :class:`JobAborted` once ``abort`` is set, or
:class:`Superseded` once the claim is gone, which stops a summarizer that reports through
it), ``progress.check()`` raises the same before the handler persists anything, ``abort``
is set when the worker stops or the job has run for ``abort_s``. What it returns is kept
in the job's data.

While a handler runs, a thread heartbeats every ``heartbeat_s``. Once the handler returns,
:func:`memoir.jobs.values.ending` decides: completed, failed, released to the queue (the
worker is stopping: another worker resumes it, its finished episodes cached), or nothing
(superseded). On start-up a worker puts back in the queue, at once, the running jobs of
workers of its own host whose process is gone (a replica restarted after ``kill -9``), and
the jobs abandoned anywhere (no heartbeat for ``abandon_s``: another host's dead worker,
which only time can tell); while it runs it fails, every ``heartbeat_s``, jobs whose worker
died (:data:`memoir.jobs.values.ABANDONED`). The claim's fence keeps a superseded writer
out either way.
"""

from __future__ import annotations

import logging
import os
import socket
import threading
import time
import uuid
from collections.abc import Callable, Mapping
from datetime import UTC, datetime
from typing import Any

from memoir.errors import MemoirError, StoreError
from memoir.jobs.service import Admission, JobService, LocalAdmission, RedisAdmission
from memoir.jobs.values import (
    ABANDONED,
    AdmissionUnavailable,
    Ending,
    Job,
    JobAborted,
    JobError,
    JobState,
    JobTiming,
    Superseded,
    ending,
    worker_gone,
)
from memoir.store.codec import JobRow

__all__ = [
    "ABANDONED",
    "Admission",
    "AdmissionUnavailable",
    "Job",
    "JobAborted",
    "JobError",
    "JobHandler",
    "JobProgress",
    "JobService",
    "JobState",
    "JobTiming",
    "LocalAdmission",
    "RedisAdmission",
    "Superseded",
    "Worker",
    "default_worker_id",
]


# the worker ---------------------------------------------------------------------------


log = logging.getLogger(__name__)


def _now() -> datetime:
    return datetime.now(UTC)


def default_worker_id() -> str:
    """host:pid:random — unique per worker, readable in ``memoir jobs show``."""
    return f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:8]}"


def process_alive(pid: int) -> bool:
    """Does a process ``pid`` run on this host (any user's)?"""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # it runs, as another user
        return True
    return True


class JobProgress:
    """What a handler reports progress through (a ``summaries.episodic.Progress``)."""

    def __init__(
        self,
        service: JobService,
        row: JobRow,
        abort: threading.Event,
        lost: threading.Event,
        clock: Callable[[], datetime] = _now,
    ) -> None:
        self._jobs = service.jobs
        self._row = row
        self._abort = abort
        self._lost = lost
        self._clock = clock

    def __call__(self, phase: str, completed: int, total: int) -> None:
        self._stop_if_told()
        row = self._row
        assert row.claimed_by is not None and row.source_hash is not None
        kept = self._jobs.progress(
            row.id,
            row.claimed_by,
            row.source_hash,
            phase=phase,
            completed=completed,
            total=total,
            now=self._clock(),
        )
        if not kept:
            self._superseded()

    def check(self) -> None:
        """Raise ``JobAborted`` / ``Superseded`` unless the job may go on and persist."""
        self._stop_if_told()
        row = self._row
        assert row.claimed_by is not None and row.source_hash is not None
        if not self._jobs.holds(row.id, row.claimed_by, row.source_hash):
            self._superseded()

    def _stop_if_told(self) -> None:
        if self._lost.is_set():
            raise Superseded(f"job {self._row.id}: this worker's claim is gone")
        if self._abort.is_set():
            raise JobAborted(f"job {self._row.id} was told to stop")

    def _superseded(self) -> None:
        self._lost.set()
        self._abort.set()
        raise Superseded(f"job {self._row.id}: this worker's claim is gone")


JobHandler = Callable[[Job, JobProgress, threading.Event], "dict[str, Any] | None"]


class Worker:
    def __init__(
        self,
        service: JobService,
        handlers: Mapping[str, JobHandler],
        *,
        worker_id: str | None = None,
        poll_s: float = 1.0,
        clock: Callable[[], datetime] = _now,
    ) -> None:
        self.service = service
        self.handlers = dict(handlers)
        self.worker_id = worker_id or default_worker_id()
        self.poll_s = poll_s
        self._clock = clock
        self._last_sweep = float("-inf")

    @property
    def timing(self) -> Any:
        return self.service.timing

    # the loop ---------------------------------------------------------------------------
    def run(self, stop: threading.Event) -> None:
        """Resume abandoned jobs, then take jobs until ``stop`` is set; a job running when
        it is set is told to stop and, unless it finishes first, released to the queue."""
        try:
            self.start_up()
        except StoreError as exc:
            log.warning("worker %s: could not resume abandoned jobs: %s", self.worker_id, exc)
        while not stop.is_set():
            try:
                if time.monotonic() - self._last_sweep >= self.timing.heartbeat_s:
                    self.sweep()
                job = self.run_once(stop)
            except StoreError as exc:  # the database is away: try again later
                log.warning("worker %s: %s", self.worker_id, exc)
                job = None
            if job is None:
                stop.wait(self.poll_s)

    def start_up(self) -> list[Job]:
        """Put jobs of dead workers back in the queue (this worker takes them next, their
        episodes cached): at once those of this host's workers whose process is gone,
        after ``abandon_s`` those of any other; the jobs resumed."""
        rows = self.take_over_local()
        rows += self.service.jobs.abandon(
            self._clock(), self.timing.abandon_s, error=ABANDONED, requeue=True
        )
        for row in rows:
            log.info(
                "worker %s: resuming abandoned job %s",
                self.worker_id,
                row.id,
                extra={"job_id": row.id},
            )
        return [Job.from_row(r) for r in rows]

    def take_over_local(self, alive: Callable[[int], bool] = process_alive) -> list[JobRow]:
        """Running jobs claimed by a worker of this host whose process is gone, released to
        the queue (fenced on that worker's claim: one another worker took meanwhile stays
        its own); the rows released, as they were."""
        host = socket.gethostname()
        released = []
        for row in self.service.jobs.find(state="running", limit=1000):
            if not worker_gone(row.claimed_by, host, alive) or row.claimed_by is None:
                continue
            if self.service.jobs.release(row.id, row.claimed_by, row.source_hash or ""):
                released.append(row)
        return released

    def sweep(self) -> list[Job]:
        """Fail jobs whose worker stopped heartbeating (``abandon_s``); the jobs failed."""
        self._last_sweep = time.monotonic()
        rows = self.service.jobs.abandon(
            self._clock(), self.timing.abandon_s, error=ABANDONED, requeue=False
        )
        jobs = [Job.from_row(r) for r in rows]
        for job in jobs:
            log.warning("job %s abandoned by its worker", job.id, extra={"job_id": job.id})
            self.service.finished(job)
        return jobs

    def run_once(self, stop: threading.Event | None = None) -> Job | None:
        """Claim one job and run it to its end; the job as it ended (None: none queued)."""
        stop = stop or threading.Event()
        row = self.service.jobs.claim(
            self.worker_id,
            now=self._clock(),
            claim_s=self.timing.claim_s,
            kinds=sorted(self.handlers),
        )
        if row is None:
            return None
        job = Job.from_row(row)
        log.info(
            "worker %s: running job %s (%s)",
            self.worker_id,
            job.id,
            job.kind,
            extra={"job_id": job.id},
        )
        abort, lost, timed_out, done = (threading.Event() for _ in range(4))
        beat = threading.Thread(
            target=self._beat,
            args=(row, stop, abort, lost, timed_out, done),
            name=f"memoir-job-heartbeat-{job.id[:8]}",
            daemon=True,
        )
        beat.start()
        progress = JobProgress(self.service, row, abort, lost, self._clock)
        raised: BaseException | None = None
        data: dict[str, Any] | None = None
        try:
            data = self.handlers[job.kind](job, progress, abort)
        except Exception as exc:
            raised = exc
        finally:
            done.set()
            beat.join()
        self._end(row, raised, data, stop, lost, timed_out)
        return self.service.get(job.id) or job

    # the parts --------------------------------------------------------------------------
    def _beat(
        self,
        row: JobRow,
        stop: threading.Event,
        abort: threading.Event,
        lost: threading.Event,
        timed_out: threading.Event,
        done: threading.Event,
    ) -> None:
        timing = self.timing
        started = time.monotonic()
        last = started
        tick = min(timing.heartbeat_s, 0.1)
        assert row.claimed_by is not None and row.source_hash is not None
        while not done.wait(tick):
            now = time.monotonic()
            if stop.is_set():
                abort.set()
            if now - started >= timing.abort_s and not timed_out.is_set():
                timed_out.set()
                abort.set()
            if now - last < timing.heartbeat_s:
                continue
            last = now
            try:
                kept = self.service.jobs.heartbeat(
                    row.id, row.claimed_by, row.source_hash, self._clock()
                )
            except StoreError as exc:  # one missed beat; abandonment is far longer
                log.warning("job %s: heartbeat failed: %s", row.id, exc, extra={"job_id": row.id})
                continue
            if not kept:
                lost.set()
                abort.set()

    def _end(
        self,
        row: JobRow,
        raised: BaseException | None,
        data: dict[str, Any] | None,
        stop: threading.Event,
        lost: threading.Event,
        timed_out: threading.Event,
    ) -> None:
        jobs, worker, fence = self.service.jobs, self.worker_id, row.source_hash
        assert fence is not None
        what = ending(
            raised=raised is not None,
            superseded=lost.is_set() or isinstance(raised, Superseded),
            aborted=isinstance(raised, JobAborted),
            stopping=stop.is_set() and not timed_out.is_set(),
        )
        now = self._clock()
        if what is Ending.DROP:
            log.warning(
                "job %s: superseded; this worker's result is not kept",
                row.id,
                extra={"job_id": row.id},
            )
            return
        if what is Ending.RELEASE:
            if jobs.release(row.id, worker, fence):
                log.info(
                    "job %s released to the queue (worker stopping)",
                    row.id,
                    extra={"job_id": row.id},
                )
            return
        if what is Ending.COMPLETE:
            kept = jobs.complete(row.id, worker, fence, now, data)
        else:
            assert raised is not None
            kept = jobs.fail(row.id, worker, fence, self._message(raised, timed_out), now)
            if not isinstance(raised, MemoirError):
                log.error("job %s failed", row.id, exc_info=raised, extra={"job_id": row.id})
        if kept:
            self.service.finished(Job.from_row(row))
        else:
            log.warning(
                "job %s: claim lost before it finished; the result is not kept",
                row.id,
                extra={"job_id": row.id},
            )

    def _message(self, exc: BaseException, timed_out: threading.Event) -> str:
        if timed_out.is_set() and isinstance(exc, JobAborted):
            return (
                f"the job ran for {self.timing.abort_s:g} s and was stopped; retry to reuse "
                "completed episodes"
            )
        if isinstance(exc, MemoirError):
            return str(exc) or type(exc).__name__
        return f"internal error: {type(exc).__name__}: {exc}"
