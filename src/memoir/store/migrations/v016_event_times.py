"""v16: no event without a time. Events get ``time_inferred``; stored events that have no
time are given the nearest known one, as ingest now gives it.

Before v16 an event the source gave no time (a Claude Code line without one, a generic
JSON chat with none, a message appended over the API without one) was stored with none,
and so were the exchanges made only of such events: date filters, "recent" orderings and
the page passed them over. Ingest now infers a time for each
(:func:`memoir.model.event.infer_times`); this migration does the same for what is
stored, session by session, in the migration's transaction:

- each event without a time takes the time of the nearest event before it in its
  session that has one, else of the nearest after it, else the session's transcript file's
  modification time as the last sync saw it (``sources.mtime_ns``), else the session's
  last write (``updated_at``, then ``created_at``: an API session's events were stored
  by then), else the time of the migration; it is marked ``time_inferred``;
- the session's exchanges take their first and last event's times (``started_at``,
  ``ended_at``, as :func:`memoir.model.build_exchanges` makes them), a session without
  ``created_at`` / ``updated_at`` its first and last event's;
- the full-text rows of a session whose exchanges changed are rewritten with the backend's
  own ``reindex_session`` (the ``meta`` column carries the date, and SQLite's date-range
  prefilter reads it there).

Only sessions that hold an event without a time are read; a database without any does
nothing beyond adding the column.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any, cast

from memoir.model import Session
from memoir.model.event import fill_times
from memoir.store.codec import SESSION_COLS, from_iso, session_from_row
from memoir.store.db import Tx

__all__ = ["NAME", "POSTGRES", "REINDEX", "SQLITE", "VERSION", "backfill"]

VERSION = 16
NAME = "event-times"
REINDEX = False

SQLITE: tuple[str, ...] = (
    "ALTER TABLE events ADD COLUMN time_inferred INTEGER NOT NULL DEFAULT 0",
)

POSTGRES: tuple[str, ...] = (
    "ALTER TABLE events ADD COLUMN time_inferred BOOLEAN NOT NULL DEFAULT FALSE",
)


def backfill(tx: Tx, *, backend: str, now: datetime | None = None) -> None:
    """Give every stored event without a time the nearest known one (see the module).
    ``tx`` is the backend's migration transaction."""
    sessions = [r[0] for r in tx.run("SELECT DISTINCT session_id FROM events WHERE ts IS NULL")]
    if not sessions:
        return
    conn = cast(Any, tx).conn  # the backend's driver connection (its migration Tx)
    reindex_session: Callable[[Any, Session], None]
    if backend == "sqlite":
        from memoir.store import sqlite_search

        reindex_session = sqlite_search.reindex_session
    else:
        from memoir.store import postgres_search  # psycopg: only on PostgreSQL

        reindex_session = postgres_search.reindex_session
    stamp = now or datetime.now(UTC)
    for sid in sorted(sessions):
        _session(tx, conn, reindex_session, sid, stamp)


def _session(
    tx: Tx, conn: Any, reindex_session: Callable[[Any, Session], None], sid: str, now: datetime
) -> None:
    """One session's events, exchanges, session row and index rows (see the module)."""
    rows = tx.run("SELECT ordinal, ts FROM events WHERE session_id = ? ORDER BY ordinal", (sid,))
    ordinals = [int(r[0]) for r in rows]
    own = [from_iso(r[1]) for r in rows]
    found = tx.run(f"SELECT {SESSION_COLS} FROM sessions WHERE id = ?", (sid,))
    session = session_from_row(found[0]) if found else None  # None: orphaned events
    filled = fill_times(own, before=None, fallback=_fallback(tx, sid, session, now))
    tx.many(
        "UPDATE events SET ts = ?, time_inferred = ? WHERE session_id = ? AND ordinal = ?",
        [
            (tx.time(at), True, sid, n)
            for n, mine, at in zip(ordinals, own, filled, strict=True)
            if mine is None
        ],
    )
    at_ordinal = dict(zip(ordinals, filled, strict=True))
    changed = False
    for pk, first, last, started, ended in tx.run(
        "SELECT pk, first_ordinal, last_ordinal, started_at, ended_at FROM exchanges "
        "WHERE session_id = ?",
        (sid,),
    ):
        span = [at_ordinal[n] for n in range(int(first), int(last) + 1) if n in at_ordinal]
        if not span:
            continue
        if (from_iso(started), from_iso(ended)) != (span[0], span[-1]):
            tx.run(
                "UPDATE exchanges SET started_at = ?, ended_at = ? WHERE pk = ?",
                (tx.time(span[0]), tx.time(span[-1]), pk),
            )
            changed = True
    if session is None:
        return
    if session.created_at is None or session.updated_at is None:
        tx.run(
            "UPDATE sessions SET created_at = coalesce(created_at, ?), "
            "updated_at = coalesce(updated_at, ?) WHERE id = ?",
            (tx.time(filled[0]), tx.time(filled[-1]), sid),
        )
    if changed:
        reindex_session(conn, session)


def _fallback(tx: Tx, sid: str, session: Session | None, now: datetime) -> datetime:
    """The time a session's events that have no known neighbour take (see the module)."""
    found = tx.run("SELECT max(mtime_ns) FROM sources WHERE session_id = ?", (sid,))
    mtime_ns = found[0][0] if found else None
    if mtime_ns:
        return datetime.fromtimestamp(int(mtime_ns) / 1e9, UTC)
    if session is None:
        return now
    return session.updated_at or session.created_at or now
