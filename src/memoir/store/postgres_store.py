"""The PostgreSQL backend: psycopg 3 with a connection pool, and its ingest writes.

Connections are in autocommit mode; every method that writes runs in one explicit
transaction. Migrations take a transaction-level advisory lock, so replicas starting
together migrate once. psycopg errors become :class:`~memoir.errors.StoreError` here, with
the URL's password masked. An ingest batch follows :func:`memoir.store.sql_ingest.apply_batch`
(as on SQLite); PostgreSQL's own are the session upsert's timestamp merge, primary keys from
the ``exchanges.pk`` sequence, and one ``unnest`` statement per table in pipeline mode
(:mod:`memoir.store.postgres_search` holds those statements).

Its waits can be awaited (``awaits_waits``): in a loop call (:func:`memoir.store.run_on_loop`)
a pooled connection hands each wait on the server to the event loop, and the pool hands
out a connection that is free at once, or waits for one on a thread, never on the loop."""

from __future__ import annotations

import asyncio
import select
from collections.abc import Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager, nullcontext, suppress
from contextvars import ContextVar
from datetime import datetime
from pathlib import Path
from typing import Any, NamedTuple

import psycopg
from psycopg import pq
from psycopg_pool import ConnectionPool, PoolTimeout

from memoir.config import mask_url
from memoir.errors import Busy, ConfigError, MemoirError, MigrationError, ReadOnly, StoreError
from memoir.store import postgres_search, sql_ingest
from memoir.store.codec import to_utc
from memoir.store.db import POSTGRES, Db, StaleConnection, Tx, check_version, claim_key, pg_sql
from memoir.store.migrations import CURRENT_VERSION, fresh, pending
from memoir.store.parts import EmbeddingsPart, JobLocking
from memoir.store.port import LoopGate, SqlStore, await_on_loop, in_loop_call, wait_on_fd
from memoir.store.postgres_search import PostgresItemText
from memoir.store.search_sql import SpanRead
from memoir.store.sql_ingest import SESSION_UPSERT_HEAD, IngestWrites
from memoir.store.values import IngestBatch

__all__ = [
    "WRITES",
    "PostgresStore",
    "apply_batch",
    "delete_session_rows",
    "migrate",
]


MIGRATION_LOCK = 0x6D656D6F6972  # "memoir"
INDEX_KEYS = ("exchange_search", "exchange_pk")
# set while a batch or a read takes its connection from the pool: a quiet one is unchecked
_QUICK_CHECK: ContextVar[bool] = ContextVar("memoir_pg_quick_check", default=False)


def _version(conn: psycopg.Connection[Any]) -> int:
    row = conn.execute("SELECT max(version) FROM schema_version").fetchone()
    return int(row[0] or 0) if row else 0


def migrate(conn: psycopg.Connection[Any], target: int | None = None) -> int:
    """Bring the schema to ``target`` (default: current); returns the version reached.
    ``conn`` must be in autocommit mode. A current schema is only read (so a read-only
    server, a standby, opens); one behind on a read-only server raises ``ReadOnly``."""
    row = conn.execute("SELECT to_regclass('schema_version') IS NOT NULL").fetchone()
    if row and row[0]:
        version = _version(conn)
        check_version(version, CURRENT_VERSION)
        if not pending(version, target):
            return version
    try:
        return _migrate(conn, target)
    except psycopg.errors.ReadOnlySqlTransaction:
        raise ReadOnly(
            "this PostgreSQL database is read-only here (a standby, or "
            "default_transaction_read_only) and its schema is not at this Memoir's "
            f"v{CURRENT_VERSION}: upgrade it once through a writable connection"
        ) from None


