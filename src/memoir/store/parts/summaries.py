"""Summary rows: what the database summary store (``MEMOIR_SUMMARY_STORE=database``) keeps
per session."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from memoir.model import Session
from memoir.store.codec import (
    SESSION_READ_COLS,
    from_iso,
    prefixed,
    session_from_row,
    value_from_row,
)
from memoir.store.db import Part
from memoir.store.job_rows import JOB_COLS, JobRow, job_from_row
from memoir.store.values import SummaryRow

__all__ = ["SummariesPart", "SummaryPoll"]

_COLS = (
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
_N_SUMMARY = len(_COLS.split(","))
_N_JOB = len(JOB_COLS.split(","))


def _poll_sql(who: str) -> str:
    """The poll's statement, the caller's name coming from ``who`` (one row or none)."""
    return (
        f"SELECT w.user_name, {prefixed(SESSION_READ_COLS, 's')}, {prefixed(_COLS, 'm')}, "
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


_POLL_BY_KEY = _poll_sql(
    "SELECT k.user_name FROM api_keys k JOIN users u ON u.name = k.user_name "
    "WHERE k.key_hash = ? AND k.revoked_at IS NULL"
)
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
        rows = self._db.rows(f"SELECT {_COLS} FROM summaries WHERE session_id = ?", (session_id,))
        return _summary(rows[0]) if rows else None

    def put(self, row: SummaryRow) -> None:
        updated = row.updated_at or datetime.now(UTC)
        with self._db.tx() as tx:
            tx.run(
                f"INSERT INTO summaries ({_COLS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, "
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
            _summary(r) for r in self._db.rows(f"SELECT {_COLS} FROM summaries ORDER BY session_id")
        ]


def _summary(r: Any) -> SummaryRow:
    ints = dict.fromkeys(("covered", "attempts", "last_attempt_ms"), int)
    return value_from_row(SummaryRow, _COLS, r, convert={**ints, "updated_at": from_iso})


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
