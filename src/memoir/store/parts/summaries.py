"""What the engines keep beside a session: summaries, checkpoints, traces, usage, cache.

Summary rows: what the database summary store (``MEMOIR_SUMMARY_STORE=database``) keeps
per session.

Compaction checkpoints: a compaction persisted, so later turns replay it (and memory
extraction reads its frozen boundary).

Traces: what a compaction or a long-history summary did, kept for inspection.

The usage ledger: one row per model call (tokens, latency, outcome).

A small key → text cache with expiry (what a model call's answer may be kept in)."""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from memoir.llm.port import UsageRecord
from memoir.model import Session
from memoir.model.event import LOCAL_USER
from memoir.store.codec import (
    JOB_COLS,
    SESSION_READ_COLS,
    JobRow,
    dumps,
    from_iso,
    job_from_row,
    loads,
    prefixed,
    session_from_row,
    stored_time,
    value_from_row,
)
from memoir.store.db import Part, Plan, Stmt
from memoir.store.parts.jobs import LIVE_KEY_USER
from memoir.store.values import CheckpointRow, SummaryRow, TraceRow

__all__ = [
    "CachePart",
    "CheckpointsPart",
    "SummariesPart",
    "SummaryPoll",
    "TracesPart",
    "UsagePart",
    "checkpoints_at_or_below_plan",
    "usage_plan",
]


_SUMMARY_COLS = (
    "session_id, kind, body, covered, last_exchange, attempts, last_attempt_ms, "
    "resummary_attempts, resummary_last_attempt_ms, model, message, updated_at"
)


@dataclass(frozen=True, slots=True)
class SummaryPoll:
    """What one poll of a session's summary reads, in one statement: the caller, the
    session (theirs), its summary row, its last event ordinal, and its newest job of the
    kind asked for."""

    user: str
    session: Session
    summary: SummaryRow | None = None
    last_ordinal: int = 0
    job: JobRow | None = None


_N_SESSION = len(SESSION_READ_COLS.split(","))
_N_SUMMARY = len(_SUMMARY_COLS.split(","))
_N_JOB = len(JOB_COLS.split(","))


def _poll_sql(who: str) -> str:
    """The poll's statement, the caller's name coming from ``who`` (one row or none)."""
    return (
        f"SELECT w.user_name, {prefixed(SESSION_READ_COLS, 's')}, {prefixed(_SUMMARY_COLS, 'm')}, "
        "(SELECT max(e.ordinal) FROM events e WHERE e.session_id = s.id), "
        f"{prefixed(JOB_COLS, 'j')} FROM ({who}) w "
        # the caller's session by its id or by the name its user gave it (stored under
        # a digest of the two: one name, one session), the exact id first
        "JOIN sessions s ON s.user_name = w.user_name AND (s.id = ? OR s.name = ?) "
        "LEFT JOIN summaries m ON m.session_id = s.id "
        "LEFT JOIN jobs j ON j.id = (SELECT j2.id FROM jobs j2 WHERE "
        "j2.user_name = w.user_name AND j2.session_id = s.id AND j2.kind = ? "
        "ORDER BY j2.created_at DESC, j2.id LIMIT 1) "
        "ORDER BY CASE WHEN s.id = ? THEN 0 ELSE 1 END LIMIT 1"
    )


_POLL_BY_KEY = _poll_sql(LIVE_KEY_USER)
_POLL_BY_USER = _poll_sql("SELECT CAST(? AS TEXT) AS user_name")


class SummariesPart(Part):
    def poll(
        self,
        session_id: str,
        *,
        key_hash: str | None = None,
        user: str | None = None,
        job_kind: str = "summary",
    ) -> SummaryPoll | None:
        """The caller (by the hash of a live API key, else ``user`` as already known),
        the session ``session_id``, its summary row, last event ordinal and newest
        ``job_kind`` job: one statement, one round trip. None when the key is not live
        or the session is not the caller's: the key is checked in the database on every
        call (a revoked key is refused at once, on every replica), and another user's
        session reads as one that does not exist (the owner is in the join, so both do
        the same work and find no row)."""
        if key_hash is not None:
            sql, first = _POLL_BY_KEY, key_hash
        elif user is not None:
            sql, first = _POLL_BY_USER, user
        else:
            return None
        rows = self._db.rows(sql, (first, session_id, session_id, job_kind, session_id))
        return poll_from_row(rows[0]) if rows else None

    def get(self, session_id: str) -> SummaryRow | None:
        rows = self._db.rows(
            f"SELECT {_SUMMARY_COLS} FROM summaries WHERE session_id = ?", (session_id,)
        )
        return _summary(rows[0]) if rows else None

    def put(self, row: SummaryRow) -> None:
        updated = row.updated_at or datetime.now(UTC)
        with self._db.tx() as tx:
            tx.run(
                f"INSERT INTO summaries ({_SUMMARY_COLS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, "
                "?, ?) ON CONFLICT (session_id) DO UPDATE SET kind = excluded.kind, "
                "body = excluded.body, covered = excluded.covered, "
                "last_exchange = excluded.last_exchange, attempts = excluded.attempts, "
                "last_attempt_ms = excluded.last_attempt_ms, "
                "resummary_attempts = excluded.resummary_attempts, "
                "resummary_last_attempt_ms = excluded.resummary_last_attempt_ms, "
                "model = excluded.model, message = excluded.message, "
                "updated_at = excluded.updated_at",
                (
                    row.session_id,
                    row.kind,
                    row.body,
                    row.covered,
                    row.last_exchange,
                    row.attempts,
                    row.last_attempt_ms,
                    row.resummary_attempts,
                    row.resummary_last_attempt_ms,
                    row.model,
                    row.message,
                    tx.time(updated),
                ),
            )

    def all(self) -> list[SummaryRow]:
        return [
            _summary(r)
            for r in self._db.rows(f"SELECT {_SUMMARY_COLS} FROM summaries ORDER BY session_id")
        ]


