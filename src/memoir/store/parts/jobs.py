"""Jobs and the service's users.

Jobs: background work (a long-history summary regeneration) as rows — queued, claimed
by a worker, heartbeated, finished under a fence.

A worker's claim is ``claimed_by`` + ``source_hash`` (a digest of the job id, the worker
and a nonce of this claim) + ``claimed_at``. Every write a worker makes afterwards
(heartbeat, progress, complete, fail, release) names both and changes nothing when they no
longer match — the claim expired and another worker took the job, or it was cancelled — so
a superseded worker can never write over its replacement.

What differs by backend is handed in as :class:`JobLocking`: PostgreSQL takes the next job
with ``SELECT … FOR UPDATE SKIP LOCKED`` (replicas claim different jobs without waiting),
locks the row it fences with ``FOR UPDATE`` and serializes the admission of one (kind,
user, session) with a transaction-level advisory lock; SQLite runs each of these in its
``BEGIN IMMEDIATE`` write transaction, which already excludes every other writer.

Users of the HTTP service and their API keys: a key is shown once, when it is made;
only its SHA-256 hash is stored, so a stolen database holds no usable key.

:data:`LOCAL` owns every session synced from this machine. It is reserved — :meth:`UsersPart.add`
refuses the name, so nobody creates it by accident as a user of their own — but
:meth:`UsersPart.new_key` makes it a key, so its owner can read those sessions over the API."""

from __future__ import annotations

import hashlib
import re
import secrets
import uuid
from collections.abc import Sequence
from dataclasses import dataclass, replace
from datetime import UTC, datetime, timedelta
from typing import Any

from memoir.errors import ConfigError, NotFound
from memoir.store.codec import JOB_COLS, JobRow, dumps, from_iso, job_from_row, loads
from memoir.store.db import Db, Part, Tx, claim_key

__all__ = [
    "KEY_PREFIX",
    "LOCAL",
    "JobLocking",
    "JobsPart",
    "UserInfo",
    "UsersPart",
    "hash_key",
]


_ACTIVE = "state IN ('queued', 'running')"


@dataclass(frozen=True, slots=True)
class JobLocking:
    """SQL a backend adds: ``skip_locked`` after a SELECT picking rows to take,
    ``for_update`` after a SELECT of the row about to be fenced, ``serialize`` a statement
    taking a transaction lock on one integer key (None: the transaction excludes writers
    already)."""

    skip_locked: str = ""
    for_update: str = ""
    serialize: str | None = None


def _source_hash(job_id: str, worker: str) -> str:
    nonce = uuid.uuid4().hex
    return hashlib.sha256(f"{job_id}\0{worker}\0{nonce}".encode()).hexdigest()[:32]


