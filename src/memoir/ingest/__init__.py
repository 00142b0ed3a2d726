"""Ingest: transcript readers (Claude Code, Codex CLI, Gemini CLI, OpenCode, Aider,
generic), the archive, ``sync`` and ``verify``.

Data flow: :func:`discover` finds transcript files under the sources;
:func:`memoir.ingest.sync.sync` skips the
ones whose size and mtime the index already has (stat only), plans the rest
(:mod:`memoir.ingest.plan`: resume, re-index a rewritten file, or leave it out), reads each
one once from the indexed byte offset — every chunk goes to the archive copy
(:mod:`memoir.ingest.archive`) and through the line splitter (:mod:`memoir.ingest.records`) into
a format reader (:mod:`memoir.ingest.reader`) — gives the events their source left
without a time the nearest known one (:mod:`memoir.ingest.plan`), rebuilds the exchange
that was still open,
and commits everything for that file in one ``store.ingest.apply`` transaction. What was
derived from a conversation (its summary) is not ingest's: the caller passes a
:class:`SyncObserver`, told the moment a transcript is rewritten or a conversation removed.

The entry points are ``memoir.ingest.sync.sync`` and ``memoir.ingest.verify.verify`` (not
re-exported here, so the submodules keep their names), or ``Memoir.sync()`` /
``service.verify()``.

Its names are imported from their modules when first used: importing one module of the
package costs no more than that module.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from memoir.ingest.batches import NO_INDEX_MARKER, SyncObserver, SyncProgress, SyncReport
    from memoir.ingest.discover import Format, detect_format, discover
    from memoir.ingest.reader import ReadResult, read_bytes
    from memoir.ingest.verify import Problem, VerifyReport

__all__ = [
    "NO_INDEX_MARKER",
    "Format",
    "Problem",
    "ReadResult",
    "SyncObserver",
    "SyncProgress",
    "SyncReport",
    "VerifyReport",
    "detect_format",
    "discover",
    "read_bytes",
]

# each public name: the module it is imported from when first used
_HOME = {
    "Format": "memoir.ingest.discover",
    "detect_format": "memoir.ingest.discover",
    "discover": "memoir.ingest.discover",
    "ReadResult": "memoir.ingest.reader",
    "read_bytes": "memoir.ingest.reader",
    "NO_INDEX_MARKER": "memoir.ingest.batches",
    "SyncObserver": "memoir.ingest.batches",
    "SyncProgress": "memoir.ingest.batches",
    "SyncReport": "memoir.ingest.batches",
    "Problem": "memoir.ingest.verify",
    "VerifyReport": "memoir.ingest.verify",
}


def __getattr__(name: str) -> Any:
    home = _HOME.get(name)
    if home is None:
        raise AttributeError(f"module 'memoir.ingest' has no attribute {name!r}")
    value = getattr(importlib.import_module(home), name)
    globals()[name] = value
    return value
