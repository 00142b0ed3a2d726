"""Sessions and projects as a model names them: an id or a unique prefix, a folder name."""

from __future__ import annotations

from memoir.mcp.home import Home

__all__ = ["known_project", "session_id"]


def session_id(home: Home, ref: str) -> str:
    """The session ``ref`` names (an id or a unique prefix)."""
    from memoir.search.session_ref import resolve_session

    return resolve_session(home.memoir().store.sessions, ref)


def known_project(home: Home, project: str) -> str:
    """``project`` as the index names it: its name, its folder or the folder's last part;
    an unknown project is an error, not a silent "nothing found"."""
    from memoir.ingest.detect import project_name
    from memoir.search.session_ref import resolve_project

    return resolve_project(home.memoir().store.sessions, project, safe=project_name)
