"""The single-instance sync lock: an ``fcntl`` lock on ``<home>/locks/sync.lock``.

The kernel releases the lock when the holder dies, so a crashed sync never blocks the
next one. A second sync fails fast with :class:`memoir.errors.Busy`.
"""

from __future__ import annotations

import fcntl
import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from memoir.errors import Busy

__all__ = ["lock_path", "sync_lock"]


def lock_path(home: Path) -> Path:
    return home / "locks" / "sync.lock"


@contextmanager
def sync_lock(home: Path) -> Iterator[None]:
    path = lock_path(home)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise Busy("another memoir sync is running") from None
        os.ftruncate(fd, 0)
        os.write(fd, f"{os.getpid()}\n".encode())
        try:
            yield
        finally:
            fcntl.flock(fd, fcntl.LOCK_UN)
    finally:
        os.close(fd)
