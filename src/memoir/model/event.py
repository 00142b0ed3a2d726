"""Durable events: the authority everything else is derived from."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from enum import StrEnum
from typing import Any

__all__ = ["Author", "Event", "EventKind"]


class EventKind(StrEnum):
    USER_TEXT = "user_text"
    ASSISTANT_TEXT = "assistant_text"
    TOOL_CALL = "tool_call"
    TOOL_RESULT = "tool_result"
    THINKING = "thinking"
    ATTACHMENT = "attachment"
    META = "meta"
    COMPACTION = "compaction"


class Author(StrEnum):
    USER = "user"
    ASSISTANT = "assistant"
    TOOL = "tool"
    SYSTEM = "system"


@dataclass(frozen=True, slots=True)
class Event:
    """One durable event of a session.

    ``ordinal`` is per-session, starting at 1, strictly increasing, never reused.
    ``timestamp`` is timezone-aware UTC (or None when the source had none).
    ``tool_name``/``call_id`` are set for tool calls and results (a result carries the
    call id of the call it answers). ``payload`` holds what the source had beyond text
    (tool input as a dict, ``is_error``, model name, …) and must be JSON-serialisable.
    ``source_offset`` is the byte offset of the transcript line it came from and
    ``source_line`` its 1-based line number (None for API-fed events).
    """

    session_id: str
    ordinal: int
    kind: EventKind
    author: Author
    text: str
    timestamp: datetime | None = None
    tool_name: str | None = None
    call_id: str | None = None
    payload: dict[str, Any] = field(default_factory=dict)
    source_offset: int | None = None
    source_line: int | None = None