def _migrate(conn: psycopg.Connection[Any], target: int | None) -> int:
    with conn.transaction():
        conn.execute("SELECT pg_advisory_xact_lock(%s)", (MIGRATION_LOCK,))
        conn.execute(
            "CREATE TABLE IF NOT EXISTS schema_version (version INTEGER PRIMARY KEY, "
            "name TEXT NOT NULL, applied_at TIMESTAMPTZ NOT NULL DEFAULT now())"
        )
        version = _version(conn)
    check_version(version, CURRENT_VERSION)
    one = fresh(version, target)  # one transaction for all migrations, or one for each
    with conn.transaction() if one else nullcontext():
        for migration in pending(version, target):
            try:
                with nullcontext() if one else conn.transaction():
                    conn.execute("SELECT pg_advisory_xact_lock(%s)", (MIGRATION_LOCK,))
                    if _version(conn) >= migration.version:
                        continue
                    if migration.postgres:  # no parameters: one round trip for them all
                        conn.execute(";\n".join(migration.postgres).encode())
                    if migration.postgres_after is not None:
                        migration.postgres_after(_PgTx(conn))
                    if migration.reindex:
                        postgres_search.rebuild_index(conn)
                    conn.execute(
                        "INSERT INTO schema_version (version, name) VALUES (%s, %s)",
                        (migration.version, migration.name),
                    )
            except psycopg.Error as exc:
                if isinstance(exc, psycopg.errors.ReadOnlySqlTransaction):
                    raise
                name = f"v{migration.version} ({migration.name})"
                raise MigrationError(f"migration {name} failed: {exc}") from exc
    return _version(conn)


class _LoopAware(psycopg.Connection[Any]):
    """A connection that, in a loop call, awaits its waits on the event loop. Most steps
    of a pipeline need no wait: a write is tried first, a read is asked of the socket."""

    def wait(self, gen: Any, interval: float = 0.1, timeout: float | None = None) -> Any:
        if timeout is not None or not in_loop_call():  # a timeout: only LISTEN's waits
            return super().wait(gen, interval, timeout)
        fd, asked = self.pgconn.socket, True
        try:
            state = next(gen)
            while True:
                if asked and state & 2:  # a socket is nearly always writable: try the write;
                    state, asked = gen.send(2), False  # the kernel is asked if it would block
                else:
                    state, asked = gen.send(wait_on_fd(fd, state)), True
        except StopIteration as done:
            return done.value


_LOOP_WAIT_S = 0.001  # the most a loop call blocks the loop for a pooled connection


class _Pool(ConnectionPool[_LoopAware]):
    """In a loop call: a connection free now (within :data:`_LOOP_WAIT_S`), else one
    waited for on a thread."""

    def getconn(self, timeout: float | None = None) -> _LoopAware:
        if not in_loop_call():
            return super().getconn(timeout)
        try:
            return super().getconn(timeout=_LOOP_WAIT_S)
        except PoolTimeout:
            wait = super().getconn  # on a thread, where the pool's check then runs too
            return await_on_loop(asyncio.to_thread(wait, timeout))


class _PgTx:
    def __init__(self, conn: psycopg.Connection[Any]) -> None:
        self.conn = conn

    def run(self, sql: str, params: Sequence[Any] = ()) -> list[Any]:
        cur = self.conn.execute(pg_sql(sql), params)
        result = cur.pgresult  # not cur.description: that builds an object per column
        rows = result is not None and result.status == pq.ExecStatus.TUPLES_OK
        return cur.fetchall() if rows else []

    def many(self, sql: str, rows: Sequence[Sequence[Any]]) -> None:
        with self.conn.cursor() as cur:
            cur.executemany(pg_sql(sql), rows)

    def time(self, value: datetime | None) -> Any:
        return to_utc(value)


