"""The store's plumbing: transactions, plans, the SQL dialects, claims and accent folding.

What a store part is built on: a transaction to write in, one to read in, and (for the
parts whose SQL differs by backend) the driver's connection.

Plans (:data:`Plan`): SQL work written as a generator that yields each :class:`Stmt` and
is sent its rows, run by :meth:`Db.query`, :meth:`Db.snapshot`, :meth:`Db.apply` or
:func:`run_plan`. The module that decides what to run is off the stack while it runs.

SQL run through :class:`Tx` is written once with ``?`` placeholders; each backend's ``Tx``
converts them to its driver's style and encodes timestamps its way. A part never asks
which backend it runs on: what differs is handed to it when the store wires it.

The dialect each SQL backend speaks (:class:`Dialect`, :data:`SQLITE`, :data:`POSTGRES`).

Claims: at most one worker per named job (a session's summary) at a time.

A claim is taken without waiting — a second claimant gets :class:`memoir.errors.Busy` at
once — and is released when its block ends or its process dies, so a crashed worker
never blocks the next one. How it is held depends on who may compete:

- SQLite: every process sharing the database shares its folder, so an ``fcntl`` lock on
  ``<folder>/locks/claims/<digest>.lock`` (:func:`file_claim`, which also holds the home's
  single-instance sync and embed locks); an in-memory database
  lives in one process, so a set guarded by a mutex (:func:`local_claim`).
- PostgreSQL: replicas share only the database, so a session-level advisory lock on a
  connection held for the claim (the server drops it with the connection).

A lock file that cannot be written (a read-only home) raises :class:`memoir.errors.ReadOnly`.

Accent folding as SQLite's FTS5 tokenizer does it (``remove_diacritics 2``), for the
PostgreSQL index (pure).

``é`` → ``e``, ``Ü`` → ``U``, ``ñ`` → ``n``: every Latin letter whose Unicode
decomposition is one base letter plus combining marks, mapped to that letter — one
character for one, so PostgreSQL's ``translate()`` (immutable, usable in the generated
``tsv`` column, no extension needed) and Python's ``str.translate`` fold the same way.
Letters that are not a base plus marks (``ß``, ``æ``, ``ø``) stay as they are, as in FTS5."""

from __future__ import annotations

import errno
import fcntl
import hashlib
import os
import re
import string
import threading
import unicodedata
from collections.abc import Callable, Generator, Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager, suppress
from dataclasses import dataclass
from datetime import datetime
from functools import lru_cache
from pathlib import Path
from typing import Any, Protocol, TypeAlias, TypeVar

from memoir.errors import Busy, MigrationError, ReadOnly, StoreError
from memoir.home_files import open_private, private_dir
from memoir.store.codec import TimeEncoder, to_iso, to_utc

__all__ = [
    "ACCENTED",
    "CHUNK",
    "PLAIN",
    "POSTGRES",
    "SQLITE",
    "Connection",
    "Db",
    "Dialect",
    "FileClaims",
    "LocalClaims",
    "Part",
    "Plan",
    "StaleConnection",
    "Stmt",
    "Tx",
    "check_version",
    "claim_file",
    "claim_key",
    "file_claim",
    "fold_accents",
    "fold_index_text",
    "local_claim",
    "pg_sql",
    "rows_in",
    "run_plan",
    "shared_file_claim",
    "sqlite_sql",
    "summary_claim",
    "tx_dialect",
]


class StaleConnection(StoreError):
    """A ``batch`` found its connection ended by the server (a restart, a terminated
    session) before the server answered any of it: nothing of the batch was done, and
    the pool's connections have been checked since; the caller may run it again once."""


class Tx(Protocol):
    def run(self, sql: str, params: Sequence[Any] = ()) -> list[Any]: ...
    def many(self, sql: str, rows: Sequence[Sequence[Any]]) -> None: ...
    def time(self, value: datetime | None) -> Any: ...


@dataclass(frozen=True, slots=True)
class Stmt:
    """One statement of a :data:`Plan`: ``sql`` with ``?`` placeholders and its
    ``params``; with ``many``, ``params`` holds a row of them per run (no rows come back).
    A ``datetime`` among them is bound as the backend binds timestamps."""

    sql: str
    params: Sequence[Any] = ()
    many: bool = False


