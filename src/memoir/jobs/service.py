"""The jobs front: request (admitted once per kind, user and session), read, cancel.

``JobService.request`` asks the admission store first (one active job per key across
replicas with Redis; fail closed when Redis is configured and down), then writes the job
row under the database's own check (``store.jobs.create``). A request that loses the
admission race gets the winner's job: the winner writes its row within milliseconds, and
the loser waits up to ``wait_s`` for it. A key left behind by a job that has ended (its
worker died before letting go) is released and the admission tried again.
"""

from __future__ import annotations

import builtins
import logging
import time
import uuid
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

from memoir.errors import NotFound
from memoir.jobs.admission import Admission
from memoir.jobs.decisions import admission_key, is_active
from memoir.jobs.errors import AdmissionUnavailable
from memoir.jobs.values import Job, JobTiming
from memoir.store.job_rows import JobRow
from memoir.store.parts import JobsPart

__all__ = ["JobService"]

log = logging.getLogger(__name__)


def _now() -> datetime:
    return datetime.now(UTC)


class JobService:
    def __init__(
        self,
        jobs: JobsPart,
        admission: Admission,
        timing: JobTiming = JobTiming(),
        *,
        prefix: str = "memoir:",
        wait_s: float = 5.0,
        clock: Callable[[], datetime] = _now,
    ) -> None:
        self.jobs = jobs
        self.admission = admission
        self.timing = timing
        self._prefix = prefix
        self._wait_s = wait_s
        self._clock = clock

    # requests ---------------------------------------------------------------------------
    def request(
        self, kind: str, user: str, session_id: str, *, payload: dict[str, Any] | None = None
    ) -> Job:
        """A queued job of ``kind`` for ``user``'s ``session_id`` — or, while one is active,
        that one (a duplicate request is the same job). Raises ``AdmissionUnavailable`` when
        the configured admission store cannot be reached."""
        active = self.jobs.active(user, session_id, kind)
        if active is not None:  # a duplicate: no admission needed (nor Redis up)
            return self.seen(active)
        key = admission_key(self._prefix, kind, user, session_id)
        # the key outlives any run: a job is abandoned (and its key due to go) by then
        ttl_s = self.timing.abandon_s + self.timing.heartbeat_s
        for _ in range(3):
            job_id = uuid.uuid4().hex
            holder = self.admission.admit(key, job_id, ttl_s)
            if holder == job_id:
                row, created = self.jobs.create(
                    JobRow(
                        id=job_id,
                        kind=kind,
                        user=user,
                        session_id=session_id,
                        state="queued",
                        created_at=self._clock(),
                        data=dict(payload or {}),
                    )
                )
                if not created:  # the database knew an active job (admitted elsewhere)
                    self._let_go(key, job_id)
                return Job.from_row(row)
            found = self._await(holder, user, session_id, kind)
            if found is not None and is_active(found.state):
                return Job.from_row(found)
            self._let_go(key, holder)  # its job ended (or never got written): stale
        raise AdmissionUnavailable(
            f"could not admit a {kind} job for session {session_id}: the admission key "
            "keeps changing hands; try again"
        )

    def _await(self, job_id: str, user: str, session_id: str, kind: str) -> JobRow | None:
        """The row of the job admitted by another request, once written — or the active
        job the database holds instead (that request found one admitted elsewhere). None:
        neither within ``wait_s`` (its requester died between admission and the write)."""
        deadline = time.monotonic() + self._wait_s
        delay = 0.005
        while True:
            row = self.jobs.get(job_id) or self.jobs.active(user, session_id, kind)
            if row is not None or time.monotonic() >= deadline:
                return row
            time.sleep(delay)
            delay = min(delay * 2, 0.1)

    def _let_go(self, key: str, job_id: str) -> None:
        try:
            self.admission.release(key, job_id)
        except AdmissionUnavailable as exc:  # it expires by itself
            log.warning("could not release admission key %s: %s", key, exc)

    def finished(self, job: Job) -> None:
        """Let the admission key of a job that has ended go (a worker calls this)."""
        self._let_go(admission_key(self._prefix, job.kind, job.user, job.session_id), job.id)

    # reads ------------------------------------------------------------------------------
    def seen(self, row: JobRow) -> Job:
        """The job a row holds as a reader sees it now: stalled or not, its heartbeat's age."""
        return Job.from_row(row, now=self._clock(), heartbeat_s=self.timing.heartbeat_s)

    def get(self, job_id: str, *, user: str | None = None) -> Job | None:
        """The job ``job_id`` (of ``user``'s only, when given)."""
        row = self.jobs.get(job_id, user=user)
        return None if row is None else self.seen(row)

    def latest(self, user: str, session_id: str, kind: str | None = None) -> Job | None:
        """The newest job of ``user`` on ``session_id`` (of ``kind``), whatever its state."""
        row = self.jobs.latest(user, session_id, kind)
        return None if row is None else self.seen(row)

    def list(
        self, *, state: str | None = None, user: str | None = None, limit: int = 100
    ) -> builtins.list[Job]:
        """Jobs newest first, of one state and/or one user."""
        return [self.seen(r) for r in self.jobs.find(state=state, user=user, limit=limit)]

    # changes ----------------------------------------------------------------------------
    def cancel(self, job_id: str) -> Job:
        """Fail an active job as cancelled (its worker stops at its next progress report
        and writes nothing); a job that has ended is returned as it is."""
        row = self.jobs.get(job_id)
        if row is None:
            raise NotFound(f"no job {job_id!r}")
        if is_active(row.state):
            row = self.jobs.cancel(job_id, self._clock()) or row
            self.finished(Job.from_row(row))
        return Job.from_row(row)
