"""Sessions and projects as a model names them: an id or a unique prefix, a folder name;
and what a reference to a conversation (``memoir show X``, the ``read`` tool's ``id``)
names — an exchange, or a whole session (:func:`read_target`, shared by both)."""

from __future__ import annotations

from collections.abc import Callable

from memoir.errors import MemoirError, NotFound
from memoir.mcp.home import Home

__all__ = [
    "PROJECT_BLANK",
    "SESSION_BLANK",
    "exchange_parts",
    "known_project",
    "read_target",
    "session_id",
]

# what an empty ``session`` / ``project`` argument is told to give instead
SESSION_BLANK = "give a session id or a unique prefix of it (a search hit's session_id)"
PROJECT_BLANK = "give a project's name, its folder or the folder's last part"


def session_id(home: Home, ref: str) -> str:
    """The session of the server's user ``ref`` names (an id or a unique prefix); another
    user's is "no session", as one that does not exist."""
    from memoir import service

    return service.session_id(home.memoir(), ref)


def known_project(home: Home, project: str) -> str:
    """``project`` as the index names it among the server's user's sessions: its name, its
    folder or the folder's last part; an unknown project is an error, not a silent
    "nothing found"."""
    from memoir import service

    return service.project(home.memoir(), project)


def exchange_parts(ref: str) -> tuple[str, str] | None:
    """``(session part, exchange number)`` when ``ref`` is shaped as an exchange id
    (``SESSION:N``: the last ``:`` followed by ASCII digits only), else None. Pure."""
    head, sep, tail = ref.rpartition(":")
    if sep and head and tail and tail.isascii() and tail.isdigit():
        return head, tail
    return None


def read_target(
    ref: str,
    *,
    resolve: Callable[[str], str],
    is_session: Callable[[str], bool],
    is_exchange: Callable[[str], bool],
    hint: str = "",
) -> tuple[str, str | None]:
    """The session ``ref`` names, and the exchange when it names one. ``resolve``: the
    session an id or a unique prefix names (raising ``MemoirError`` when none or several);
    ``is_session`` / ``is_exchange``: whether that exact id is stored; ``hint`` ends the
    "no exchange" sentence. Pure given pure lookups (the tests pass dictionaries).

    ``SESSION:N`` reads first as exchange ``N`` of ``SESSION`` when that session (an id or
    a unique prefix) has that exchange — even when ``SESSION:N`` is also a session's id:
    ids are one namespace across users, and a session named ``alice-session:1`` must not
    take over a reference to alice's exchange. The whole string as a session id is the
    fallback, so a session of an older version whose id holds ``:`` stays reachable.
    Otherwise an exchange-shaped ``ref`` is an error about the exchange (or its session
    part), anything else a session id or a unique prefix."""
    parts = exchange_parts(ref)
    if parts is None:
        return resolve(ref), None
    head, tail = parts
    try:
        sid = resolve(head)
    except MemoirError:
        if is_session(ref):
            return ref, None
        raise
    exchange = f"{sid}:{tail}"
    if is_exchange(exchange):
        return sid, exchange
    if is_session(ref):
        return ref, None
    raise NotFound(f"no exchange {ref!r}: session {sid} has no exchange :{tail}{hint}")
