"""Single-instance locks: ``fcntl`` locks on ``<home>/locks/<name>.lock``.

``sync_lock`` keeps one sync (archive + index + summary pass) per home; ``embed_lock`` one
embedding catch-up, so a background sync that embeds a large backlog never holds the sync
lock while it does. The kernel releases a lock when its holder dies, so a crashed process
never blocks the next one. A second holder fails fast with :class:`memoir.errors.Busy`.
"""

from __future__ import annotations

import fcntl
import os
from collections.abc import Iterator
from contextlib import AbstractContextManager, contextmanager
from pathlib import Path

from memoir.errors import Busy

__all__ = ["embed_lock", "lock_path", "sync_lock"]


def lock_path(home: Path, name: str = "sync") -> Path:
    return home / "locks" / f"{name}.lock"


@contextmanager
def _single_instance(home: Path, name: str, busy: str) -> Iterator[None]:
    path = lock_path(home, name)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise Busy(busy) from None
        os.ftruncate(fd, 0)
        os.write(fd, f"{os.getpid()}\n".encode())
        try:
            yield
        finally:
            fcntl.flock(fd, fcntl.LOCK_UN)
    finally:
        os.close(fd)


def sync_lock(home: Path) -> AbstractContextManager[None]:
    """Held while a sync archives, indexes and summarizes."""
    return _single_instance(home, "sync", "another memoir sync is running")


def embed_lock(home: Path) -> AbstractContextManager[None]:
    """Held while missing embeddings are computed (``memoir embed``, a background sync)."""
    return _single_instance(home, "embed", "another memoir embed is running")