class PostgresStore(SqlStore):
    backend = "postgres"
    awaits_waits = True
    cache_dir: Path | None = None  # a server's processes keep the matrix in memory

    def __init__(
        self,
        url: str,
        *,
        target_version: int | None = None,
        max_connections: int = 8,
        pool_timeout_s: float = 10.0,
        statement_timeout_s: float = 30.0,
    ) -> None:
        self._masked = mask_url(url)
        self._closed = False
        self._limits = _Limits(max_connections, pool_timeout_s, statement_timeout_s)
        db = Db(
            self._tx, self._ro, self._writing, self._reading, self._batching, self._rows, to_utc
        )
        self._wire(
            db,
            apply_batch=apply_batch,
            delete_rows=delete_session_rows,
            engine=postgres_search,
            # rows a vector write checks are locked against a concurrent sync's update
            embeddings=EmbeddingsPart(db, lock_rows=True, backlog_hint=False),
            claims=_AdvisoryClaims(self),
            index_keys=INDEX_KEYS,
            dialect=POSTGRES,
            item_text=PostgresItemText(),
            job_locking=JobLocking(
                skip_locked=" FOR UPDATE SKIP LOCKED",
                for_update=" FOR UPDATE",
                serialize="SELECT pg_advisory_xact_lock(?)",
            ),
        )
        try:
            with psycopg.connect(url, autocommit=True, connect_timeout=10) as conn:
                migrate(conn, target_version)
                row = conn.execute(
                    "SELECT pg_is_in_recovery() OR current_setting('transaction_read_only')::bool,"
                    " current_schema()"
                ).fetchone()
                self._read_only = bool(row and row[0])
                # claims are per schema: stores in two schemas of one database are two stores
                self._schema = str(row[1]) if row and row[1] else "public"
        except psycopg.Error as exc:
            raise StoreError(
                f"cannot open PostgreSQL at {self._masked}: {_first_line(exc)}"
            ) from exc
        self._pool = _Pool(
            url,
            connection_class=_LoopAware,
            min_size=1,
            max_size=max_connections,
            timeout=pool_timeout_s,  # a call waits this long for a free connection, then 503
            kwargs={"autocommit": True},
            configure=self._configure,
            open=False,
            name="memoir-pg",  # its threads: memoir-pg-worker-N (job workers: memoir-worker-N)
            # a connection the server dropped (a restart) is replaced when handed out,
            # instead of failing the next call of each pooled connection once
            check=self._check,
        )
        self.loop_gate = LoopGate(max_connections)  # loop calls past the pool wait on it
        try:
            self._pool.open(wait=True, timeout=10.0)
        except psycopg.Error as exc:
            self._pool.close()
            raise StoreError(
                f"cannot open PostgreSQL at {self._masked}: {_first_line(exc)}"
            ) from exc

    @property
    def read_only(self) -> bool:
        """A standby (in recovery) or a role whose transactions are read-only, as seen when
        the store was opened."""
        return self._read_only

    def _configure(self, conn: psycopg.Connection[Any]) -> None:
        """Each new pooled connection: its statement timeout (``set_config``, which takes a
        bound parameter; the URL's ``options`` stay as they are)."""
        ms = round(self._limits.statement_timeout_s * 1000)
        conn.execute("SELECT set_config('statement_timeout', %s, false)", (f"{ms}ms",))

    def _check(self, conn: psycopg.Connection[Any]) -> None:
        """The pool's check of a connection it hands out: an empty query, one round trip;
        one dead connection means a restart, so the whole pool is checked at once. Skipped
        for a quiet socket (:meth:`_unchecked`): an ended connection has its last error or
        the end of the stream to read (one ended a moment ago fails its first statement)."""
        try:
            if _QUICK_CHECK.get() and _quiet(conn):
                return
            ConnectionPool.check_connection(conn)
        except psycopg.Error:
            self._pool.check()
            raise

    def _cannot_open(self, exc: BaseException) -> str:
        return f"cannot open PostgreSQL at {self._masked}: {_first_line(exc)}"

    @contextmanager
    def _conn(self, *, write: bool) -> Iterator[psycopg.Connection[Any]]:
        if self._closed:
            raise StoreError("the store is closed")
        try:
            with self._pool.connection() as conn:
                if write:
                    with conn.transaction():
                        yield conn
                else:
                    yield conn
        except psycopg.errors.ReadOnlySqlTransaction as exc:
            raise ReadOnly(
                f"postgres: this database is read-only here: {_first_line(exc)} (search, "
                "show and stats work; changing it needs a writable connection)"
            ) from exc
        except psycopg.Error as exc:
            raise _translated(exc, self._limits) from exc

    @contextmanager
    def _unchecked(self) -> Iterator[psycopg.Connection[Any]]:
        """A pooled connection, without the pool's round trip while its socket is quiet."""
        quick, handed = _QUICK_CHECK.set(True), False
        try:
            with self._conn(write=False) as conn:
                _QUICK_CHECK.reset(quick)
                handed = True
                yield conn
        finally:
            if not handed:  # the pool raised before handing a connection out
                _QUICK_CHECK.reset(quick)

    @contextmanager
    def _batching(self) -> Iterator[psycopg.Connection[Any]]:
        """A write transaction in pipeline mode (``BEGIN`` and ``COMMIT`` cost no round trip
        of their own) on an :meth:`_unchecked` connection; rolled back on any error. One
        found ended before ``BEGIN`` was answered (nothing was done) raises
        ``StaleConnection`` after the pool is checked, and the caller runs it again."""
        try:
            with self._unchecked() as conn:
                begin: psycopg.Cursor[Any] | None = None
                try:
                    with conn.pipeline():
                        begin = conn.execute("BEGIN")
                        yield conn
                        conn.execute("COMMIT")
                except BaseException as exc:
                    if isinstance(exc, psycopg.OperationalError) and _stale(conn, begin):
                        raise StaleConnection(_translated(exc, self._limits).args[0]) from exc
                    if conn.info.transaction_status != pq.TransactionStatus.IDLE:
                        with suppress(psycopg.Error):
                            conn.execute("ROLLBACK")
                    raise
        except StaleConnection:
            self._pool.check()  # the dead ones replaced before the caller runs it again
            raise

    def _rows(self, sql: str, params: Sequence[Any] = ()) -> list[Any]:
        """One ``SELECT`` in one round trip, on an :meth:`_unchecked` connection. One the
        server ended fails the read with the 503 a read in flight in a restart gets; the
        pool's other connections are checked then, so the next call finds live ones."""
        if sql.lstrip()[:6].upper() != "SELECT":
            with self._ro() as tx:
                return tx.run(sql, params)
        ended = False
        try:
            with self._unchecked() as conn:
                try:
                    return _PgTx(conn).run(sql, params)
                except psycopg.OperationalError:
                    ended = conn.closed
                    raise
        finally:
            if ended:
                self._pool.check()

    @contextmanager
    def _tx(self) -> Iterator[Tx]:
        with self._conn(write=True) as conn:
            yield _PgTx(conn)

    @contextmanager
    def _ro(self) -> Iterator[Tx]:
        with self._conn(write=False) as conn:
            yield _PgTx(conn)

    def _writing(self) -> AbstractContextManager[psycopg.Connection[Any]]:
        return self._conn(write=True)

    def _reading(self) -> AbstractContextManager[psycopg.Connection[Any]]:
        return self._conn(write=False)

    def close(self) -> None:
        """Refuse new calls, then close the pool (a call holding a connection finishes)."""
        self._closed = True
        self._pool.close()

    def schema_version(self) -> int:
        with self._conn(write=False) as conn:
            return _version(conn)


