"""Claims: at most one worker per named job (a session's summary) at a time.

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
"""

from __future__ import annotations

import errno
import fcntl
import hashlib
import os
import threading
from collections.abc import Iterator
from contextlib import AbstractContextManager, contextmanager, suppress
from pathlib import Path

from memoir.errors import Busy, ReadOnly
from memoir.home_files import open_private, private_dir

__all__ = [
    "FileClaims",
    "LocalClaims",
    "claim_file",
    "claim_key",
    "file_claim",
    "local_claim",
    "shared_file_claim",
    "summary_claim",
]

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
