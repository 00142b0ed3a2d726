"""Job admission: at most one active job per (kind, user, session), decided before the
job row is written.

:class:`Admission` is the narrow port; two implementations ship:

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

import threading
import time
from collections import OrderedDict
from collections.abc import Callable
from typing import Any, Protocol

from memoir.config import mask_url
from memoir.errors import install_hint
from memoir.jobs.errors import AdmissionUnavailable

__all__ = ["Admission", "LocalAdmission", "RedisAdmission"]

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