def _stale(conn: psycopg.Connection[Any], begin: psycopg.Cursor[Any] | None) -> bool:
    """Whether a batch's connection is found ended before the server answered its
    ``BEGIN`` (``begin``: its cursor, None when sending it failed): nothing was done."""
    return conn.closed and (begin is None or begin.pgresult is None)


def _quiet(conn: psycopg.Connection[Any]) -> bool:
    """Whether an idle connection is open with nothing to read on its socket (none of the
    server's messages waiting, no end of stream), asked of the kernel without waiting."""
    if conn.closed or conn.pgconn.status != pq.ConnStatus.OK:
        return False
    if not hasattr(select, "poll"):  # Windows: select() takes sockets there
        return not select.select([conn.pgconn.socket], [], [], 0)[0]
    poller = select.poll()
    poller.register(conn.pgconn.socket, select.POLLIN | select.POLLPRI)
    return not poller.poll(0)


class _AdvisoryClaims:
    """Claims as session-level advisory locks on a connection held for the claim: replicas
    share only the database, and the server drops the lock with the connection."""

    def __init__(self, store: PostgresStore) -> None:
        self._store = store

    @contextmanager
    def hold(self, name: str, busy: str) -> Iterator[None]:
        store = self._store
        if store._closed:
            raise StoreError("the store is closed")
        if store.read_only:  # an advisory lock works on a standby; the job's writes won't
            raise ReadOnly(f"{name.split(':')[0]} needs to write, and this database is read-only")
        key = claim_key(f"{store._schema}/{name}")
        try:
            with store._pool.connection() as conn:  # held: the lock lives with it
                row = conn.execute("SELECT pg_try_advisory_lock(%s)", (key,)).fetchone()
                if not row or not row[0]:
                    raise Busy(busy)
                try:
                    yield
                finally:
                    with suppress(psycopg.Error):  # else it ends with the connection
                        conn.execute("SELECT pg_advisory_unlock(%s)", (key,))
        except psycopg.Error as exc:
            raise _translated(exc, store._limits) from exc