class JobsPart(Part):
    def __init__(self, db: Db, locking: JobLocking = JobLocking()) -> None:
        super().__init__(db)
        self._locking = locking

    # reads -------------------------------------------------------------------------------
    def get(self, job_id: str, *, user: str | None = None) -> JobRow | None:
        """The job ``job_id`` (``user``'s only, when given: another user's is None)."""
        mine, params = (" AND user_name = ?", (user,)) if user is not None else ("", ())
        rows = self._db.rows(f"SELECT {JOB_COLS} FROM jobs WHERE id = ?{mine}", (job_id, *params))
        return job_from_row(rows[0]) if rows else None

    def latest(self, user: str, session_id: str, kind: str | None = None) -> JobRow | None:
        """The newest job of ``user`` on ``session_id`` (of ``kind``), whatever its state."""
        where, params = self._of(user, session_id, kind)
        rows = self._db.rows(
            f"SELECT {JOB_COLS} FROM jobs WHERE {where} ORDER BY created_at DESC, id LIMIT 1",
            params,
        )
        return job_from_row(rows[0]) if rows else None

    def active(self, user: str, session_id: str, kind: str | None = None) -> JobRow | None:
        """The queued or running job of ``user`` on ``session_id`` (of ``kind``), if any."""
        where, params = self._of(user, session_id, kind)
        rows = self._db.rows(
            f"SELECT {JOB_COLS} FROM jobs WHERE {where} AND {_ACTIVE} "
            "ORDER BY created_at DESC, id LIMIT 1",
            params,
        )
        return job_from_row(rows[0]) if rows else None

    def find(
        self, *, state: str | None = None, user: str | None = None, limit: int = 100
    ) -> list[JobRow]:
        """Jobs newest first, of one state and/or one user."""
        pairs = [(k, v) for k, v in (("state", state), ("user_name", user)) if v is not None]
        where = " WHERE " + " AND ".join(f"{k} = ?" for k, _ in pairs) if pairs else ""
        rows = self._db.rows(
            f"SELECT {JOB_COLS} FROM jobs{where} ORDER BY created_at DESC, id LIMIT ?",
            [*(v for _, v in pairs), max(0, limit)],
        )
        return [job_from_row(r) for r in rows]

    def holds(self, job_id: str, worker: str, source_hash: str) -> bool:
        """Does ``worker`` still hold its claim (``source_hash``) on the running job?"""
        return bool(
            self._db.rows(
                "SELECT 1 FROM jobs WHERE id = ? AND state = 'running' AND claimed_by = ? "
                "AND source_hash = ?",
                (job_id, worker, source_hash),
            )
        )

    # admission ---------------------------------------------------------------------------
    def create(self, row: JobRow) -> tuple[JobRow, bool]:
        """Insert ``row`` (queued) unless a job of its kind is active for its user and
        session: (the active job, False) then, else (``row``, True)."""
        with self._db.tx() as tx:
            if self._locking.serialize is not None:
                key = claim_key(f"job:{row.kind}:{row.user}:{row.session_id}")
                tx.run(self._locking.serialize, (key,))
            where, params = self._of(row.user, row.session_id, row.kind)
            found = tx.run(
                f"SELECT {JOB_COLS} FROM jobs WHERE {where} AND {_ACTIVE} LIMIT 1", params
            )
            if found:
                return job_from_row(found[0]), False
            tx.run(
                f"INSERT INTO jobs ({JOB_COLS}) VALUES ({', '.join('?' for _ in range(18))})",
                _params(tx, row),
            )
        return row, True

    # a worker's claim --------------------------------------------------------------------
    def claim(
        self, worker: str, *, now: datetime, claim_s: float, kinds: Sequence[str] | None = None
    ) -> JobRow | None:
        """Take the oldest queued job (or a running one whose claim is older than
        ``claim_s``: its worker is superseded) of ``kinds`` for ``worker``; None: none."""
        expired = now - timedelta(seconds=claim_s)
        kind_sql, kind_params = "", []
        if kinds is not None:
            if not kinds:
                return None
            kind_sql = f" AND kind IN ({', '.join('?' for _ in kinds)})"
            kind_params = list(kinds)
        with self._db.tx() as tx:
            rows = tx.run(
                f"SELECT {JOB_COLS} FROM jobs WHERE (state = 'queued' OR (state = 'running' "
                f"AND claimed_at < ?)){kind_sql} ORDER BY created_at, id LIMIT 1"
                f"{self._locking.skip_locked}",
                [tx.time(expired), *kind_params],
            )
            if not rows:
                return None
            job = job_from_row(rows[0])
            source_hash = _source_hash(job.id, worker)
            tx.run(
                "UPDATE jobs SET state = 'running', claimed_by = ?, claimed_at = ?, "
                "source_hash = ?, heartbeat_at = ?, started_at = COALESCE(started_at, ?), "
                "attempts = attempts + 1, error = '' WHERE id = ?",
                (worker, tx.time(now), source_hash, tx.time(now), tx.time(now), job.id),
            )
        return replace(
            job,
            state="running",
            claimed_by=worker,
            claimed_at=now,
            source_hash=source_hash,
            heartbeat_at=now,
            started_at=job.started_at or now,
            attempts=job.attempts + 1,
            error="",
        )

    def heartbeat(self, job_id: str, worker: str, source_hash: str, now: datetime) -> bool:
        """Record that ``worker`` is alive on the job; False: its claim is gone."""
        return self._fenced(
            job_id, worker, source_hash, "heartbeat_at = ?", lambda tx: [tx.time(now)]
        )

    def progress(
        self,
        job_id: str,
        worker: str,
        source_hash: str,
        *,
        phase: str,
        completed: int,
        total: int,
        now: datetime,
    ) -> bool:
        """Record the job's progress (a heartbeat too); False: the claim is gone."""
        return self._fenced(
            job_id,
            worker,
            source_hash,
            "phase = ?, completed = ?, total = ?, heartbeat_at = ?",
            lambda tx: [phase, completed, total, tx.time(now)],
        )

    def complete(
        self,
        job_id: str,
        worker: str,
        source_hash: str,
        now: datetime,
        data: dict[str, Any] | None = None,
    ) -> bool:
        """Finish the job as completed — only while ``worker`` holds its claim
        (``source_hash``): False, and nothing written, for a superseded worker."""
        return self._finish(job_id, worker, source_hash, "completed", "", now, data)

    def fail(
        self,
        job_id: str,
        worker: str,
        source_hash: str,
        error: str,
        now: datetime,
        data: dict[str, Any] | None = None,
    ) -> bool:
        """Finish the job as failed with ``error`` — fenced as :meth:`complete`."""
        return self._finish(job_id, worker, source_hash, "failed", error, now, data)

    def release(self, job_id: str, worker: str, source_hash: str) -> bool:
        """Give the job back to the queue (a worker shutting down); fenced."""
        return self._fenced(
            job_id,
            worker,
            source_hash,
            "state = 'queued', claimed_by = NULL, claimed_at = NULL, source_hash = NULL",
            lambda tx: [],
        )

    def cancel(self, job_id: str, now: datetime, reason: str = "cancelled") -> JobRow | None:
        """Fail an active job with ``reason`` and drop its claim (its worker's next write
        is refused, so it stops at its next progress report); the job as it now is."""
        with self._db.tx() as tx:
            tx.run(
                "UPDATE jobs SET state = 'failed', error = ?, finished_at = ?, "
                f"source_hash = NULL WHERE id = ? AND {_ACTIVE}",
                (reason, tx.time(now), job_id),
            )
        return self.get(job_id)

    # abandonment -------------------------------------------------------------------------
    def abandon(
        self, now: datetime, abandon_s: float, *, error: str, requeue: bool = False
    ) -> list[JobRow]:
        """Running jobs without a heartbeat for ``abandon_s``: failed with ``error`` (marked
        ``data.abandoned``), or with ``requeue`` queued again for another worker. Also
        with ``requeue``: such failed jobs still the latest of their user and session, put
        back in the queue. The jobs changed, as they were."""
        stale = now - timedelta(seconds=abandon_s)
        with self._db.tx() as tx:
            rows = tx.run(
                f"SELECT {JOB_COLS} FROM jobs WHERE state = 'running' AND "
                "COALESCE(heartbeat_at, claimed_at, created_at) < ? ORDER BY created_at"
                f"{self._locking.skip_locked}",
                (tx.time(stale),),
            )
            jobs = [job_from_row(r) for r in rows]
            if requeue:
                jobs += self._abandoned_failures(tx)
            for job in jobs:
                data = dict(job.data)
                if requeue:
                    data.pop("abandoned", None)
                    data["resumed"] = int(data.get("resumed", 0)) + 1
                    tx.run(
                        "UPDATE jobs SET state = 'queued', claimed_by = NULL, claimed_at = NULL, "
                        "source_hash = NULL, error = '', finished_at = NULL, data = ? "
                        "WHERE id = ?",
                        (dumps(data), job.id),
                    )
                else:
                    data["abandoned"] = True
                    tx.run(
                        "UPDATE jobs SET state = 'failed', error = ?, finished_at = ?, "
                        "source_hash = NULL, data = ? WHERE id = ?",
                        (error, tx.time(now), dumps(data), job.id),
                    )
        return jobs

    # helpers -----------------------------------------------------------------------------
    def _abandoned_failures(self, tx: Tx) -> list[JobRow]:
        rows = tx.run(
            f"SELECT {JOB_COLS} FROM jobs j WHERE state = 'failed' AND data LIKE ? AND NOT "
            "EXISTS (SELECT 1 FROM jobs k WHERE k.kind = j.kind AND k.user_name = j.user_name "
            "AND k.session_id = j.session_id AND k.created_at > j.created_at) "
            f"ORDER BY created_at{self._locking.skip_locked}",
            ('%"abandoned":true%',),
        )
        return [j for j in (job_from_row(r) for r in rows) if j.data.get("abandoned") is True]

    def _finish(
        self,
        job_id: str,
        worker: str,
        source_hash: str,
        state: str,
        error: str,
        now: datetime,
        data: dict[str, Any] | None,
    ) -> bool:
        with self._db.tx() as tx:
            rows = tx.run(
                "SELECT state, claimed_by, source_hash, data FROM jobs WHERE id = ?"
                f"{self._locking.for_update}",
                (job_id,),
            )
            if not rows or (rows[0][0], rows[0][1], rows[0][2]) != (
                "running",
                worker,
                source_hash,
            ):
                return False
            merged = {**(loads(rows[0][3]) or {}), **(data or {})}
            tx.run(
                "UPDATE jobs SET state = ?, error = ?, finished_at = ?, heartbeat_at = ?, "
                "data = ? WHERE id = ?",
                (state, error, tx.time(now), tx.time(now), dumps(merged), job_id),
            )
        return True

    def _fenced(self, job_id: str, worker: str, source_hash: str, sets: str, values: Any) -> bool:
        with self._db.tx() as tx:
            changed = tx.run(
                f"UPDATE jobs SET {sets} WHERE id = ? AND state = 'running' AND claimed_by = ? "
                "AND source_hash = ? RETURNING id",
                [*values(tx), job_id, worker, source_hash],
            )
        return bool(changed)

    @staticmethod
    def _of(user: str, session_id: str, kind: str | None) -> tuple[str, list[Any]]:
        where, params = "user_name = ? AND session_id = ?", [user, session_id]
        if kind is not None:
            where += " AND kind = ?"
            params.append(kind)
        return where, params


