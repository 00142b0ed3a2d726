"""The jobs front: request (admitted once per kind, user and session), read, cancel.

``JobService.request`` asks the admission store first (one active job per key across
replicas with Redis; fail closed when Redis is configured and down), then writes the job
row under the database's own check (``store.jobs.create``). A request that loses the
admission race gets the winner's job: the winner writes its row within milliseconds, and
the loser waits up to ``wait_s`` for it. A key left behind by a job that has ended (its
worker died before letting go) is released and the admission tried again.

Admission — at most one active job per (kind, user, session), decided before the job row
is written — is the narrow port :class:`Admission`; two implementations ship:

- :class:`RedisAdmission` — a compare-and-set in a Lua script (``SET`` only when the key
  is absent, with an expiry, else the job id already there), so every replica behind a load
  balancer sees the same active job. Redis configured but unreachable raises
  :class:`AdmissionUnavailable`: new jobs fail closed (an HTTP server answers 503) while
  reads go on from the database.
- :class:`LocalAdmission` — a bounded in-process LRU (no Redis configured). It is
  **instance-local**: two replicas each admit their own job; the database's admission
  check (``store.jobs.create``: one active job per kind, user and session, serialized per
  key) and its claims still keep two workers from writing one summary at once.

Both are fakes a user may test with: ``LocalAdmission`` needs nothing.
"""

from __future__ import annotations

import builtins
import logging
import threading
import time
import uuid
from collections import OrderedDict
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any, Protocol

from memoir.config import mask_url
from memoir.errors import NotFound, install_hint
from memoir.jobs.values import AdmissionUnavailable, Job, JobTiming, admission_key, is_active
from memoir.store.codec import JobRow
from memoir.store.parts import JobsPart

__all__ = ["Admission", "JobService", "LocalAdmission", "RedisAdmission"]

# KEYS[1] the key; ARGV[1] the job id asking; ARGV[2] the expiry in ms → the holder's id
_ADMIT = """
local held = redis.call('GET', KEYS[1])
if held then return held end
redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2])
return ARGV[1]
"""
# delete the key only while it still names this job (a later job's key stays)
_RELEASE = """
if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end
return 0
"""


class Admission(Protocol):
    shared: bool  # True: one decision across every replica using the same store

    def admit(self, key: str, job_id: str, ttl_s: float) -> str:
        """Hold ``key`` for ``job_id`` for ``ttl_s`` unless another job holds it: the id
        of the job holding it now (``job_id`` when admitted). Raises
        ``AdmissionUnavailable`` when the store behind it cannot be reached."""
        ...

    def release(self, key: str, job_id: str) -> None:
        """Let ``key`` go if ``job_id`` still holds it."""
        ...

    def check(self) -> None:
        """Raise ``AdmissionUnavailable`` when admission cannot work now (readiness)."""
        ...


class LocalAdmission:
    """Admission within this process: an LRU of at most ``cap`` keys, each expiring after
    its ``ttl_s``; the least recently used key goes first when full."""

    shared = False

    def __init__(self, cap: int = 10_000, clock: Callable[[], float] = time.monotonic) -> None:
        if cap < 1:
            raise ValueError("cap must be at least 1")
        self.cap = cap
        self._clock = clock
        self._keys: OrderedDict[str, tuple[str, float]] = OrderedDict()
        self._lock = threading.Lock()

    def __len__(self) -> int:
        return len(self._keys)

    def admit(self, key: str, job_id: str, ttl_s: float) -> str:
        now = self._clock()
        with self._lock:
            held = self._keys.get(key)
            if held is not None and held[1] > now:
                self._keys.move_to_end(key)
                return held[0]
            self._keys[key] = (job_id, now + ttl_s)
            self._keys.move_to_end(key)
            while len(self._keys) > self.cap:
                self._keys.popitem(last=False)
            return job_id

    def release(self, key: str, job_id: str) -> None:
        with self._lock:
            held = self._keys.get(key)
            if held is not None and held[0] == job_id:
                del self._keys[key]

    def check(self) -> None:
        return None


class RedisAdmission:
    """Admission in Redis at ``url`` (``MEMOIR_REDIS_URL``), shared by every replica.
    Connections time out after ``timeout_s`` so an unreachable Redis fails a request fast."""

    shared = True

    def __init__(self, url: str, *, timeout_s: float = 2.0, client: Any = None) -> None:
        self._masked = mask_url(url)
        if client is None:
            try:
                import redis
            except ImportError as exc:  # pragma: no cover - the server extra brings it
                raise AdmissionUnavailable(
                    "MEMOIR_REDIS_URL is set but the redis package is not installed: "
                    + install_hint("server")
                ) from exc
            client = redis.Redis.from_url(
                url,
                socket_connect_timeout=timeout_s,
                socket_timeout=timeout_s,
                decode_responses=True,
            )
        self._client = client
        self._errors = _redis_errors()
        self._admit = client.register_script(_ADMIT)
        self._release = client.register_script(_RELEASE)

    def admit(self, key: str, job_id: str, ttl_s: float) -> str:
        held = self._call(self._admit, key, job_id, max(1, int(ttl_s * 1000)))
        return held.decode() if isinstance(held, bytes) else str(held)

    def release(self, key: str, job_id: str) -> None:
        self._call(self._release, key, job_id)

    def check(self) -> None:
        try:
            self._client.ping()
        except self._errors as exc:
            raise self._unavailable(exc) from exc

    def close(self) -> None:
        try:
            self._client.close()
        except Exception:  # closing a client of an unreachable server: nothing to keep
            pass

    def _call(self, script: Any, key: str, *args: Any) -> Any:
        try:
            return script(keys=[key], args=list(args))
        except self._errors as exc:  # redis' ConnectionError, TimeoutError, ResponseError …
            raise self._unavailable(exc) from exc

    def _unavailable(self, exc: BaseException) -> AdmissionUnavailable:
        reason = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        return AdmissionUnavailable(
            f"job admission is unavailable: Redis at {self._masked} cannot be reached "
            f"({reason}); no new job is started until it is back — reads keep working"
        )


def _redis_errors() -> tuple[type[BaseException], ...]:
    """What a Redis call raises when Redis cannot answer (the driver's base error, and
    the OS's for a socket that failed under it)."""
    try:
        from redis.exceptions import RedisError
    except ImportError:  # pragma: no cover - a client handed in without the package
        return (OSError,)
    return (RedisError, OSError)


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
