"""The session value: one conversation, wherever it came from; and the values a listing of
sessions takes and gives (which sessions, where a page ends, each with its counts)."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from datetime import datetime
from enum import StrEnum

__all__ = [
    "LOCAL_USER",
    "Harness",
    "RecentKey",
    "RecentPage",
    "RecentQuery",
    "Session",
    "SessionFlags",
    "SessionInfo",
    "named_session_id",
]

LOCAL_USER = "local"
"""The owner of every session synced from this machine's transcripts, and the user a
Memoir, the CLI and the MCP server act for unless told otherwise."""


class Harness(StrEnum):
    """Where a conversation came from."""

    CLAUDE_CODE = "claude-code"
    CODEX = "codex"
    GEMINI_CLI = "gemini-cli"
    OPENCODE = "opencode"
    AIDER = "aider"
    GENERIC = "generic"
    API = "api"


@dataclass(frozen=True, slots=True)
class SessionFlags:
    """Policy flags. Any of them set makes the session ineligible for memory extraction."""

    incognito: bool = False
    archived: bool = False
    subagent: bool = False
    memory_disabled: bool = False

    @property
    def memory_denied(self) -> bool:
        return self.incognito or self.archived or self.subagent or self.memory_disabled


@dataclass(frozen=True, slots=True)
class Session:
    """One conversation.

    ``id`` is the transcript's own session id (Claude Code ``sessionId``, Codex
    ``session_meta.payload.id``, the file stem for generic files, or the caller's id for
    sessions fed through the API). ``project`` is the folder the transcript sits in
    under its source (the archive folder name).

    ``name`` is the id a client chose for a session it fed (over the HTTP API or
    ``Memoir.append``): a name of its user's, not an id. Such a session is stored under
    :func:`named_session_id` of its user and name, so two users may each have a
    ``chat-1``; every lookup of a user's session takes the name or the id. None for
    transcripts, for sessions whose id Memoir chose, and for those fed before v21.
    """

    id: str
    project: str
    harness: Harness
    user: str = LOCAL_USER
    source_path: str | None = None
    flags: SessionFlags = field(default_factory=SessionFlags)
    cwd: str | None = None
    created_at: datetime | None = None
    updated_at: datetime | None = None
    name: str | None = None


def named_session_id(user: str, name: str) -> str:
    """The id ``user``'s session named ``name`` is stored under: 32 hex digits (as a
    generated id), a digest of the user and the name, NUL between them (no user name holds
    a NUL, so each user and name make one id of their own). A function of the caller's own
    user and name only, so the id a create returns never depends on what another user
    holds. Pure."""
    raw = f"{user}\0{name}".encode("utf-8", "surrogatepass")
    return hashlib.sha256(raw).hexdigest()[:32]


@dataclass(frozen=True, slots=True)
class SessionInfo:
    """A session with its counts and the span of its exchanges (a line of a listing)."""

    session: Session
    exchanges: int
    events: int
    first_at: datetime | None
    last_at: datetime | None


RecentKey = tuple[datetime | None, str]
"""Where a page of the most recently active sessions ends: its last session's ``last_at``
and id (the order is ``last_at`` newest first, sessions with none last, then id)."""


@dataclass(frozen=True, slots=True)
class RecentQuery:
    """Which sessions a listing keeps: of ``project``, of ``harness``, active (their
    exchanges, first to last) on or after ``since`` and before ``until``."""

    project: str | None = None
    harness: str | None = None
    since: datetime | None = None
    until: datetime | None = None


@dataclass(frozen=True, slots=True)
class RecentPage:
    """A page of a listing; ``total``, ``projects`` and ``harnesses`` when counted."""

    sessions: tuple[SessionInfo, ...]
    more: bool
    total: int | None = None
    projects: tuple[str, ...] = ()
    harnesses: tuple[str, ...] = ()

    @property
    def last_key(self) -> RecentKey | None:
        """The keyset the next page starts after (None: an empty page)."""
        if not self.sessions:
            return None
        last = self.sessions[-1]
        return (last.last_at, last.session.id)
