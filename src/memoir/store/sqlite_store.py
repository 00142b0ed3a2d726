"""The SQLite backend: one file, WAL, a connection per thread.

Connections run in autocommit mode; every write method opens ``BEGIN IMMEDIATE`` and
commits once (:meth:`SQLiteStore._tx`), so readers in other threads or processes never
see half a batch. Driver errors become :class:`~memoir.errors.StoreError` here.

A database this process cannot write (a read-only mount, a backup, another user's files) is
opened read-only: searching and reading work, and every write raises
:class:`~memoir.errors.ReadOnly`. SQLite needs to create a ``-shm`` file beside a WAL
database even to read it; where it cannot, the file is opened ``immutable`` — exact only when
no write-ahead log holds writes not yet checkpointed, so a non-empty ``-wal`` refuses instead.

SQLite writes of one ingest batch, and session deletion (inside the caller's transaction).

The steps are :func:`memoir.store.sql_ingest.apply_batch`'s, on both backends; what is
SQLite's own is here: how the session upsert merges timestamps, and primary keys — an
exchange's ``pk`` is numbered here, the next after the highest. Round trips are per batch,
not per row: one ``executemany`` per table, one lookup of the batch's existing exchanges
per 500 ids. An exchange already stored with the same last ordinal and text lengths is
left alone (re-applying a batch writes nothing new); a grown one is updated in place (same
id) and moves to a fresh primary key, so that ``pk`` order is the order of last change
(the embedding backlog scans from a high-water mark); its index row is rewritten and its
embeddings dropped (they describe the old text). The index rows of the neighbours of every
added or grown exchange are rewritten too (their ``context`` column quotes it)."""

from __future__ import annotations

import os
import sqlite3
import threading
import time
import weakref
from collections.abc import Iterator, Sequence
from contextlib import closing, contextmanager, suppress
from datetime import UTC, datetime
from pathlib import Path
from typing import Any
from urllib.parse import quote

from memoir.errors import MigrationError, ReadOnly, StoreError
from memoir.home_files import make_private, open_private, private_dir
from memoir.store import sql_ingest, sqlite_search
from memoir.store.codec import to_iso
from memoir.store.db import SQLITE, Db, FileClaims, LocalClaims, Tx, check_version
from memoir.store.migrations import CURRENT_VERSION, fresh, pending
from memoir.store.parts import EmbeddingsPart, JobLocking
from memoir.store.port import SqlStore
from memoir.store.sql_ingest import SESSION_UPSERT_HEAD, ExchangeChange, IngestWrites
from memoir.store.sqlite_search import SqliteItemText
from memoir.store.values import IngestBatch

__all__ = [
    "WRITES",
    "SQLiteStore",
    "apply_batch",
    "delete_session_rows",
    "migrate",
]


_CHUNK = 500
# reads map up to this much of the database file (faster searches); mapped pages count in
# the process's RSS, so a sync turns it off for its run (:meth:`SQLiteStore.bulk_writes`)
MMAP_BYTES = 256 * 1024 * 1024
INDEX_KEYS = ("exchange_fts_docsize", "id")  # one row per FTS entry, keyed by exchanges.pk


def _connect(path: Path | str, *, uri: bool = False) -> sqlite3.Connection:
    conn = sqlite3.connect(
        str(path), timeout=30.0, isolation_level=None, check_same_thread=False, uri=uri
    )
    try:  # the file is opened by the first statement: a failure here must not leak it
        conn.execute("PRAGMA busy_timeout = 30000")
        conn.execute("PRAGMA foreign_keys = ON")
        conn.execute("PRAGMA synchronous = NORMAL")
        conn.execute("PRAGMA temp_store = MEMORY")
        conn.execute("PRAGMA cache_size = -32768")
        conn.execute(f"PRAGMA mmap_size = {MMAP_BYTES}")
        # Checkpoint the WAL every ~32 MB instead of every 4 MB: a sync writes in bursts,
        # and fewer, larger checkpoints made it ~7% faster (bench/sync_bench.py).
        conn.execute("PRAGMA wal_autocheckpoint = 8000")
    except BaseException:
        conn.close()
        raise
    return conn


