"""Sessions: one row per conversation, with its policy flags; listing, lookup, deletion."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from memoir.errors import NotFound
from memoir.model import Session, SessionFlags
from memoir.store.codec import SESSION_COLS, from_iso, prefixed, session_from_row
from memoir.store.db import Db
from memoir.store.search_filter import filter_sql
from memoir.store.sql_common import tx_dialect
from memoir.store.values import SearchFilters, SessionInfo

__all__ = ["SessionsPart"]


class SessionsPart:
    """``delete_rows(conn, session_id) -> bool`` is the backend's deletion of a session and
    everything derived from it (False: no such session), run in one write transaction."""

    def __init__(self, db: Db, delete_rows: Callable[[Any, str], bool]) -> None:
        self._db = db
        self._delete_rows = delete_rows

    def get(self, session_id: str) -> Session | None:
        rows = self._db.rows(f"SELECT {SESSION_COLS} FROM sessions WHERE id = ?", (session_id,))
        return session_from_row(rows[0]) if rows else None

    def project_paths(self) -> list[tuple[str, str | None]]:
        """Each project with the folder its sessions ran in (the latest one when they
        differ; None when no session recorded one), by name."""
        rows = self._db.rows(
            "SELECT project, max(cwd) FROM sessions GROUP BY project ORDER BY project"
        )
        return [(str(r[0]), str(r[1]) if r[1] else None) for r in rows]

    def projects(self) -> list[tuple[str, str | None, int]]:
        """Each project by name: the folder its sessions ran in (as :meth:`project_paths`)
        and how many sessions it has."""
        rows = self._db.rows(
            "SELECT project, max(cwd), count(*) FROM sessions GROUP BY project ORDER BY project"
        )
        return [(str(r[0]), str(r[1]) if r[1] else None, int(r[2])) for r in rows]

    def recent(self, *, project: str | None = None, limit: int | None = None) -> list[SessionInfo]:
        """Most recently active first. The order key (the time of a session's last
        exchange) is one index seek per session; counts are computed for the page only."""
        where, params = ("WHERE s.project = ?", [project]) if project is not None else ("", [])
        page = f"LIMIT {max(0, int(limit))}" if limit is not None else ""
        sql = (
            f"SELECT {prefixed(SESSION_COLS, 'p')}, "
            "(SELECT count(*) FROM exchanges x WHERE x.session_id = p.id), "
            "(SELECT count(*) FROM events v WHERE v.session_id = p.id), "
            "coalesce((SELECT coalesce(x.started_at, x.ended_at) FROM exchanges x "
            "WHERE x.session_id = p.id ORDER BY x.first_ordinal LIMIT 1), p.created_at), "
            "p.last_at FROM ("
            f"SELECT {prefixed(SESSION_COLS, 's')}, coalesce((SELECT "
            "coalesce(x.ended_at, x.started_at) FROM exchanges x WHERE x.session_id = s.id "
            "ORDER BY x.first_ordinal DESC LIMIT 1), s.updated_at) AS last_at "
            f"FROM sessions s {where} "
            f"ORDER BY last_at DESC NULLS LAST, s.id {page}"
            ") p ORDER BY p.last_at DESC NULLS LAST, p.id"
        )
        return [
            SessionInfo(
                session=session_from_row(r[:12]),
                exchanges=int(r[12]),
                events=int(r[13]),
                first_at=from_iso(r[14]),
                last_at=from_iso(r[15]),
            )
            for r in self._db.rows(sql, params)
        ]

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
