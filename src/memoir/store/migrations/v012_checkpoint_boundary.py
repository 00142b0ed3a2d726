"""v12: checkpoints indexed by (session, memory boundary), so memory extraction finds the
latest policy-safe summary before a range with one seek, however many checkpoints a long
session has accumulated."""

from __future__ import annotations

__all__ = ["NAME", "POSTGRES", "REINDEX", "SQLITE", "VERSION"]

VERSION = 12
NAME = "checkpoint-boundary-index"
REINDEX = False

_STATEMENTS: tuple[str, ...] = (
    "CREATE INDEX checkpoints_memory ON checkpoints(session_id, memory_boundary)",
)

SQLITE: tuple[str, ...] = _STATEMENTS

POSTGRES: tuple[str, ...] = _STATEMENTS