class _Held:
    """One thread's connection, and the lock its calls hold while they use it."""

    __slots__ = ("__weakref__", "closed", "conn", "lock")

    def __init__(self, conn: sqlite3.Connection) -> None:
        self.conn = conn
        self.lock = threading.RLock()
        self.closed = False


def _close_quietly(conn: sqlite3.Connection) -> None:
    try:
        conn.close()
    except sqlite3.Error:
        pass


def _rollback(conn: sqlite3.Connection) -> None:
    """Roll back the open transaction, if one is still open (a connection closed meanwhile
    has none: asking it would raise the driver's own error over the one being handled)."""
    try:
        open_now = conn.in_transaction
    except sqlite3.ProgrammingError:  # closed under the call, by its own thread
        return
    if open_now:
        conn.execute("ROLLBACK")


def migrate(conn: sqlite3.Connection, target: int | None = None) -> int:
    """Bring the schema to ``target`` (default: current); returns the version reached.
    A fresh database takes them all in one transaction (:func:`~.migrations.fresh`)."""
    conn.execute(
        "CREATE TABLE IF NOT EXISTS schema_version ("
        "version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at TEXT NOT NULL)"
    )
    version = _version(conn)
    check_version(version, CURRENT_VERSION)
    each = not fresh(version, target)  # a transaction for each migration, or one for all
    if not each:
        conn.execute("BEGIN IMMEDIATE")
    for migration in pending(version, target):
        if each:
            conn.execute("BEGIN IMMEDIATE")
        try:
            if _version(conn) >= migration.version:  # another process got there first
                if each:
                    conn.execute("ROLLBACK")
                continue
            for statement in migration.sqlite:
                conn.execute(statement)
            if migration.sqlite_after is not None:
                migration.sqlite_after(_SQLiteTx(conn))
            if migration.reindex:
                sqlite_search.rebuild_index(conn)
            conn.execute(
                "INSERT INTO schema_version(version, name, applied_at) VALUES (?, ?, ?)",
                (migration.version, migration.name, to_iso(datetime.now(UTC))),
            )
            if each:
                conn.execute("COMMIT")
        except sqlite3.Error as exc:
            _rollback(conn)
            raise MigrationError(
                f"migration v{migration.version} ({migration.name}) failed: {exc}"
            ) from exc
    if not each:
        conn.execute("COMMIT")
    return _version(conn)


def _to_wal(conn: sqlite3.Connection) -> None:
    """``PRAGMA journal_mode = WAL``, tried again while SQLite answers "database is locked":
    it answers at once, not after busy_timeout, while another opener switches a new file
    too (four racing openers: 4-7 runs in 150 failed so)."""
    for _ in range(3000):  # 30 s, as busy_timeout
        try:
            conn.execute("PRAGMA journal_mode = WAL")
            return
        except sqlite3.OperationalError as exc:
            if "locked" not in str(exc):
                raise
        time.sleep(0.01)
    conn.execute("PRAGMA journal_mode = WAL")


def _version(conn: sqlite3.Connection) -> int:
    row = conn.execute("SELECT max(version) FROM schema_version").fetchone()
    return int(row[0] or 0)


class _SQLiteTx:
    def __init__(self, conn: sqlite3.Connection) -> None:
        self.conn = conn

    def run(self, sql: str, params: Sequence[Any] = ()) -> list[Any]:
        return self.conn.execute(sql, params).fetchall()

    def many(self, sql: str, rows: Sequence[Sequence[Any]]) -> None:
        self.conn.executemany(sql, rows)

    def time(self, value: datetime | None) -> Any:
        return to_iso(value)


