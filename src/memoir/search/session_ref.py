"""A session or a project named by the user: a session by its id or a unique prefix of
it (what ``--session`` and ``memoir show`` take); a project by its name, its folder or
the folder's last part (what ``--project`` takes)."""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence

from memoir.errors import MemoirError, NotFound, UsageError
from memoir.store.parts import SessionsPart

__all__ = ["project_matches", "resolve_project", "resolve_session"]


def project_matches(projects: Sequence[tuple[str, str | None]], ref: str) -> list[str]:
    """The projects ``ref`` names, given each project's name and folder: its name as the
    index has it (``-home-ann-code-webshop``); its folder (``/home/ann/code/webshop``,
    ``~`` expanded, a trailing ``/`` ignored); or the folder's last segment, or the name's
    last dash-separated part (``webshop``). The first of those that matches anything
    wins. Pure."""
    names = [name for name, _ in projects]
    if ref in names:
        return [ref]
    path = os.path.expanduser(ref).rstrip("/") if ("/" in ref or ref.startswith("~")) else None
    if path:
        by_path = [n for n, cwd in projects if cwd and cwd.rstrip("/") == path]
        by_path += [n for n in names if n == path.replace("/", "-") and n not in by_path]
        if by_path:
            return by_path
    tail = ref.strip("/")
    return [
        n
        for n, cwd in projects
        if tail and ((cwd and os.path.basename(cwd.rstrip("/")) == tail) or n.endswith("-" + tail))
    ]


def resolve_project(
    sessions: SessionsPart, ref: str, *, safe: Callable[[str], str], user: str | None = None
) -> str:
    """The project ``ref`` names (see :func:`project_matches`; ``safe``: how sync made a
    folder name into a project name, tried too) among ``user``'s sessions (everyone's
    with None). ``NotFound`` when none; a ``MemoirError`` listing them when several."""
    projects = sessions.project_paths(user=user)
    for candidate in dict.fromkeys((ref, safe(ref))):
        found = project_matches(projects, candidate)
        if len(found) == 1:
            return found[0]
        if found:
            folders = dict(projects)
            shown = ", ".join(f"{n} ({folders.get(n) or 'no folder'})" for n in found[:5])
            raise MemoirError(
                f"project {ref!r} matches {len(found)} projects: {shown}; give its folder "
                "or its full name"
            )
    raise NotFound(
        f"no project {ref!r} in this Memoir home (give its folder, e.g. /home/ann/app, its "
        "last part, app, or its name as `memoir stats` lists it)"
    )


def resolve_session(sessions: SessionsPart, session: str, *, user: str | None = None) -> str:
    """The session id ``session`` names among ``user``'s sessions (everyone's with None):
    the session of that id (or, with ``user``, of that name), or the one session it is a
    prefix of (a main session before its subagents,
    whose ids extend the parent's). ``NotFound`` when none — another user's session is
    not told apart from one that does not exist —; a ``MemoirError`` listing them when
    several; ``UsageError`` for an empty one (it would be a prefix of every session)."""
    if not session.strip():
        raise UsageError(
            "the session id is empty: give a session id or a unique prefix of it (a "
            "search hit shows its session's id)"
        )
    named = sessions.get(session, user=user)  # its id, or (with ``user``) its name
    if named is not None:
        return named.id
    found = sessions.with_prefix(session, user=user)
    main = [s for s in found if not s.flags.subagent]
    matches = [s.id for s in (main if len(main) == 1 else found)]
    if len(matches) == 1:
        return str(matches[0])
    if matches:
        shown = ", ".join(sorted(matches)[:5]) + (", …" if len(matches) > 5 else "")
        raise MemoirError(
            f"session prefix {session!r} matches {len(matches)} sessions ({shown}); "
            "give more of the id"
        )
    raise NotFound(f"no session {session!r} in this Memoir home (run `memoir sync`?)")
