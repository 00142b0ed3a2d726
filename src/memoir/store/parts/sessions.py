"""Sessions and how they get in: the session rows, ingest, the secret re-scan.

Sessions: one row per conversation, with its policy flags; listing, lookup, deletion.

What ingest writes and resumes from: batches (session + events + exchanges + index rows
+ source state + skipped lines, one transaction), per-file source states, skipped lines.

The re-scan of derived text with a newer secret detector (:mod:`memoir.ingest.verify`
decides what to change): a page of a target's rows after a cursor is read, and its changes
and the new cursor are written in one transaction, so a run killed half-way resumes where
its last page ended. Targets: ``checkpoints`` and ``traces`` (``data``, JSON), ``cache``
(``value``: a model's cached answer), ``memory`` (an item's content and quotes; an item
that holds a credential is forgotten with its tombstones, vectors and index rows, by the
memory engine's ``forget_in`` handed to :meth:`RescanPart.save`). The archive, the events
and the search index are never touched: they keep the bytes."""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from memoir.errors import MemoirError, NotFound, UsageError
from memoir.model import Session, SessionFlags
from memoir.model.event import RecentKey, RecentPage, RecentQuery, SessionInfo, named_session_id
from memoir.store.codec import (
    SESSION_READ_COLS,
    SOURCE_COLS,
    from_iso,
    prefixed,
    session_from_row,
    skipped_from_row,
    source_from_row,
)
from memoir.store.db import Db, Part, Plan, Stmt, Tx, tx_dialect
from memoir.store.parts.jobs import LIVE_KEY_USER
from memoir.store.search_sql import filter_sql
from memoir.store.values import (
    IngestBatch,
    SearchFilters,
    SkippedLine,
    SourceState,
    with_scrub_retry,
)

__all__ = [
    "TABLE_TARGETS",
    "ForgetIn",
    "IngestPart",
    "RescanPart",
    "RescanState",
    "SessionsPart",
    "owned_session",
    "prefix_plan",
    "resolve_plan",
    "session_plan",
]


def session_plan(session_id: str, user: str | None = None) -> Plan[Session | None]:
    """:meth:`SessionsPart.get` as a plan."""
    tail, params = owned_session(user, session_id)
    rows = yield Stmt(f"SELECT {SESSION_READ_COLS} FROM sessions {tail}", params)
    return session_from_row(rows[0]) if rows else None


def prefix_plan(prefix: str, user: str | None = None) -> Plan[list[Session]]:
    """:meth:`SessionsPart.with_prefix` as a plan."""
    mine, params = _owner("", user)
    rows = yield Stmt(
        f"SELECT {SESSION_READ_COLS} FROM sessions WHERE (substr(id, 1, ?) = ? "
        f"OR substr(name, 1, ?) = ?){mine} ORDER BY id",
        (len(prefix), prefix, len(prefix), prefix, *params),
    )
    return [session_from_row(r) for r in rows]


def resolve_plan(ref: str, user: str | None = None) -> Plan[str]:
    """The session id ``ref`` names among ``user``'s sessions (everyone's with None):
    the session of that id (or, with ``user``, of that name), or the one session it is
    a prefix of (a main session before its subagents, whose ids extend the parent's).
    ``NotFound`` when none (another user's session is not told apart from one that
    does not exist); a ``MemoirError`` listing them when several; ``UsageError`` for
    an empty one (it would be a prefix of every session)."""
    _check_ref(ref)
    named = yield from session_plan(ref, user)  # its id, or (with ``user``) its name
    if named is not None:
        return named.id
    return _one_of(ref, (yield from prefix_plan(ref, user)))


def _check_ref(ref: str) -> None:
    if not ref.strip():
        raise UsageError(
            "the session id is empty: give a session id or a unique prefix of it (a "
            "search hit shows its session's id)"
        )


def _one_of(ref: str, found: list[Session]) -> str:
    """The one session of those ``ref`` is a prefix of (a main one before its subagents)."""
    main = [s for s in found if not s.flags.subagent]
    matches = [s.id for s in (main if len(main) == 1 else found)]
    if len(matches) == 1:
        return str(matches[0])
    if matches:
        shown = ", ".join(sorted(matches)[:5]) + (", …" if len(matches) > 5 else "")
        raise MemoirError(
            f"session prefix {ref!r} matches {len(matches)} sessions ({shown}); give more of the id"
        )
    raise NotFound(f"no session {ref!r} in this Memoir home (run `memoir sync`?)")