class SQLiteStore(SqlStore):
    backend = "sqlite"

    def __init__(self, path: Path | str, *, target_version: int | None = None) -> None:
        self.path = Path(path)
        in_memory = str(path) == ":memory:" or str(path).startswith("file:")
        self.cache_dir: Path | None = None if in_memory else self.path.parent / "cache" / "vectors"
        self._local = threading.local()
        self._all: weakref.WeakSet[_Held] = weakref.WeakSet()
        self._lock = threading.RLock()  # a close from a signal handler in here must not wait
        self._closed = False
        self._read_only_uri: str | None = None
        db = Db(tx=self._tx, ro=self._ro, write=self._write, read=self._reading)
        claims_dir = self.path.parent / "locks" / "claims"
        self._wire(
            db,
            apply_batch=apply_batch,
            delete_rows=delete_session_rows,
            engine=sqlite_search,
            # matrix files live beside an SQLite database: the change log patches them
            embeddings=EmbeddingsPart(db, lock_rows=False, backlog_hint=True),
            claims=LocalClaims() if in_memory else FileClaims(claims_dir),
            index_keys=INDEX_KEYS,
            dialect=SQLITE,
            item_text=SqliteItemText(),
            # BEGIN IMMEDIATE excludes every other writer: no row locks to add
            job_locking=JobLocking(),
        )
        try:
            if not in_memory:
                self._create_private()
            with self._use() as conn:
                _to_wal(conn)
                migrate(conn, target_version)
            if not in_memory and not self._writable():
                self._read_only_uri = self._open_read_only(target_version)
        except (sqlite3.Error, OSError) as exc:
            self.close()
            if in_memory or not self.path.is_file() or self._writable():
                raise StoreError(f"cannot open the SQLite database {self.path}: {exc}") from exc
            self._read_only_uri = self._open_read_only(target_version)
        except MigrationError:
            self.close()
            raise

    def _create_private(self) -> None:
        """Create the database file owner-only before SQLite opens it (SQLite gives its
        ``-wal`` and ``-shm`` the database's mode), and tighten the three files when they
        are looser (a home made by an older Memoir)."""
        private_dir(self.path.parent)
        with suppress(FileExistsError):
            os.close(open_private(self.path, os.O_WRONLY | os.O_CREAT | os.O_EXCL))
        for end in ("", "-wal", "-shm"):
            make_private(self.path.with_name(self.path.name + end))

    def _writable(self) -> bool:
        """Can this process write the database and its ``-wal`` and ``-shm`` files (create
        them beside it, or write the ones there)?"""
        beside = [self.path.with_name(self.path.name + end) for end in ("-wal", "-shm")]
        return os.access(self.path, os.W_OK) and (
            os.access(self.path.parent, os.W_OK) or all(os.access(f, os.W_OK) for f in beside)
        )

    @property
    def read_only(self) -> bool:
        """True when this process cannot write the database (it was opened read-only)."""
        return self._read_only_uri is not None

    def _wal_holds_writes(self) -> bool:
        """Does a non-empty ``-wal`` beside the database hold writes not yet folded in
        (which an ``immutable`` read would not see)?"""
        wal = self.path.with_name(self.path.name + "-wal")
        return wal.exists() and wal.stat().st_size > 0

    def _open_read_only(self, target_version: int | None) -> str:
        """Open the database read-only (see the module docstring); its URI. Raises
        :class:`ReadOnly` when it cannot be read exactly or its schema is not current."""
        self.close()
        self._closed = False
        base = "file:" + quote(str(self.path.resolve()))
        tries = [f"{base}?mode=ro"]
        if not self._wal_holds_writes():
            tries.append(f"{base}?mode=ro&immutable=1")
        version, failure = None, ""
        for uri in tries:
            try:
                with closing(_connect(uri, uri=True)) as conn:
                    version = _version(conn)
                self._read_only_uri = uri
                break
            except sqlite3.Error as exc:
                failure = str(exc)
        if version is None:
            why = (
                f"its write-ahead log {self.path.name}-wal holds writes not yet folded in"
                if len(tries) == 1
                else failure
            )
            raise ReadOnly(
                f"cannot open the SQLite database {self.path} read-only ({why}); run any "
                "memoir command once with write access to its folder"
            )
        check_version(version, CURRENT_VERSION)
        if version < (target_version if target_version is not None else CURRENT_VERSION):
            raise ReadOnly(
                f"the SQLite database {self.path} is read-only and at schema v{version}; this "
                f"Memoir needs v{CURRENT_VERSION}: open it once with write access to upgrade it"
            )
        return uri

    @contextmanager
    def bulk_writes(self) -> Iterator[None]:
        """A sync's run on this thread reads the database without memory-mapping it: the
        mapped pages count in RSS and would grow with the database (a 400 MB transcript:
        peak 156 MB mapped, 127 MB not, at the same speed; docs/benchmarks.md). The
        thread's connection maps again afterwards."""
        if self.read_only:
            yield
            return
        with self._use() as conn:
            conn.execute("PRAGMA mmap_size = 0")
        try:
            yield
        finally:
            held: _Held | None = getattr(self._local, "held", None)
            if held is not None and not held.closed:
                with held.lock:
                    if not held.closed:
                        held.conn.execute(f"PRAGMA mmap_size = {MMAP_BYTES}")

    # connections and transactions -------------------------------------------------
    def _held(self) -> _Held:
        """This thread's connection, opened on first use. It is closed when the thread
        ends (a server's worker threads come and go: a connection each would pile up)."""
        held: _Held | None = getattr(self._local, "held", None)
        if held is None or held.closed:
            if self._closed:
                raise StoreError("the store is closed")
            uri = self._read_only_uri
            conn = _connect(uri, uri=True) if uri is not None else _connect(self.path)
            held = _Held(conn)
            weakref.finalize(held, _close_quietly, conn)
            with self._lock:
                if self._closed:  # closed while this connection was being opened
                    _close_quietly(conn)
                    raise StoreError("the store is closed")
                self._all.add(held)
            self._local.held = held
        return held

    @contextmanager
    def _use(self) -> Iterator[sqlite3.Connection]:
        """This thread's connection, held against :meth:`close` for the block: a close
        from another thread waits for the call in flight instead of pulling the
        connection from under it. A close from this very thread (a signal handler running
        inside the call) cannot wait for itself: the connection goes at once, and the
        call fails as a closed store's calls do, not with the driver's own error."""
        if self._read_only_uri is not None and "immutable=1" in self._read_only_uri:
            with self._call_connection() as conn:
                yield conn
            return
        held = self._held()
        with held.lock:
            if held.closed:
                raise StoreError("the store is closed")
            try:
                yield held.conn
            except (sqlite3.Error, StoreError) as exc:
                if held.closed:  # closed under the call: whatever it met next says so
                    raise StoreError("the store is closed") from exc
                raise

    @contextmanager
    def _call_connection(self) -> Iterator[sqlite3.Connection]:
        """A database opened ``immutable`` (no ``-shm`` could be made beside it) may still
        be written by its owner: each call gets a connection of its own, opened as things
        are now — through the owner's write-ahead log when one holds writes, else
        immutable — so a reader never keeps a view the owner has since changed."""
        if self._closed:
            raise StoreError("the store is closed")
        base = self._read_only_uri.split("?", 1)[0] if self._read_only_uri else ""
        live = self._wal_holds_writes()
        uri = f"{base}?mode=ro" if live else f"{base}?mode=ro&immutable=1"
        try:
            conn = _connect(uri, uri=True)
        except sqlite3.Error as exc:
            raise ReadOnly(
                f"the SQLite database {self.path} is being written by its owner and cannot be "
                f"read from here meanwhile ({exc}); try again when it is done"
            ) from exc
        with closing(conn):
            yield conn

    @contextmanager
    def _write(self) -> Iterator[sqlite3.Connection]:
        if self._read_only_uri is not None:
            raise ReadOnly(
                f"the SQLite database {self.path} is open read-only (this process cannot "
                "write it): search, show and stats work; changing it needs write access"
            )
        with self._use() as conn:
            try:
                conn.execute("BEGIN IMMEDIATE")
            except sqlite3.Error as exc:
                raise StoreError(f"sqlite: {exc}") from exc
            try:
                yield conn
                conn.execute("COMMIT")
            except sqlite3.Error as exc:
                _rollback(conn)
                raise StoreError(f"sqlite: {exc}") from exc
            except BaseException:  # Ctrl-C may land just after COMMIT: nothing to roll back
                _rollback(conn)
                raise

    @contextmanager
    def _reading(self) -> Iterator[sqlite3.Connection]:
        with self._use() as conn:
            try:
                yield conn
            except sqlite3.Error as exc:
                if self._read_only_uri is not None and "malformed" in str(exc):
                    raise ReadOnly(  # its owner checkpointed under an immutable read
                        f"the SQLite database {self.path} changed while it was read; run "
                        "the command again"
                    ) from exc
                raise StoreError(f"sqlite: {exc}") from exc

    @contextmanager
    def _tx(self) -> Iterator[Tx]:
        with self._write() as conn:
            yield _SQLiteTx(conn)

    @contextmanager
    def _ro(self) -> Iterator[Tx]:
        with self._reading() as conn:
            yield _SQLiteTx(conn)

    def close(self) -> None:
        """Close every thread's connection, each once the call using it (if any) is done —
        at once when that call is this thread's own (see :meth:`_use`); later calls raise
        ``StoreError("the store is closed")``."""
        with self._lock:
            self._closed = True
            held, self._all = list(self._all), weakref.WeakSet()
        for one in held:
            with one.lock:
                one.closed = True
                _close_quietly(one.conn)
        self._local = threading.local()

    def schema_version(self) -> int:
        with self._reading() as conn:
            return _version(conn)