T = TypeVar("T")
# SQL work written once, run by whoever holds the connection: a generator that yields
# each Stmt, is sent its rows, and returns its result. Its frames are suspended while the
# statement runs, so the code that decides what to run never waits on the database.
Plan: TypeAlias = Generator[Stmt, list[Any], T]


def run_plan(tx: Tx, plan: Plan[T]) -> T:
    """Run every statement of ``plan`` in ``tx``: its result."""
    try:
        stmt = next(plan)
        while True:
            if stmt.many:
                tx.many(stmt.sql, [_bound(tx.time, row) for row in stmt.params])
                stmt = plan.send([])
            else:
                stmt = plan.send(tx.run(stmt.sql, _bound(tx.time, stmt.params)))
    except StopIteration as done:
        return done.value


def _bound(time: Callable[[datetime | None], Any], params: Sequence[Any]) -> Sequence[Any]:
    if any(isinstance(p, datetime) for p in params):
        return [time(p) if isinstance(p, datetime) else p for p in params]
    return params


@dataclass(frozen=True, slots=True)
class Db:
    """A backend's transactions, as its parts see them. ``write``/``read`` yield the
    driver's own connection (inside one transaction for ``write``), for SQL written per
    backend. ``batch`` (PostgreSQL's; ``write`` where it is None) is a write transaction
    whose statements are not waited for one by one (psycopg's pipeline mode, ``BEGIN``
    and ``COMMIT`` included): the client waits where it reads a result, and a statement's
    ``rowcount`` is not known until then. Its connection is handed out without a round
    trip of its own to check it: a stale one raises :class:`StaleConnection`."""

    tx: Callable[[], AbstractContextManager[Tx]]
    ro: Callable[[], AbstractContextManager[Tx]]
    write: Callable[[], AbstractContextManager[Any]]
    read: Callable[[], AbstractContextManager[Any]]
    batch: Callable[[], AbstractContextManager[Any]] | None = None
    # PostgreSQL's one-statement read: a quiet pooled connection unchecked, a stale one rerun
    quick: Callable[[str, Sequence[Any]], list[Any]] | None = None
    time: TimeEncoder = to_iso  # how a statement's timestamps are bound

    def rows(self, sql: str, params: Sequence[Any] = ()) -> list[Any]:
        """The rows of one statement (a read: run again when its connection was stale)."""
        if self.quick is not None:
            return self.quick(sql, params)
        with self.ro() as tx:
            return tx.run(sql, params)

    def query(self, plan: Plan[T]) -> T:
        """A read plan's result, each statement run as :meth:`rows` runs one (a plan of
        one statement costs what that statement costs)."""
        try:
            stmt = next(plan)
            while True:
                stmt = plan.send(self.rows(stmt.sql, _bound(self.time, stmt.params)))
        except StopIteration as done:
            return done.value

    def snapshot(self, plan: Plan[T]) -> T:
        """A read plan's result, its statements in one read transaction (one snapshot)."""
        with self.ro() as tx:
            return run_plan(tx, plan)

    def apply(self, plan: Plan[T]) -> T:
        """A plan's result, its statements in one write transaction."""
        with self.tx() as tx:
            return run_plan(tx, plan)


class Part:
    """A store part: a small class over the store's :class:`Db`."""

    def __init__(self, db: Db) -> None:
        self._db = db


CHUNK = 500  # ids per statement, well under either driver's parameter limit


class Connection(Protocol):
    """The part of ``sqlite3.Connection`` and ``psycopg.Connection`` used here."""

    def execute(self, sql: Any, params: Any = ..., /) -> Any: ...


def sqlite_sql(sql: str) -> str:
    """SQLite takes the ``?`` placeholders as written."""
    return sql


@lru_cache(maxsize=256)
def pg_sql(sql: str) -> str:
    """psycopg's placeholders (``%s``) for the ``?`` ones."""
    return sql.replace("?", "%s")


