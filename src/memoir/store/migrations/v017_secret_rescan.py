"""v17: where the re-scan of derived text with a newer secret detector has got to.

One row per target (``checkpoints``, ``traces``, ``cache``, ``memory``, ``summaries``):
the detector it was scanned with (:func:`memoir.secrets.detector_id`), the key the scan
has passed (``cursor``), what it read and changed, and whether it is done. A detector
that changes starts each target over. The archive and the events are never re-scanned:
they keep the bytes.
"""

from __future__ import annotations

__all__ = ["NAME", "POSTGRES", "REINDEX", "SQLITE", "VERSION"]

VERSION = 17
NAME = "secret-rescan"
REINDEX = False

_TABLE = """CREATE TABLE secret_rescan (
    target TEXT PRIMARY KEY,
    detector TEXT NOT NULL,
    cursor TEXT NOT NULL DEFAULT '',
    scanned INTEGER NOT NULL DEFAULT 0,
    changed INTEGER NOT NULL DEFAULT 0,
    done INTEGER NOT NULL DEFAULT 0
)"""

SQLITE: tuple[str, ...] = (_TABLE,)
POSTGRES: tuple[str, ...] = (_TABLE,)