SESSION_UPSERT = (
    SESSION_UPSERT_HEAD
    + """    created_at = coalesce(min(sessions.created_at, excluded.created_at),
                          sessions.created_at, excluded.created_at),
    updated_at = coalesce(max(sessions.updated_at, excluded.updated_at),
                          sessions.updated_at, excluded.updated_at)
"""
)
EXCHANGE_INSERT = """
INSERT INTO exchanges (pk, id, session_id, first_ordinal, last_ordinal, started_at,
    ended_at, line_start, line_end, tool_names, user_text, assistant_text, tool_excerpt)
VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
"""
EXCHANGE_UPDATE = """
UPDATE exchanges SET pk = ?, session_id = ?, first_ordinal = ?, last_ordinal = ?, started_at = ?,
    ended_at = ?, line_start = ?, line_end = ?, tool_names = ?, user_text = ?,
    assistant_text = ?, tool_excerpt = ?
WHERE pk = ?
"""


def _many(conn: sqlite3.Connection, sql: str, rows: list[tuple[Any, ...]]) -> None:
    conn.executemany(sql, rows)


def _store_exchanges(conn: sqlite3.Connection, changes: list[ExchangeChange]) -> None:
    """New rows and grown ones, each under the next pk after the highest, in batch order."""
    next_pk = int(conn.execute("SELECT coalesce(max(pk), 0) + 1 FROM exchanges").fetchone()[0])
    inserts: list[tuple[Any, ...]] = []
    updates: list[tuple[Any, ...]] = []
    for pk, change in enumerate(changes, start=next_pk):
        if change.old_pk is None:
            inserts.append((pk, *change.params))
        else:
            updates.append((pk, *change.params[1:], change.old_pk))
    if inserts:
        conn.executemany(EXCHANGE_INSERT, inserts)
    if updates:
        conn.executemany(EXCHANGE_UPDATE, updates)


WRITES = IngestWrites(SQLITE, SESSION_UPSERT, _many, _store_exchanges, index=sqlite_search)


def apply_batch(conn: sqlite3.Connection, batch: IngestBatch) -> None:
    sql_ingest.apply_batch(conn, batch, WRITES)


def delete_session_rows(conn: sqlite3.Connection, session_id: str) -> bool:
    """Everything stored for a session except usage records; False when it is unknown."""
    return sql_ingest.delete_session_rows(conn, WRITES, session_id)