@dataclass(frozen=True, slots=True)
class Dialect:
    """How a backend's driver takes SQL written with ``?`` placeholders: its placeholder
    style (``dialect(sql)``), how it binds a timestamp, and the clause that locks the rows
    a read returns for the rest of the transaction (none where the write transaction
    already serializes, as SQLite's ``BEGIN IMMEDIATE`` does)."""

    placeholders: Callable[[str], str]
    time: TimeEncoder
    row_lock: str = ""

    def __call__(self, sql: str) -> str:
        return self.placeholders(sql)


SQLITE = Dialect(sqlite_sql, to_iso)
POSTGRES = Dialect(pg_sql, to_utc, " FOR UPDATE")


def tx_dialect(tx: Tx) -> Dialect:
    """The dialect of SQL run through a part's :class:`~memoir.store.db.Tx`: placeholders
    as written (the Tx converts them), timestamps as the Tx binds them."""
    return Dialect(sqlite_sql, tx.time)


def check_version(version: int, current: int) -> None:
    """A database migrated past this Memoir's schema (``current``) is an error."""
    if version > current:
        raise MigrationError(
            f"the database is at schema v{version}, newer than this Memoir (v"
            f"{current}); upgrade memoir"
        )


# one ingest batch -------------------------------------------------------------------------
# statements whose text is the same on both backends (the session upsert's head: each


def rows_in(conn: Connection, dialect: Dialect, sql: str, values: Sequence[Any]) -> list[Any]:
    """The rows of ``sql`` for every one of ``values``: it runs once per page of them, its
    ``{marks}`` the placeholders of that page (``x IN ({marks})``)."""
    return [row for cur in _send_rows_in(conn, dialect, sql, values) for row in cur.fetchall()]


def _send_rows_in(conn: Connection, dialect: Dialect, sql: str, values: Sequence[Any]) -> list[Any]:
    """The cursors of :func:`rows_in`'s statements, all sent, none read yet."""
    out: list[Any] = []
    for at in range(0, len(values), CHUNK):
        page = tuple(values[at : at + CHUNK])
        marks = ", ".join("?" * len(page))
        out.append(conn.execute(dialect(sql.format(marks=marks)), page))
    return out


_held: set[str] = set()
_held_lock = threading.Lock()


def summary_claim(session_id: str) -> tuple[str, str]:
    """The claim a session's summary is written under (by ``memoir summarize`` or the
    summary pass): its name, and what a second claimant is told."""
    return f"summary:{session_id}", f"session {session_id} is being summarized by another process"


def claim_key(name: str) -> int:
    """A signed 64-bit key for ``name`` (what PostgreSQL's advisory locks take)."""
    digest = hashlib.blake2b(f"memoir-claim:{name}".encode(), digest_size=8).digest()
    return int.from_bytes(digest, "big", signed=True)


@contextmanager
def file_claim(path: Path, busy: str, *, remove: bool = False) -> Iterator[None]:
    """Hold the lock file ``path`` (it records the holder's pid); ``Busy(busy)`` at once
    when another open of it holds it — another process, or this one elsewhere. With
    ``remove`` the file is deleted on release (a claim per session would otherwise leave
    a file per session); a claimant that locked a file deleted meanwhile opens it anew."""
    for _ in range(3):
        fd = _open_lock(path)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            raise Busy(busy) from None
        if not remove or _still_there(path, fd):
            break
        os.close(fd)  # locked a file its holder deleted on release: take the new one
    else:
        raise Busy(busy)
    try:
        os.ftruncate(fd, 0)
        os.write(fd, f"{os.getpid()}\n".encode())
        try:
            yield
        finally:
            if remove:
                with suppress(FileNotFoundError):
                    os.unlink(path)  # before unlocking: nobody can lock it by this name
            fcntl.flock(fd, fcntl.LOCK_UN)
    finally:
        os.close(fd)


@contextmanager
def shared_file_claim(path: Path, busy: str) -> Iterator[None]:
    """A shared hold of the lock file ``path`` for a reader that cannot write it (a
    read-only home): opened read-only, it still keeps out an exclusive holder and fails
    with ``Busy(busy)`` at once while one holds it. No file: nobody has ever held it."""
    try:
        fd = os.open(path, os.O_RDONLY)
    except FileNotFoundError:
        yield
        return
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
        except BlockingIOError:
            raise Busy(busy) from None
        yield
    finally:
        os.close(fd)  # closing releases the lock