class SessionsPart:
    """``delete_rows(conn, session_id) -> bool`` is the backend's deletion of a session and
    everything derived from it (False: no such session), run in one write transaction."""

    def __init__(self, db: Db, delete_rows: Callable[[Any, str], bool]) -> None:
        self._db = db
        self._delete_rows = delete_rows

    def get(self, session_id: str, *, user: str | None = None) -> Session | None:
        """The session ``session_id`` names: with ``user``, that user's session of that id
        or of that name (another user's is None, as one that does not exist); without, the
        session of that id. See :func:`owned_session`."""
        return self._db.query(session_plan(session_id, user))

    def resolve(self, ref: str, *, user: str | None = None) -> str:
        """The session id ``ref`` names among ``user``'s sessions (everyone's with None):
        see :func:`resolve_plan`."""
        _check_ref(ref)
        named = self.get(ref, user=user)
        return named.id if named is not None else _one_of(ref, self.with_prefix(ref, user=user))

    def with_prefix(self, prefix: str, *, user: str | None = None) -> list[Session]:
        """The sessions whose id, or name, starts with ``prefix`` (``user``'s only, when
        given), by id: the prefix compared in the query, never by reading every session."""
        return self._db.query(prefix_plan(prefix, user))

    def project_paths(self, *, user: str | None = None) -> list[tuple[str, str | None]]:
        """Each project with the folder its sessions ran in (the latest one when they
        differ; None when no session recorded one), by name (``user``'s sessions only,
        when given)."""
        mine, params = _owner("WHERE ", user)
        rows = self._db.rows(
            f"SELECT project, max(cwd) FROM sessions {mine} GROUP BY project ORDER BY project",
            params,
        )
        return [(str(r[0]), str(r[1]) if r[1] else None) for r in rows]

    def projects(self, *, user: str | None = None) -> list[tuple[str, str | None, int]]:
        """Each project by name: the folder its sessions ran in (as :meth:`project_paths`)
        and how many sessions it has (``user``'s sessions only, when given)."""
        mine, params = _owner("WHERE ", user)
        rows = self._db.rows(
            f"SELECT project, max(cwd), count(*) FROM sessions {mine} GROUP BY project "
            "ORDER BY project",
            params,
        )
        return [(str(r[0]), str(r[1]) if r[1] else None, int(r[2])) for r in rows]

    def recent(
        self, *, project: str | None = None, limit: int | None = None, user: str | None = None
    ) -> list[SessionInfo]:
        """Most recently active first (``user``'s only, when given). The order key (the
        time of a session's last exchange) is one index seek per session; counts are
        computed for the page only."""
        return list(self.listing(user, RecentQuery(project=project), limit=limit).sessions)

    def listing(
        self,
        user: str | None,
        query: RecentQuery,
        *,
        limit: int | None = None,
        after: RecentKey | None = None,
        counted: bool = False,
    ) -> RecentPage:
        """``user``'s sessions (everyone's with None) that pass ``query``, most recently
        active first, those past ``after`` (a keyset: the last one of the previous page);
        at most ``limit``, and whether more follow. ``counted``: with the total that pass
        ``query`` and the projects and harnesses of all of ``user``'s sessions (the
        facets). Owner, filters, order, page, total and facets are all in the queries."""
        with self._db.ro() as tx:
            inner, params = _recent_inner(tx, user, query)
            keyset, more_params = _after(tx, after)
            page = f" LIMIT {max(0, int(limit)) + 1}" if limit is not None else ""
            sql = (
                f"SELECT {prefixed(SESSION_READ_COLS, 'p')}, "
                "(SELECT count(*) FROM exchanges x WHERE x.session_id = p.id), "
                "(SELECT count(*) FROM events v WHERE v.session_id = p.id), "
                "p.first_at, p.last_at FROM ("  # the page first, its counts after
                f"SELECT * FROM ({inner}) q WHERE 1 = 1{keyset} "
                f"ORDER BY q.last_at DESC NULLS LAST, q.id{page}"
                ") p ORDER BY p.last_at DESC NULLS LAST, p.id"
            )
            rows = tx.run(sql, [*params, *more_params])
            found = [
                SessionInfo(
                    session=session_from_row(r[:13]),
                    exchanges=int(r[13]),
                    events=int(r[14]),
                    first_at=from_iso(r[15]),
                    last_at=from_iso(r[16]),
                )
                for r in rows
            ]
            more = limit is not None and len(found) > limit
            found = found[: max(0, int(limit))] if limit is not None else found
            total: int | None = None
            projects: tuple[str, ...] = ()
            harnesses: tuple[str, ...] = ()
            if counted:
                total = int(tx.run(f"SELECT count(*) FROM ({inner}) p", params)[0][0])
                mine, owner = _owner("WHERE ", user)
                projects = tuple(
                    str(r[0])
                    for r in tx.run(
                        f"SELECT DISTINCT project FROM sessions {mine} ORDER BY project", owner
                    )
                )
                harnesses = tuple(
                    str(r[0])
                    for r in tx.run(
                        f"SELECT DISTINCT harness FROM sessions {mine} ORDER BY harness", owner
                    )
                )
        return RecentPage(tuple(found), more, total, projects, harnesses)

    def created_order(
        self,
        user: str,
        query: RecentQuery,
        *,
        after: tuple[datetime, str] | None = None,
        limit: int = 50,
    ) -> list[Session]:
        """``user``'s sessions that pass ``query``, in the order they were created (then by
        id), those past ``after`` (the (created_at, id) of the last of the previous page)."""
        with self._db.ro() as tx:
            inner, params = _recent_inner(tx, user, query)
            sql = f"SELECT {prefixed(SESSION_READ_COLS, 'q')} FROM ({inner}) q"
            if after is not None:
                sql += " WHERE (q.created_at > ? OR (q.created_at = ? AND q.id > ?))"
                params += [tx.time(after[0]), tx.time(after[0]), after[1]]
            sql += f" ORDER BY q.created_at, q.id LIMIT {max(0, int(limit))}"
            return [session_from_row(r) for r in tx.run(sql, params)]

    def set_flags(self, session_id: str, flags: SessionFlags) -> None:
        with self._db.tx() as tx:
            updated = tx.run(
                "UPDATE sessions SET incognito = ?, archived = ?, subagent = ?, "
                "memory_disabled = ? WHERE id = ? RETURNING id",
                (
                    flags.incognito,
                    flags.archived,
                    flags.subagent,
                    flags.memory_disabled,
                    session_id,
                ),
            )
            if not updated:
                raise NotFound(f"no session {session_id!r}")

    def delete(self, session_id: str) -> None:
        """Remove a session with its events, exchanges, index rows, vectors and summary."""
        with self._db.write() as conn:
            if not self._delete_rows(conn, session_id):
                raise NotFound(f"no session {session_id!r}")

    def ids(self, filters: SearchFilters) -> list[str]:
        """Ids of the sessions that pass ``filters``' session-level parts (project, session,
        harness, subagents); the exchange-level parts (dates, role) are not looked at."""
        with self._db.ro() as tx:
            where, params = filter_sql(filters, tx_dialect(tx), exchange=None, session="s")
            rows = tx.run(f"SELECT s.id FROM sessions s WHERE 1 = 1{where}", params)
        return [str(r[0]) for r in rows]


