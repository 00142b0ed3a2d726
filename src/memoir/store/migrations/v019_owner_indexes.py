"""v19: an index on each owner column a list is read by. Every list of a user's sessions
(the recent list, its total and its project facet, prefix lookups) starts from
``sessions.user_name``; a user's usage report from ``usage.user_name`` and from the
calls made for the user's sessions (``usage.session_id``). Without these
indexes each of those reads scans every user's rows. Memory items (``memory_items_owner``,
v13) and jobs (``jobs_session``, v11) lead with their owner already."""

from __future__ import annotations

__all__ = ["NAME", "POSTGRES", "REINDEX", "SQLITE", "VERSION"]

VERSION = 19
NAME = "owner-indexes"
REINDEX = False

_STATEMENTS: tuple[str, ...] = (
    "CREATE INDEX sessions_owner ON sessions(user_name, project)",
    "CREATE INDEX usage_owner ON usage(user_name, at)",
    "CREATE INDEX usage_session ON usage(session_id, at)",
)

SQLITE: tuple[str, ...] = _STATEMENTS

POSTGRES: tuple[str, ...] = _STATEMENTS
