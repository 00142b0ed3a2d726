"""Sessions: one row per conversation, with its policy flags; listing, lookup, deletion."""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from typing import Any

from memoir.errors import NotFound
from memoir.model import Session, SessionFlags
from memoir.model.event import RecentKey, RecentPage, RecentQuery, SessionInfo, named_session_id
from memoir.store.codec import SESSION_READ_COLS, from_iso, prefixed, session_from_row
from memoir.store.db import Db, Tx
from memoir.store.search_sql import filter_sql
from memoir.store.sql_common import tx_dialect
from memoir.store.values import SearchFilters

__all__ = ["SessionsPart", "owned_session"]


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
        tail, params = owned_session(user, session_id)
        rows = self._db.rows(f"SELECT {SESSION_READ_COLS} FROM sessions {tail}", params)
        return session_from_row(rows[0]) if rows else None

    def with_prefix(self, prefix: str, *, user: str | None = None) -> list[Session]:
        """The sessions whose id, or name, starts with ``prefix`` (``user``'s only, when
        given), by id: the prefix compared in the query, never by reading every session."""
        mine, params = _owner("", user)
        rows = self._db.rows(
            f"SELECT {SESSION_READ_COLS} FROM sessions WHERE (substr(id, 1, ?) = ? "
            f"OR substr(name, 1, ?) = ?){mine} ORDER BY id",
            (len(prefix), prefix, len(prefix), prefix, *params),
        )
        return [session_from_row(r) for r in rows]

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


def owned_session(user: str | None, ref: str) -> tuple[str, list[Any]]:
    """The ``WHERE … LIMIT 1`` tail of a query over ``sessions`` finding the one session
    ``ref`` names, and its parameters. With ``user``: that user's session whose id is
    ``ref`` or whose name is (its id is :func:`named_session_id` of the user and ``ref``),
    the exact id first should both be stored. Without: the session of id ``ref``. Every
    lookup of a caller's session goes through here, so another user's session and one
    that does not exist are the same query finding nothing."""
    if user is None:
        return "WHERE id = ? LIMIT 1", [ref]
    return (
        "WHERE user_name = ? AND id IN (?, ?) ORDER BY CASE WHEN id = ? THEN 0 ELSE 1 END LIMIT 1",
        [user, ref, named_session_id(user, ref), ref],
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