# the session's user has a live API key of this hash
_KEY_LIVE = f" AND user_name IN ({LIVE_KEY_USER})"


def owned_session(
    user: str | None, ref: str, *, key_hash: str | None = None
) -> tuple[str, list[Any]]:
    """The ``WHERE … LIMIT 1`` tail of a query over ``sessions`` finding the one session
    ``ref`` names, and its parameters. With ``user``: that user's session whose id is
    ``ref`` or whose name is (its id is :func:`named_session_id` of the user and ``ref``),
    the exact id first should both be stored; with ``key_hash`` as well, only while that
    user's API key of this hash is live. Without ``user``: the session of id ``ref``.
    Every lookup of a caller's session goes through here, so another user's session and
    one that does not exist are the same query finding nothing."""
    if user is None:
        return "WHERE id = ? LIMIT 1", [ref]
    live, key = (_KEY_LIVE, [key_hash]) if key_hash is not None else ("", [])
    return (
        f"WHERE user_name = ? AND id IN (?, ?){live} "
        "ORDER BY CASE WHEN id = ? THEN 0 ELSE 1 END LIMIT 1",
        [user, ref, named_session_id(user, ref), *key, ref],
    )


def _owner(lead: str, user: str | None) -> tuple[str, list[Any]]:
    """The clause keeping ``user``'s sessions (``lead`` before it: "WHERE " or "" for an
    ``AND`` clause), none for None."""
    if user is None:
        return "", []
    return (f"{lead}user_name = ?" if lead else " AND user_name = ?"), [user]


