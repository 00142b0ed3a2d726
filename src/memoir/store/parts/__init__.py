"""The store's parts, one per aggregate it holds: each a small class over :class:`Db`
(shared SQL), with what differs by backend handed in by the backend that wires it. The
event log's parts, which every other part's rows hang off, are defined here; the others
are imported from their modules.

The event log and the exchanges derived from it (:class:`EventsPart`,
:class:`ExchangesPart`): reads by session, by range, by id. Sessions fed over the HTTP
API (:class:`ApiPart`): created by their user, appended to in batches of messages that are
idempotent by the client's message id.

An append is one write transaction: the session row is read locked (``FOR UPDATE`` on
PostgreSQL; SQLite's ``BEGIN IMMEDIATE`` already serializes writers), the next ordinal and
the client ids already stored are read under that lock, then the events, the exchanges
they open or grow (with their index rows) and the client ids are written together. Two
concurrent appends to one session therefore take turns: no ordinal is handed out twice,
and a retried batch finds its ids and stores nothing again. On PostgreSQL the transaction
runs in psycopg's pipeline mode (:attr:`~memoir.store.db.Db.batch`): the reads under the
lock are sent together and the writes are not waited for one by one, so an append costs
a fixed handful of round trips whatever the batch's size.
"""

from __future__ import annotations

import bisect
from collections import defaultdict
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from typing import Any

from memoir.errors import ConfigError, NotFound
from memoir.model import Event, Exchange, Session, build_exchanges
from memoir.model.event import named_session_id, scrub_deep
from memoir.store.codec import (
    EVENT_COLS,
    EXCHANGE_COLS,
    SESSION_COLS,
    SESSION_READ_COLS,
    event_from_row,
    exchange_from_row,
    session_from_row,
    session_params,
)
from memoir.store.db import Db, Dialect, Part, Plan, StaleConnection, Stmt
from memoir.store.parts.index import EmbeddingsPart, IndexPart, TextEngine
from memoir.store.parts.jobs import JobLocking, JobsPart, UserInfo, UsersPart
from memoir.store.parts.sessions import (
    IngestPart,
    RescanPart,
    RescanState,
    SessionsPart,
    owned_session,
)
from memoir.store.parts.summaries import (
    CachePart,
    CheckpointsPart,
    SummariesPart,
    TracesPart,
    UsagePart,
)
from memoir.store.values import ApiMessage, IngestBatch, StoredTail, scrub_batch

__all__ = [
    "ApiPart",
    "AppendResult",
    "CachePart",
    "CheckpointsPart",
    "EmbeddingsPart",
    "EventsPart",
    "ExchangesPart",
    "IndexPart",
    "IngestPart",
    "JobLocking",
    "JobsPart",
    "RescanPart",
    "RescanState",
    "SessionsPart",
    "SummariesPart",
    "TextEngine",
    "TracesPart",
    "UsagePart",
    "UserInfo",
    "UsersPart",
    "check_storable",
    "events_plan",
    "last_ordinal_plan",
]


# the event log, the exchanges, the sessions fed over the API --------------------------


_CHUNK = 500


class EventsPart(Part):
    def of(self, session_id: str, *, after: int = 0, upto: int | None = None) -> list[Event]:
        """A session's events with ``after < ordinal <= upto``, in order."""
        return self._db.query(events_plan(session_id, after=after, upto=upto))

    def last_ordinal(self, session_id: str) -> int:
        return self._db.query(last_ordinal_plan(session_id))


def events_plan(session_id: str, *, after: int = 0, upto: int | None = None) -> Plan[list[Event]]:
    """:meth:`EventsPart.of` as a plan."""
    sql = f"SELECT {EVENT_COLS} FROM events WHERE session_id = ? AND ordinal > ?"
    params: list[Any] = [session_id, after]
    if upto is not None:
        sql += " AND ordinal <= ?"
        params.append(upto)
    rows = yield Stmt(sql + " ORDER BY ordinal", params)
    return [event_from_row(r) for r in rows]


def last_ordinal_plan(session_id: str) -> Plan[int]:
    """:meth:`EventsPart.last_ordinal` as a plan."""
    rows = yield Stmt("SELECT max(ordinal) FROM events WHERE session_id = ?", (session_id,))
    return int(rows[0][0] or 0)


