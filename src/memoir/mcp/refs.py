"""Sessions and projects as a model names them: an id or a unique prefix, a folder name."""

from __future__ import annotations

from memoir.errors import NotFound
from memoir.mcp.home import Home

__all__ = ["known_project", "session_id"]


def session_id(home: Home, ref: str) -> str:
    """The session ``ref`` names (an id or a unique prefix)."""
    from memoir.search.session_ref import resolve_session

    return resolve_session(home.memoir().store.sessions, ref)


def known_project(home: Home, project: str) -> str:
    """``project`` as the index names it (a folder name with characters a project name
    cannot hold is read the way sync wrote it); an unknown project is an error, not a
    silent "nothing found"."""
    from memoir.ingest.detect import safe_name

    sessions = home.memoir().store.sessions
    for name in dict.fromkeys((project, safe_name(project))):
        if sessions.recent(project=name, limit=1):
            return name
    raise NotFound(
        f"no project {project!r} in this Memoir home (projects are named after their "
        "folder, e.g. -home-ann-app; a search hit's `project` shows one)"
    )
