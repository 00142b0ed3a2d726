"""v21: ``sessions.name``, the id a client chose for a session it fed. Such a session is
stored under a digest of its user and that name (``memoir.model.event.named_session_id``),
so session names are per user; the name is kept to be shown back (listings, the session).
Sessions stored before keep their id and have no name: their id still works everywhere."""

from __future__ import annotations

__all__ = ["NAME", "POSTGRES", "REINDEX", "SQLITE", "VERSION"]

VERSION = 21
NAME = "session-names"
REINDEX = False

_STATEMENTS: tuple[str, ...] = (
    "ALTER TABLE sessions ADD COLUMN name TEXT",
    # a poll finds the caller's session by its name in the same statement as the key
    "CREATE INDEX sessions_user_name_name ON sessions (user_name, name)",
)

SQLITE: tuple[str, ...] = _STATEMENTS

POSTGRES: tuple[str, ...] = _STATEMENTS