class ExchangesPart(Part):
    def holding(self, events: Iterable[tuple[str, int]]) -> dict[tuple[str, int], str]:
        """The id of the exchange holding each (session id, event ordinal), for the events
        an exchange holds: one read of those sessions' exchange spans (ids and ordinals
        only), not one read of each session's exchanges."""
        wanted = set(events)
        sessions = sorted({sid for sid, _ in wanted})
        spans: dict[str, list[tuple[int, int, str]]] = defaultdict(list)
        for start in range(0, len(sessions), _CHUNK):
            chunk = sessions[start : start + _CHUNK]
            marks = ", ".join("?" for _ in chunk)
            for sid, first, last, xid in self._db.rows(
                "SELECT session_id, first_ordinal, last_ordinal, id FROM exchanges "
                f"WHERE session_id IN ({marks}) ORDER BY session_id, first_ordinal",
                chunk,
            ):
                spans[str(sid)].append((int(first), int(last), str(xid)))
        out: dict[tuple[str, int], str] = {}
        for sid, ordinal in wanted:
            rows = spans.get(sid, [])
            at = bisect.bisect_right(rows, ordinal, key=lambda r: r[0]) - 1
            if at >= 0 and rows[at][0] <= ordinal <= rows[at][1]:
                out[(sid, ordinal)] = rows[at][2]
        return out

    def of(self, session_id: str) -> list[Exchange]:
        """A session's exchanges, in order."""
        rows = self._db.rows(
            f"SELECT {EXCHANGE_COLS} FROM exchanges WHERE session_id = ? ORDER BY first_ordinal",
            (session_id,),
        )
        return [exchange_from_row(r) for r in rows]

    def get(self, exchange_id: str) -> Exchange | None:
        return self.many([exchange_id]).get(exchange_id)

    def many(self, exchange_ids: list[str]) -> dict[str, Exchange]:
        """The exchanges of these ids that exist, by id."""
        out: dict[str, Exchange] = {}
        ids = list(dict.fromkeys(exchange_ids))
        with self._db.ro() as tx:
            for i in range(0, len(ids), _CHUNK):
                chunk = ids[i : i + _CHUNK]
                marks = ",".join("?" * len(chunk))
                for r in tx.run(
                    f"SELECT {EXCHANGE_COLS} FROM exchanges WHERE id IN ({marks})", chunk
                ):
                    out[r[0]] = exchange_from_row(r)
        return out


_SESSION_INSERT = (
    f"INSERT INTO sessions ({SESSION_COLS}, name) "
    "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (id) DO NOTHING"
)

# {sid}: the session's id, or the subquery finding it from what the caller named
# Reads under the lock are written as walks of an index from the session's end (ORDER BY
# ... DESC LIMIT), not aggregates over the session: PostgreSQL plans a prepared statement
# once, often while the tables are new and their statistics empty, and an aggregate it
# planned then reads every row of the session on every append (O(session) per batch).
_LAST_ORDINAL = (
    "SELECT coalesce((SELECT ordinal FROM events WHERE session_id = {sid} "
    "ORDER BY ordinal DESC LIMIT 1), 0)"
)

# the events new ones may extend: from the last exchange's prompt on; all of them while
# the session has one exchange or none (the first takes the lead-in's harness text)
# (the last exchange's first ordinal when one is before it; its walk stops at one row)
_OPEN_TAIL = (
    f"SELECT {EVENT_COLS} FROM events WHERE session_id = {{sid}} AND ordinal >= coalesce(("
    "SELECT first_ordinal FROM exchanges WHERE session_id = {sid} AND first_ordinal > ("
    "SELECT first_ordinal FROM exchanges WHERE session_id = {sid} ORDER BY first_ordinal "
    "LIMIT 1) ORDER BY first_ordinal DESC LIMIT 1), 0) ORDER BY ordinal"
)


def _latest(sid: str, below: str = "") -> str:
    """The first ordinal of the session's last exchange (before the one ``below`` finds)."""
    under = f" AND first_ordinal < ({below})" if below else ""
    return (
        f"SELECT first_ordinal FROM exchanges WHERE session_id = {sid}{under} "
        "ORDER BY first_ordinal DESC LIMIT 1"
    )


