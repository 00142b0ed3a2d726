"""The session value: one conversation, wherever it came from."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from enum import StrEnum

__all__ = ["LOCAL_USER", "Harness", "Session", "SessionFlags"]

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