def _recent_inner(tx: Tx, user: str | None, query: RecentQuery) -> tuple[str, list[Any]]:
    """The sessions of ``user`` passing ``query``, each with ``first_at`` and ``last_at``
    (the times of its first and last exchange; its creation and update times without)."""
    clauses: list[str] = []
    params: list[Any] = []
    for column, value in (
        ("s.user_name", user),
        ("s.project", query.project),
        ("s.harness", query.harness),
    ):
        if value is not None:
            clauses.append(f"{column} = ?")
            params.append(value)
    spans = (
        f"SELECT {prefixed(SESSION_READ_COLS, 's')}, "
        "coalesce((SELECT coalesce(x.started_at, x.ended_at) FROM exchanges x "
        "WHERE x.session_id = s.id ORDER BY x.first_ordinal LIMIT 1), s.created_at) AS first_at, "
        "coalesce((SELECT coalesce(x.ended_at, x.started_at) FROM exchanges x "
        "WHERE x.session_id = s.id ORDER BY x.first_ordinal DESC LIMIT 1), s.updated_at) "
        "AS last_at FROM sessions s" + (f" WHERE {' AND '.join(clauses)}" if clauses else "")
    )
    if query.since is None and query.until is None:
        return spans, params
    # active within [since, until): its span (first to last exchange) overlaps it
    within: list[str] = ["coalesce(w.first_at, w.last_at) IS NOT NULL"]
    if query.since is not None:
        within.append("coalesce(w.last_at, w.first_at) >= ?")
        params.append(tx.time(query.since))
    if query.until is not None:
        within.append("coalesce(w.first_at, w.last_at) < ?")
        params.append(tx.time(query.until))
    return f"SELECT * FROM ({spans}) w WHERE {' AND '.join(within)}", params


def _after(tx: Tx, key: RecentKey | None) -> tuple[str, list[Any]]:
    """The keyset clause over ``q``: the sessions after ``key`` in the listing's order
    (``last_at`` newest first, those with none last, then id)."""
    if key is None:
        return "", []
    at, sid = key
    if at is None:
        return " AND q.last_at IS NULL AND q.id > ?", [sid]
    t = tx.time(at)
    return (
        " AND (q.last_at < ? OR (q.last_at = ? AND q.id > ?) OR q.last_at IS NULL)",
        [t, t, sid],
    )


class IngestPart:
    """``apply_batch(conn, batch)`` is the backend's write of one batch inside a write
    transaction (primary keys and index rows differ by backend)."""

    def __init__(self, db: Db, apply_batch: Callable[[Any, IngestBatch], None]) -> None:
        self._db = db
        self._apply_batch = apply_batch

    def apply(self, batch: IngestBatch) -> None:
        """Write ``batch`` in one transaction (idempotent; ``ConcurrentWrite`` when another
        process moved the source on since it was read)."""

        def run(b: IngestBatch) -> None:
            with self._db.write() as conn:
                self._apply_batch(conn, b)

        with_scrub_retry(run, batch)

    def source(self, path: str) -> SourceState | None:
        rows = self._db.rows(f"SELECT {SOURCE_COLS} FROM sources WHERE path = ?", (path,))
        return source_from_row(rows[0]) if rows else None

    def sources(self) -> dict[str, SourceState]:
        return {
            r[0]: source_from_row(r) for r in self._db.rows(f"SELECT {SOURCE_COLS} FROM sources")
        }

    def skipped(self, path: str | None = None) -> list[SkippedLine]:
        sql = 'SELECT path, line, "offset", reason, detail FROM skipped_lines'
        if path is None:
            rows = self._db.rows(sql + " ORDER BY path, line")
        else:
            rows = self._db.rows(sql + " WHERE path = ? ORDER BY line", (path,))
        return [skipped_from_row(r) for r in rows]