# the session's last three exchanges (all of them while it has fewer), oldest first: the
# write of the batch finds in them what it would read (``StoredTail``); the third's first
# ordinal is found by three walks of one row each
_LAST_THREE = (
    f"SELECT pk, {EXCHANGE_COLS} FROM exchanges WHERE session_id = {{sid}} AND first_ordinal "
    ">= coalesce(({third}), 0) ORDER BY first_ordinal"
)

_ID_INSERT = "INSERT INTO api_messages (session_id, message_id, ordinal) VALUES "

_ID_PAGE = 500  # rows per statement: 1,500 parameters, under either driver's limit


@dataclass(frozen=True, slots=True)
class AppendResult:
    added: int  # messages stored now
    skipped: int  # messages whose client id was stored already (or repeated in the batch)
    last_ordinal: int


class ApiPart:
    """``apply_batch(conn, batch)`` is the backend's ingest write (events, exchanges,
    index rows) run inside the append's transaction; ``dialect`` its SQL style."""

    def __init__(
        self, db: Db, apply_batch: Callable[[Any, IngestBatch], None], dialect: Dialect
    ) -> None:
        self._db = db
        self._apply = apply_batch
        self._d = dialect

    def create(self, session: Session) -> tuple[Session, bool]:
        """Store ``session`` (with its ``name``) unless its id exists; (the stored session,
        whether it is new)."""
        d = self._d
        with self._db.write() as conn:
            params = (*session_params(session, d.time), session.name)
            cur = conn.execute(d(_SESSION_INSERT), params)
            created = (cur.rowcount or 0) > 0
            row = conn.execute(
                d(f"SELECT {SESSION_READ_COLS} FROM sessions WHERE id = ?"), (session.id,)
            ).fetchone()
        return session_from_row(row), created

    def append(
        self,
        session_id: str,
        messages: Sequence[ApiMessage],
        *,
        user: str | None = None,
        key_hash: str | None = None,
        check: Callable[[Session], None] | None = None,
    ) -> AppendResult:
        """Store the messages not stored already, all or none. ``session_id`` names the
        session as :meth:`SessionsPart.get` takes it: with ``user``, that user's session of
        that id or name; with ``key_hash`` too, only while that user's API key of this hash
        is live (checked in the statement that locks the session: a caller who knows the
        key's user already needs no lookup of its own). ``NotFound`` for an unknown
        session (or a key not live); then ``check`` sees the session as read under the
        lock and may refuse it (raise: the caller's checks of the session, without a read
        of their own); then ``ConfigError`` naming the first message that stores nothing
        (no text, parts or tool calls: its id would be recorded with no event, and a later
        real message of that id skipped). Text is scrubbed as sync scrubs it (lone
        surrogates, NUL), client ids too."""
        messages = [_scrub_id(m) for m in messages]
        try:
            return self._append(session_id, messages, user, key_hash, check)
        except StaleConnection:  # found ended before anything was done: once more
            return self._append(session_id, messages, user, key_hash, check)

    def _append(
        self,
        session_id: str,
        messages: list[ApiMessage],
        user: str | None,
        key_hash: str | None,
        check: Callable[[Session], None] | None,
    ) -> AppendResult:
        d = self._d
        where, found = owned_session(user, session_id)
        lock_where, lock_by = owned_session(user, session_id, key_hash=key_hash)
        # the reads sent with the lock find the session's id as the lock does; the client
        # ids are read for each id the lock may find (``owned_session``: the id named, or
        # the user's id for that name), and kept for the one it found
        sid, by, ids_of = "?", [session_id], [session_id]
        if user is not None:
            sid, by = f"(SELECT id FROM sessions {where})", found
            ids_of = [session_id, named_session_id(user, session_id)]
        with (self._db.batch or self._db.write)() as conn:
            # the session row locked, then read under the lock: the client ids stored
            # already, the last ordinal, and the events new ones may extend (_OPEN_TAIL). All
            # four are sent before any is read: the server runs them in order, so the reads
            # see what the lock's previous holder committed; one wait in a pipeline
            locked = conn.execute(
                d(f"SELECT {SESSION_READ_COLS} FROM sessions {lock_where}{d.row_lock}"), lock_by
            )
            wanted = [m.client_id for m in messages]
            stored = self._stored_ids(conn, ids_of, wanted)
            ordinals = conn.execute(d(_LAST_ORDINAL.format(sid=sid)), by)
            opened = conn.execute(d(_OPEN_TAIL.format(sid=sid)), [*by, *by, *by])
            third = _latest(sid, _latest(sid, _latest(sid)))
            last_three = conn.execute(d(_LAST_THREE.format(sid=sid, third=third)), by * 4)
            row = locked.fetchone()
            if row is None:
                raise NotFound(f"no session {session_id!r}")
            session = session_from_row(row)
            session_id = session.id  # the stored id, whatever named it
            if check is not None:
                check(session)
            check_storable(messages)
            at = ids_of.index(session_id) + 1  # the column of the found session's flags
            seen = {str(r[0]) for cur in stored for r in cur.fetchall() if r[at] is not None}
            base = last = int(ordinals.fetchone()[0])
            tail = [event_from_row(r) for r in opened.fetchall()]
            known = StoredTail(
                session, tuple((int(r[0]), exchange_from_row(r[1:])) for r in last_three.fetchall())
            )
            events: list[Event] = []
            ids: list[tuple[str, str, int]] = []
            added = skipped = 0
            for message in messages:
                cid = message.client_id
                if cid is not None and cid in seen:
                    skipped += 1
                    continue
                for event in message.events:
                    last += 1
                    events.append(replace(event, session_id=session_id, ordinal=last))
                if cid is not None:
                    seen.add(cid)
                    ids.append((session_id, cid, last))
                added += 1
            for at in range(0, len(ids), _ID_PAGE):  # one statement, not one per message
                page = ids[at : at + _ID_PAGE]
                values = ", ".join(["(?, ?, ?)"] * len(page))
                conn.execute(d(_ID_INSERT + values), [v for row in page for v in row])
            if events:
                events = list(
                    scrub_batch(IngestBatch(session=session, events=tuple(events))).events
                )
                exchanges = [x for x in build_exchanges([*tail, *events]) if x.last_ordinal > base]
                touched = replace(session, updated_at=datetime.now(UTC))
                batch = IngestBatch(
                    session=touched,
                    events=tuple(events),
                    exchanges=tuple(exchanges),
                    stored=known,
                )
                self._apply(conn, batch)
        return AppendResult(added, skipped, last)

    def _stored_ids(self, conn: Any, sessions: list[str], wanted: list[str | None]) -> list[Any]:
        """The cursors (not yet read) of which of ``wanted`` are stored for each of the
        session ids ``sessions``: a row per id, the id then one column per session (not
        NULL where it is stored), 500 ids per statement. Each (session, id) pair is its
        own search of the primary key, whatever plan the server keeps for the statement
        (with the session as a subquery and the ids as a list, PostgreSQL's plan made while
        the table was new read all of the session's ids on every append)."""
        ids = sorted({w for w in wanted if w is not None})
        found = ", ".join(
            ["(SELECT 1 FROM api_messages a WHERE a.session_id = ? AND a.message_id = m.column1)"]
            * len(sessions)
        )
        out: list[Any] = []
        for at in range(0, len(ids), 500):
            page = ids[at : at + 500]
            values = ", ".join(["(?)"] * len(page))
            sql = f"SELECT m.column1, {found} FROM (VALUES {values}) AS m"
            out.append(conn.execute(self._d(sql), (*sessions, *page)))
        return out

    def message_ids(self, session_id: str) -> dict[str, int]:
        """Client message id → the ordinal its message ends at."""
        rows = self._db.rows(
            "SELECT message_id, ordinal FROM api_messages WHERE session_id = ?", (session_id,)
        )
        return {str(r[0]): int(r[1]) for r in rows}


def check_storable(messages: Sequence[ApiMessage]) -> None:
    """``ConfigError`` naming the first message (by its index) that makes no event."""
    for n, message in enumerate(messages):
        if not message.events:
            raise ConfigError(f"message {n} has no content: send text, content parts or tool calls")


def _scrub_id(message: ApiMessage) -> ApiMessage:
    cid = message.client_id
    if cid is None or scrub_deep(cid) == cid:
        return message
    return replace(message, client_id=scrub_deep(cid))