def _summary(r: Any) -> SummaryRow:
    ints = dict.fromkeys(("covered", "attempts", "last_attempt_ms"), int)
    return value_from_row(SummaryRow, _SUMMARY_COLS, r, convert={**ints, "updated_at": from_iso})


def poll_from_row(r: Any) -> SummaryPoll:
    """A row of :meth:`SummariesPart.poll`: the user, then the session's, the summary's
    and the job's columns (the last two all NULL when there is none), the last ordinal
    between them."""
    user = str(r[0])
    a = 1
    b = a + _N_SESSION
    session = session_from_row(r[a:b])
    summary = _summary(r[b : b + _N_SUMMARY]) if r[b] is not None else None
    last = int(r[b + _N_SUMMARY] or 0)
    c = b + _N_SUMMARY + 1
    job = job_from_row(r[c : c + _N_JOB]) if r[c] is not None else None
    return SummaryPoll(user, session, summary, last, job)


_CHECKPOINT_COLS = (
    "id, session_id, created_at, watermark, memory_boundary, disposition, previous_id, data"
)


class CheckpointsPart(Part):
    def put(self, row: CheckpointRow) -> None:
        with self._db.tx() as tx:
            tx.run(
                f"INSERT INTO checkpoints ({_CHECKPOINT_COLS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?) "
                "ON CONFLICT (id) DO UPDATE SET session_id = excluded.session_id, "
                "created_at = excluded.created_at, watermark = excluded.watermark, "
                "memory_boundary = excluded.memory_boundary, "
                "disposition = excluded.disposition, previous_id = excluded.previous_id, "
                "data = excluded.data",
                (
                    row.id,
                    row.session_id,
                    tx.time(row.created_at),
                    row.watermark,
                    row.memory_boundary,
                    row.disposition,
                    row.previous_id,
                    dumps(row.data),
                ),
            )

    def of(self, session_id: str) -> list[CheckpointRow]:
        """A session's checkpoints, oldest first."""
        rows = self._db.rows(
            f"SELECT {_CHECKPOINT_COLS} FROM checkpoints WHERE session_id = ? "
            "ORDER BY created_at, id",
            (session_id,),
        )
        return [_checkpoint(r) for r in rows]

    def latest_at_or_below(
        self, session_id: str, boundary: int, *, limit: int = 8
    ) -> list[CheckpointRow]:
        """See :func:`checkpoints_at_or_below_plan`."""
        return self._db.query(checkpoints_at_or_below_plan(session_id, boundary, limit=limit))

    def past_memory_cursor(self) -> list[CheckpointRow]:
        """Checkpoints whose memory boundary lies past their session's memory cursor
        (what memory recovery looks at), oldest first."""
        cols = ", ".join(f"c.{c.strip()}" for c in _CHECKPOINT_COLS.split(","))
        rows = self._db.rows(
            f"SELECT {cols} FROM checkpoints c LEFT JOIN memory_cursors m "
            "ON m.session_id = c.session_id WHERE c.memory_boundary > coalesce(m.through, 0) "
            "ORDER BY c.created_at, c.id"
        )
        return [_checkpoint(r) for r in rows]


def checkpoints_at_or_below_plan(
    session_id: str, boundary: int, *, limit: int = 8
) -> Plan[list[CheckpointRow]]:
    """The session's newest eligible checkpoints whose memory boundary is at or below
    ``boundary`` (an index seek, however many checkpoints the session has)."""
    rows = yield Stmt(
        f"SELECT {_CHECKPOINT_COLS} FROM checkpoints WHERE session_id = ? AND disposition = ? "
        "AND memory_boundary <= ? ORDER BY memory_boundary DESC, created_at DESC, id "
        f"LIMIT {int(limit)}",
        (session_id, "eligible", boundary),
    )
    return [_checkpoint(r) for r in rows]