TABLE_TARGETS = ("checkpoints", "traces", "cache", "memory")
_PAGES = {
    "checkpoints": "SELECT id, data FROM checkpoints WHERE id > ? ORDER BY id LIMIT ?",
    "traces": "SELECT id, data FROM traces WHERE id > ? ORDER BY id LIMIT ?",
    "cache": "SELECT key, value FROM cache WHERE key > ? ORDER BY key LIMIT ?",
    "memory": "SELECT id, content FROM memory_items WHERE id > ? ORDER BY id LIMIT ?",
}
_UPDATES = {
    "checkpoints": "UPDATE checkpoints SET data = ? WHERE id = ?",
    "traces": "UPDATE traces SET data = ? WHERE id = ?",
    "cache": "UPDATE cache SET value = ? WHERE key = ?",
}


@dataclass(frozen=True, slots=True)
class RescanState:
    """How far the re-scan of ``target`` with ``detector`` has got (totals of every run)."""

    target: str
    detector: str
    cursor: str = ""
    scanned: int = 0
    changed: int = 0
    done: bool = False


# forgets memory items inside a transaction (``MemoryItemsPart.forget_in``)
ForgetIn = Callable[[Tx, list[str], datetime], object]


class RescanPart(Part):
    def states(self) -> dict[str, RescanState]:
        rows = self._db.rows(
            "SELECT target, detector, cursor, scanned, changed, done FROM secret_rescan"
        )
        return {
            str(r[0]): RescanState(
                str(r[0]), str(r[1]), str(r[2]), int(r[3]), int(r[4]), bool(r[5])
            )
            for r in rows
        }

    def page(self, target: str, cursor: str, limit: int) -> list[tuple[str, list[str]]]:
        """Up to ``limit`` rows of ``target`` after ``cursor``: each key and its texts (an
        item's content, then its quotes)."""
        after: str | int = cursor
        if target == "traces":
            after = int(cursor) if cursor else -1
        with self._db.ro() as tx:
            rows = tx.run(_PAGES[target], (after, limit))
            out = [(str(r[0]), [_text(r[1])]) for r in rows]
            if target == "memory" and out:
                marks = ", ".join("?" for _ in out)
                quotes = tx.run(
                    f"SELECT item_id, quote FROM memory_sources WHERE item_id IN ({marks}) "
                    "ORDER BY item_id, n",
                    [key for key, _ in out],
                )
                by_item = dict(out)
                for item_id, quote in quotes:
                    by_item[str(item_id)].append(str(quote))
        return out

    def save(
        self,
        state: RescanState,
        *,
        updates: Mapping[str, str] = {},
        forget: Sequence[str] = (),
        forget_in: ForgetIn | None = None,
    ) -> None:
        """Write a page's changes (``updates``: key → new text; ``forget``: memory items
        to forget, by ``forget_in``, the memory engine's) and ``state`` in one
        transaction."""
        if forget and forget_in is None:
            raise ValueError("memory items to forget need the memory engine's forget_in")
        with self._db.tx() as tx:
            if updates:
                sql = _UPDATES[state.target]
                tx.many(sql, [(text, _key(state.target, k)) for k, text in updates.items()])
            if forget and forget_in is not None:
                forget_in(tx, list(forget), datetime.now(UTC))
            _put_state(tx, state)


def _text(value: object) -> str:
    """A column's text: PostgreSQL hands a ``jsonb`` column back parsed."""
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)


def _key(target: str, key: str) -> str | int:
    return int(key) if target == "traces" else key


def _put_state(tx: Tx, s: RescanState) -> None:
    tx.run(
        "INSERT INTO secret_rescan (target, detector, cursor, scanned, changed, done) "
        "VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT (target) DO UPDATE SET "
        "detector = excluded.detector, cursor = excluded.cursor, scanned = excluded.scanned, "
        "changed = excluded.changed, done = excluded.done",
        (s.target, s.detector, s.cursor, s.scanned, s.changed, int(s.done)),
    )