def _params(tx: Tx, row: JobRow) -> tuple[Any, ...]:
    return (
        row.id,
        row.kind,
        row.user,
        row.session_id,
        row.state,
        row.phase,
        row.completed,
        row.total,
        row.error,
        tx.time(row.created_at),
        tx.time(row.started_at),
        tx.time(row.finished_at),
        tx.time(row.heartbeat_at),
        row.claimed_by,
        tx.time(row.claimed_at),
        row.source_hash,
        row.attempts,
        dumps(row.data),
    )


KEY_PREFIX = "mk_"
LOCAL = "local"  # the owner of every session synced from this machine
_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.@-]{0,99}")


# the user of the live API key whose hash is the one parameter: every check of a key
LIVE_KEY_USER = (
    "SELECT k.user_name FROM api_keys k JOIN users u ON u.name = k.user_name "
    "WHERE k.key_hash = ? AND k.revoked_at IS NULL"
)


def hash_key(key: str) -> str:
    """The stored form of an API key: its SHA-256, hex."""
    return hashlib.sha256(key.encode("utf-8", "surrogatepass")).hexdigest()


@dataclass(frozen=True, slots=True)
class UserInfo:
    name: str
    created_at: datetime | None
    keys: int  # keys not revoked


class UsersPart(Part):
    def add(self, name: str, *, label: str = "") -> str:
        """Create user ``name`` (an existing one is kept) and a new API key for it; the
        key is returned once and never stored."""
        if not isinstance(name, str) or not _NAME.fullmatch(name):
            raise ConfigError(
                f"a user name is 1-100 letters, digits or _ . @ - (starting with a letter "
                f"or digit), not {name!r}"
            )
        if name == LOCAL:
            raise ConfigError(
                "'local' is the owner of synced sessions; choose another name "
                "(`memoir users key local` makes a key for it)"
            )
        return self._key(name, label, create=True)

    def new_key(self, name: str, *, label: str = "") -> str:
        """A new API key for an existing user, or for :data:`LOCAL` (whose row is made on
        its first key); returned once and never stored. ``NotFound`` for another name."""
        return self._key(name, label, create=name == LOCAL)

    def rotate(self, name: str, *, label: str = "") -> str:
        """A new API key for an existing user (or :data:`LOCAL`), every earlier key of it
        revoked in the same transaction: from the next request on, on every process that
        reads this store, only the new key works. Returned once and never stored."""
        return self._key(name, label, create=name == LOCAL, revoke=True)

    def _key(self, name: str, label: str, *, create: bool, revoke: bool = False) -> str:
        key = KEY_PREFIX + secrets.token_urlsafe(32)
        now = datetime.now(UTC)
        with self._db.tx() as tx:
            if create:
                tx.run(
                    "INSERT INTO users (name, created_at) VALUES (?, ?) "
                    "ON CONFLICT (name) DO NOTHING",
                    (name, tx.time(now)),
                )
            elif not tx.run("SELECT name FROM users WHERE name = ?", (name,)):
                raise NotFound(f"no user {name!r}: memoir users add {name}")
            if revoke:
                tx.run(
                    "UPDATE api_keys SET revoked_at = ? WHERE user_name = ? AND revoked_at IS NULL",
                    (tx.time(now), name),
                )
            tx.run(
                "INSERT INTO api_keys (key_hash, user_name, label, created_at) VALUES (?, ?, ?, ?)",
                (hash_key(key), name, label, tx.time(now)),
            )
        return key

    def user_for(self, key: str) -> str | None:
        """The user a key belongs to, None when it is unknown or revoked."""
        return self.user_for_hash(hash_key(key)) if key else None

    def user_for_hash(self, key_hash: str) -> str | None:
        """The user whose live key has this :func:`hash_key`, None when none has."""
        rows = self._db.rows(LIVE_KEY_USER, (key_hash,))
        return str(rows[0][0]) if rows else None

    def list(self) -> list[UserInfo]:
        rows = self._db.rows(
            "SELECT u.name, u.created_at, (SELECT count(*) FROM api_keys k "
            "WHERE k.user_name = u.name AND k.revoked_at IS NULL) FROM users u ORDER BY u.name"
        )
        return [UserInfo(str(r[0]), from_iso(r[1]), int(r[2])) for r in rows]

    def revoke(self, name: str) -> int:
        """Revoke every key of ``name``; returns how many were live."""
        with self._db.tx() as tx:
            if not tx.run("SELECT name FROM users WHERE name = ?", (name,)):
                raise NotFound(f"no user {name!r}")
            rows = tx.run(
                "UPDATE api_keys SET revoked_at = ? WHERE user_name = ? AND revoked_at IS NULL "
                "RETURNING key_hash",
                (tx.time(datetime.now(UTC)), name),
            )
        return len(rows)