def usage_plan(records: Sequence[UsageRecord]) -> Plan[None]:
    """The ledger's rows of ``records``, written."""
    yield Stmt(
        f"INSERT INTO usage ({_USAGE_COLS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
        [
            (
                r.at,
                r.provider,
                r.model,
                r.purpose,
                r.outcome,
                r.input_tokens,
                r.output_tokens,
                float(r.latency_ms),
                r.user,
                r.session,
                r.job_id,
                r.request_id,
                r.redacted,
            )
            for r in records
        ],
        many=True,
    )


def _checkpoint(r: Any) -> CheckpointRow:
    convert: dict[str, Callable[[Any], Any]] = {
        "created_at": stored_time,
        "watermark": int,
        "memory_boundary": int,
        "data": loads,
    }
    return value_from_row(CheckpointRow, _CHECKPOINT_COLS, r, convert=convert)


class TracesPart(Part):
    def record(self, row: TraceRow) -> None:
        with self._db.tx() as tx:
            tx.run(
                "INSERT INTO traces (session_id, kind, at, data) VALUES (?, ?, ?, ?)",
                (row.session_id, row.kind, tx.time(row.at), dumps(row.data)),
            )

    def find(self, session_id: str | None = None, kind: str | None = None) -> list[TraceRow]:
        """Traces of a session and/or a kind (every one when neither is given), oldest first."""
        pairs = [(k, v) for k, v in (("session_id", session_id), ("kind", kind)) if v is not None]
        where = " WHERE " + " AND ".join(f"{k} = ?" for k, _ in pairs) if pairs else ""
        rows = self._db.rows(
            f"SELECT session_id, kind, at, data FROM traces{where} ORDER BY at, id",
            [v for _, v in pairs],
        )
        return [_trace(r) for r in rows]


def _trace(r: Any) -> TraceRow:
    return TraceRow(session_id=r[0], kind=r[1], at=stored_time(r[2]), data=loads(r[3]))


_USAGE_COLS = (
    "at, provider, model, purpose, outcome, input_tokens, output_tokens, latency_ms, "
    "user_name, session_id, job_id, request_id, redacted"
)


class UsagePart(Part):
    def record(self, record: UsageRecord) -> None:
        self._db.apply(usage_plan([record]))

    def records(
        self, since: datetime | None = None, *, owner: str | None = None
    ) -> list[UsageRecord]:
        """The calls recorded (since ``since``), oldest first; ``owner``: those made for
        that user — recorded with their name, or for one of their sessions; for the local
        user also the calls the home made for no user and no session (a sync's)."""
        clauses: list[str] = []
        params: list[Any] = []
        with self._db.ro() as tx:
            if since is not None:
                clauses.append("at >= ?")
                params.append(tx.time(since))
            if owner is not None:  # each branch one index seek (v19), not a scan of all
                home = (
                    " UNION ALL SELECT id FROM usage WHERE user_name IS NULL AND session_id IS NULL"
                    if owner == LOCAL_USER
                    else ""
                )
                clauses.append(
                    "id IN (SELECT id FROM usage WHERE user_name = ? UNION ALL "
                    "SELECT u.id FROM sessions s JOIN usage u ON u.session_id = s.id "
                    f"WHERE s.user_name = ?{home})"
                )
                params += [owner, owner]
            where = f" WHERE {' AND '.join(clauses)}" if clauses else ""
            rows = tx.run(f"SELECT {_USAGE_COLS} FROM usage{where} ORDER BY at, id", params)
        return [_usage(r) for r in rows]


def _usage(r: Any) -> UsageRecord:
    return value_from_row(
        UsageRecord,
        _USAGE_COLS,
        r,
        convert={
            "at": stored_time,
            "input_tokens": int,
            "output_tokens": int,
            "latency_ms": float,
            "redacted": int,
        },
        rename={"user_name": "user", "session_id": "session"},
    )


class CachePart(Part):
    def get(self, key: str) -> str | None:
        with self._db.ro() as tx:
            rows = tx.run(
                "SELECT value FROM cache WHERE key = ? AND expires_at > ?", (key, time.time())
            )
        return rows[0][0] if rows else None

    def put(self, key: str, value: str, ttl_seconds: float) -> None:
        now = time.time()
        with self._db.tx() as tx:
            tx.run("DELETE FROM cache WHERE expires_at <= ?", (now,))
            if ttl_seconds <= 0:
                tx.run("DELETE FROM cache WHERE key = ?", (key,))
                return
            tx.run(
                "INSERT INTO cache (key, value, expires_at) VALUES (?, ?, ?) ON CONFLICT (key) "
                "DO UPDATE SET value = excluded.value, expires_at = excluded.expires_at",
                (key, value, now + ttl_seconds),
            )