def _open_lock(path: Path) -> int:
    """The lock file ``path`` opened for writing (created, with its folder, if need be);
    ``ReadOnly`` when this process cannot write there."""
    try:
        private_dir(path.parent)
        return open_private(path, os.O_RDWR | os.O_CREAT)
    except OSError as exc:
        if exc.errno not in (errno.EROFS, errno.EACCES, errno.EPERM):
            raise
        raise ReadOnly(
            f"cannot write the lock file {path}: {exc.strerror}; this Memoir home is "
            "read-only here — search, show and stats work, changing it needs write access"
        ) from None


def _still_there(path: Path, fd: int) -> bool:
    try:
        return os.stat(path).st_ino == os.fstat(fd).st_ino
    except FileNotFoundError:
        return False


def claim_file(directory: Path, name: str) -> Path:
    """The lock file of the claim ``name`` in ``directory``."""
    return directory / f"{hashlib.blake2b(name.encode(), digest_size=12).hexdigest()}.lock"


@contextmanager
def local_claim(name: str, busy: str) -> Iterator[None]:
    """Hold ``name`` within this process (raises ``Busy(busy)``)."""
    with _held_lock:
        if name in _held:
            raise Busy(busy)
        _held.add(name)
    try:
        yield
    finally:
        with _held_lock:
            _held.discard(name)


class FileClaims:
    """Claims as lock files in ``directory`` (SQLite: every process sharing the database
    shares its folder)."""

    def __init__(self, directory: Path) -> None:
        self._directory = directory

    def hold(self, name: str, busy: str) -> AbstractContextManager[None]:
        """Hold the job ``name`` while the block runs; ``Busy(busy)`` at once when someone
        else holds it."""
        return file_claim(claim_file(self._directory, name), busy, remove=True)


class LocalClaims:
    """Claims within this process (an in-memory database lives in one)."""

    def hold(self, name: str, busy: str) -> AbstractContextManager[None]:
        return local_claim(name, busy)


_RANGES = ((0x00C0, 0x024F), (0x1E00, 0x1EFF))  # Latin-1 Supplement to Extended-B; Additional


def _table() -> dict[str, str]:
    table: dict[str, str] = {}
    for low, high in _RANGES:
        for code in range(low, high + 1):
            char = chr(code)
            base = "".join(
                c for c in unicodedata.normalize("NFKD", char) if not unicodedata.combining(c)
            )
            if len(base) == 1 and base != char and base.isascii() and base.isalpha():
                table[char] = base
    return table


_FOLD = _table()
ACCENTED = "".join(_FOLD)
PLAIN = "".join(_FOLD.values())
_TRANSLATION = str.maketrans(_FOLD)
# finding out that there is nothing to fold is many times cheaper than translating: a
# snippet folds a whole exchange, and CJK or Cyrillic text is not ASCII but holds none
_ANY_ACCENTED = re.compile("[" + re.escape(ACCENTED) + "]")


def fold_accents(text: str) -> str:
    """``text`` with accented Latin letters replaced by their base letter (same length)."""
    if text.isascii() or _ANY_ACCENTED.search(text) is None:
        return text
    return text.translate(_TRANSLATION)


# what PostgreSQL's index folds (migration v18): ASCII punctuation read as spaces, as
# FTS5's tokenizer reads it, and accents as above; SQL's ``translate(text, punctuation ||
# ACCENTED, spaces || PLAIN)`` in Python, where it costs a fraction of the server's time
_PUNCTUATION = str.maketrans(string.punctuation, " " * len(string.punctuation))
_INDEX_TRANSLATION: dict[int, str | int | None] = {**_TRANSLATION, **_PUNCTUATION}


def fold_index_text(text: str) -> str:
    """``text`` as PostgreSQL's full-text index reads it: ASCII punctuation as spaces and
    accented Latin letters as their base letter (same length)."""
    if text.isascii() or _ANY_ACCENTED.search(text) is None:
        return text.translate(_PUNCTUATION)
    return text.translate(_INDEX_TRANSLATION)
