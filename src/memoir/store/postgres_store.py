"""The PostgreSQL backend: psycopg 3 with a connection pool.

Connections are in autocommit mode and every method that writes runs in one explicit
transaction (``conn.transaction()``). Migrations take a transaction-level advisory lock,
so replicas starting together migrate once. psycopg errors become
:class:`~memoir.errors.StoreError` here, with the URL's password masked.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from datetime import datetime
from functools import lru_cache
from typing import Any

import psycopg
from psycopg_pool import ConnectionPool

from memoir.errors import MigrationError, NotFound, StoreError
from memoir.model import Event, Exchange, Session, SessionFlags
from memoir.store import health, postgres_search
from memoir.store.codec import (
    EVENT_COLS,
    EXCHANGE_COLS,
    SESSION_COLS,
    SOURCE_COLS,
    event_from_row,
    exchange_from_row,
    session_from_row,
    skipped_from_row,
    source_from_row,
    to_utc,
)
from memoir.store.migrations import CURRENT_VERSION, pending
from memoir.store.port import (
    IngestBatch,
    SearchFilters,
    SkippedLine,
    SourceState,
    TextHit,
)
from memoir.store.postgres_ingest import apply_batch, delete_session_rows
from memoir.store.side_tables import SideTablesMixin, Tx
from memoir.store.write_retry import with_scrub_retry

__all__ = ["PostgresStore", "mask_url", "migrate"]

MIGRATION_LOCK = 0x6D656D6F6972  # "memoir"
INDEX_KEYS = ("exchange_search", "exchange_pk")


def mask_url(url: str) -> str:
    if "@" in url and "://" in url:
        scheme, rest = url.split("://", 1)
        creds, host = rest.rsplit("@", 1)
        return f"{scheme}://{creds.split(':', 1)[0]}:***@{host}"
    return url


@lru_cache(maxsize=256)
def _pg(sql: str) -> str:
    return sql.replace("?", "%s")


def _version(conn: psycopg.Connection[Any]) -> int:
    row = conn.execute("SELECT max(version) FROM schema_version").fetchone()
    return int(row[0] or 0) if row else 0


def migrate(conn: psycopg.Connection[Any], target: int | None = None) -> int:
    """Bring the schema to ``target`` (default: current); returns the version reached.
    ``conn`` must be in autocommit mode."""
    with conn.transaction():
        conn.execute("SELECT pg_advisory_xact_lock(%s)", (MIGRATION_LOCK,))
        conn.execute(
            "CREATE TABLE IF NOT EXISTS schema_version (version INTEGER PRIMARY KEY, "
            "name TEXT NOT NULL, applied_at TIMESTAMPTZ NOT NULL DEFAULT now())"
        )
        version = _version(conn)
    if version > CURRENT_VERSION:
        raise MigrationError(
            f"the database is at schema v{version}, newer than this Memoir (v"
            f"{CURRENT_VERSION}); upgrade memoir"
        )
    for migration in pending(version, target):
        try:
            with conn.transaction():
                conn.execute("SELECT pg_advisory_xact_lock(%s)", (MIGRATION_LOCK,))
                if _version(conn) >= migration.version:
                    continue
                for statement in migration.postgres:
                    conn.execute(statement)
                if migration.reindex:
                    postgres_search.rebuild_index(conn)
                conn.execute(
                    "INSERT INTO schema_version (version, name) VALUES (%s, %s)",
                    (migration.version, migration.name),
                )
        except psycopg.Error as exc:
            raise MigrationError(
                f"migration v{migration.version} ({migration.name}) failed: {exc}"
            ) from exc
    return _version(conn)


class _PgTx:
    def __init__(self, conn: psycopg.Connection[Any]) -> None:
        self.conn = conn

    def run(self, sql: str, params: Sequence[Any] = ()) -> list[Any]:
        cur = self.conn.execute(_pg(sql), params)
        return cur.fetchall() if cur.description else []

    def many(self, sql: str, rows: Sequence[Sequence[Any]]) -> None:
        with self.conn.cursor() as cur:
            cur.executemany(_pg(sql), rows)

    def time(self, value: datetime | None) -> Any:
        return to_utc(value)


class PostgresStore(SideTablesMixin):
    backend = "postgres"

    def __init__(
        self, url: str, *, target_version: int | None = None, max_connections: int = 8
    ) -> None:
        self._masked = mask_url(url)
        try:
            with psycopg.connect(url, autocommit=True, connect_timeout=10) as conn:
                migrate(conn, target_version)
        except psycopg.Error as exc:
            raise StoreError(
                f"cannot open PostgreSQL at {self._masked}: {_first_line(exc)}"
            ) from exc
        self._pool = ConnectionPool(
            url,
            min_size=1,
            max_size=max_connections,
            kwargs={"autocommit": True},
            open=False,
            name="memoir",
        )
        try:
            self._pool.open(wait=True, timeout=10.0)
        except psycopg.Error as exc:
            self._pool.close()
            raise StoreError(
                f"cannot open PostgreSQL at {self._masked}: {_first_line(exc)}"
            ) from exc

    def _cannot_open(self, exc: BaseException) -> str:
        return f"cannot open PostgreSQL at {self._masked}: {_first_line(exc)}"

    # connections and transactions ---------------------------------------------------------
    @contextmanager
    def _conn(self, *, write: bool) -> Iterator[psycopg.Connection[Any]]:
        try:
            with self._pool.connection() as conn:
                if write:
                    with conn.transaction():
                        yield conn
                else:
                    yield conn
        except psycopg.Error as exc:
            raise StoreError(f"postgres: {_first_line(exc)}") from exc

    @contextmanager
    def _tx(self) -> Iterator[Tx]:
        with self._conn(write=True) as conn:
            yield _PgTx(conn)

    @contextmanager
    def _ro(self) -> Iterator[Tx]:
        with self._conn(write=False) as conn:
            yield _PgTx(conn)

    def _all_rows(self, sql: str, params: Sequence[Any] = ()) -> list[Any]:
        with self._conn(write=False) as conn:
            return conn.execute(sql, params).fetchall()

    def close(self) -> None:
        self._pool.close()

    def schema_version(self) -> int:
        with self._conn(write=False) as conn:
            return _version(conn)

    # ingest ----------------------------------------------------------------------------
    def apply_ingest(self, batch: IngestBatch) -> None:
        def run(b: IngestBatch) -> None:
            with self._conn(write=True) as conn:
                apply_batch(conn, b)

        with_scrub_retry(run, batch)

    def source_state(self, path: str) -> SourceState | None:
        rows = self._all_rows(f"SELECT {SOURCE_COLS} FROM sources WHERE path = %s", (path,))
        return source_from_row(rows[0]) if rows else None

    def source_states(self) -> dict[str, SourceState]:
        rows = self._all_rows(f"SELECT {SOURCE_COLS} FROM sources")
        return {r[0]: source_from_row(r) for r in rows}

    def skipped_lines(self, path: str | None = None) -> list[SkippedLine]:
        sql = 'SELECT path, line, "offset", reason, detail FROM skipped_lines'
        if path is None:
            rows = self._all_rows(sql + " ORDER BY path, line")
        else:
            rows = self._all_rows(sql + " WHERE path = %s ORDER BY line", (path,))
        return [skipped_from_row(r) for r in rows]

    # sessions, events, exchanges -------------------------------------------------------------
    def get_session(self, session_id: str) -> Session | None:
        rows = self._all_rows(f"SELECT {SESSION_COLS} FROM sessions WHERE id = %s", (session_id,))
        return session_from_row(rows[0]) if rows else None

    def set_session_flags(self, session_id: str, flags: SessionFlags) -> None:
        with self._conn(write=True) as conn:
            cur = conn.execute(
                "UPDATE sessions SET incognito = %s, archived = %s, subagent = %s, "
                "memory_disabled = %s WHERE id = %s",
                (
                    flags.incognito,
                    flags.archived,
                    flags.subagent,
                    flags.memory_disabled,
                    session_id,
                ),
            )
            if cur.rowcount == 0:
                raise NotFound(f"no session {session_id!r}")

    def delete_session(self, session_id: str) -> None:
        with self._conn(write=True) as conn:
            if not delete_session_rows(conn, session_id):
                raise NotFound(f"no session {session_id!r}")

    def events(self, session_id: str, *, after: int = 0, upto: int | None = None) -> list[Event]:
        sql = f"SELECT {EVENT_COLS} FROM events WHERE session_id = %s AND ordinal > %s"
        params: list[Any] = [session_id, after]
        if upto is not None:
            sql += " AND ordinal <= %s"
            params.append(upto)
        return [event_from_row(r) for r in self._all_rows(sql + " ORDER BY ordinal", params)]

    def last_ordinal(self, session_id: str) -> int:
        rows = self._all_rows(
            "SELECT max(ordinal) FROM events WHERE session_id = %s", (session_id,)
        )
        return int(rows[0][0] or 0)

    def exchanges(self, session_id: str) -> list[Exchange]:
        rows = self._all_rows(
            f"SELECT {EXCHANGE_COLS} FROM exchanges WHERE session_id = %s ORDER BY first_ordinal",
            (session_id,),
        )
        return [exchange_from_row(r) for r in rows]

    def get_exchange(self, exchange_id: str) -> Exchange | None:
        return self.get_exchanges([exchange_id]).get(exchange_id)

    def get_exchanges(self, exchange_ids: list[str]) -> dict[str, Exchange]:
        if not exchange_ids:
            return {}
        rows = self._all_rows(
            f"SELECT {EXCHANGE_COLS} FROM exchanges WHERE id = ANY(%s)",
            (list(dict.fromkeys(exchange_ids)),),
        )
        return {r[0]: exchange_from_row(r) for r in rows}

    # search and health ------------------------------------------------------------------
    def search_text(self, query: str, filters: SearchFilters, limit: int) -> list[TextHit]:
        with self._conn(write=False) as conn:
            return postgres_search.search(conn, query, filters, limit)

    def stats(self) -> dict[str, int]:
        with self._ro() as tx:
            return health.stats(tx, *INDEX_KEYS)

    def integrity_problems(self) -> list[str]:
        with self._ro() as tx:
            return health.integrity_problems(tx, *INDEX_KEYS)

    def repair_index(self) -> int:
        with self._conn(write=True) as conn:
            return postgres_search.rebuild_index(conn)


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__
