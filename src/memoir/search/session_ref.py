"""A session named by the user: its id, or a unique prefix of it (what ``--session`` and
``memoir show`` take)."""

from __future__ import annotations

from memoir.errors import MemoirError, NotFound
from memoir.store.parts import SessionsPart

__all__ = ["resolve_session"]


def resolve_session(sessions: SessionsPart, session: str) -> str:
    """The session id ``session`` names: itself, or the one session it is a prefix of (a
    main session before its subagents, whose ids extend the parent's). ``NotFound`` when
    none; a ``MemoirError`` listing them when several."""
    if sessions.get(session) is not None:
        return session
    found = [i.session for i in sessions.recent() if i.session.id.startswith(session)]
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