class _Limits(NamedTuple):
    pool_size: int
    pool_timeout_s: float
    statement_timeout_s: float


def _translated(exc: psycopg.Error, limits: _Limits) -> MemoirError:
    """A driver error as Memoir's: a NUL byte (refused before sending) is the caller's
    input error; anything else is the store's, in words for a busy service's two limits
    (no free pooled connection in time, a statement past its timeout) and a restart."""
    if isinstance(exc, psycopg.DataError) and "NUL" in str(exc):
        return ConfigError("text holding a NUL byte (\\x00) cannot be stored or looked up")
    if isinstance(exc, PoolTimeout):
        return StoreError(
            f"postgres: no free database connection within {limits.pool_timeout_s:g} s "
            f"(all {limits.pool_size} of this process's are busy, or the database is "
            "unreachable; MEMOIR_PG_POOL_SIZE, MEMOIR_PG_POOL_TIMEOUT_S)"
        )
    if isinstance(exc, psycopg.errors.QueryCanceled) and "statement timeout" in str(exc):
        return StoreError(
            f"postgres: a query ran past the {limits.statement_timeout_s:g} s statement "
            "timeout and was cancelled (MEMOIR_PG_STATEMENT_TIMEOUT_S)"
        )
    if isinstance(exc, _SHUTDOWN) or (  # libpq's words when a pipeline loses the server
        isinstance(exc, psycopg.OperationalError) and _CLOSED_BY_SERVER in str(exc)
    ):
        return StoreError(
            f"postgres: the database server is restarting or stopping ({_first_line(exc)}); "
            "retry shortly"
        )
    return StoreError(f"postgres: {_first_line(exc)}")


# the server ended the session (pg_ctl stop or restart, a crash) or is not ready yet
_SHUTDOWN = (
    psycopg.errors.AdminShutdown,
    psycopg.errors.CrashShutdown,
    psycopg.errors.CannotConnectNow,
)
_CLOSED_BY_SERVER = "server closed the connection unexpectedly"


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__


SESSION_UPSERT = (
    POSTGRES(SESSION_UPSERT_HEAD)
    + """    created_at = LEAST(sessions.created_at, excluded.created_at),
    updated_at = GREATEST(sessions.updated_at, excluded.updated_at)
"""
)
WRITES = IngestWrites(
    POSTGRES,
    SESSION_UPSERT,
    postgres_search.many_rows,
    postgres_search.store_exchanges,
    index=postgres_search,
    send_span_read=postgres_search.send_span_read,
    span_read=SpanRead,
    insert_events=postgres_search.insert_events,
)


def apply_batch(conn: psycopg.Connection[Any], batch: IngestBatch) -> None:
    if conn.pgconn.pipeline_status != pq.PipelineStatus.OFF:  # an append's, already
        sql_ingest.apply_batch(conn, batch, WRITES)
        return
    with conn.pipeline():
        sql_ingest.apply_batch(conn, batch, WRITES)


def delete_session_rows(conn: psycopg.Connection[Any], session_id: str) -> bool:
    """Everything stored for a session except usage records; False when it is unknown."""
    return sql_ingest.delete_session_rows(conn, WRITES, session_id)
