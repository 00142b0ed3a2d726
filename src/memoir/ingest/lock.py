"""Single-instance locks: ``fcntl`` locks on ``<home>/locks/<name>.lock``.

``sync_lock`` keeps one sync (archive + index + summary pass) per home; ``embed_lock`` one
embedding catch-up, so a background sync that embeds a large backlog never holds the sync
lock while it does. The kernel releases a lock when its holder dies, so a crashed process
never blocks the next one. A second holder fails fast with :class:`memoir.errors.Busy`
(:func:`memoir.store.claims.file_claim` does the locking).
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import AbstractContextManager, ExitStack, contextmanager
from pathlib import Path

from memoir.errors import ReadOnly
from memoir.store.claims import file_claim, shared_file_claim

__all__ = ["embed_lock", "lock_path", "sync_lock", "sync_lock_to_read"]


def lock_path(home: Path, name: str = "sync") -> Path:
    return home / "locks" / f"{name}.lock"


def sync_lock(home: Path) -> AbstractContextManager[None]:
    """Held while a sync archives, indexes and summarizes."""
    return file_claim(lock_path(home, "sync"), "another memoir sync is running")


@contextmanager
def sync_lock_to_read(home: Path) -> Iterator[None]:
    """The sync lock for a reader (``memoir verify``): held as ``sync_lock`` is, or — in a
    home this process cannot write — shared, which still keeps a sync out and fails with
    ``Busy`` while one runs."""
    with ExitStack() as stack:
        try:
            stack.enter_context(sync_lock(home))
        except ReadOnly:
            busy = "another memoir sync is running"
            stack.enter_context(shared_file_claim(lock_path(home, "sync"), busy))
        yield


def embed_lock(home: Path) -> AbstractContextManager[None]:
    """Held while missing embeddings are computed (``memoir embed``, a background sync)."""
    return file_claim(lock_path(home, "embed"), "another memoir embed is running")
