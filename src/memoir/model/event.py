"""Durable events: the authority everything else is derived from."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from datetime import datetime
from enum import StrEnum
from typing import Any

__all__ = [
    "MAX_SPEAKER_CHARS",
    "Author",
    "Event",
    "EventKind",
    "clean_speaker",
    "speaker_of",
    "spoken_text",
]


class EventKind(StrEnum):
    USER_TEXT = "user_text"
    ASSISTANT_TEXT = "assistant_text"
    TOOL_CALL = "tool_call"
    TOOL_RESULT = "tool_result"
    THINKING = "thinking"
    ATTACHMENT = "attachment"
    META = "meta"
    COMPACTION = "compaction"
    # text the agent's CLI put in a user-role message (a command echo, a system reminder,
    # an environment block …; :mod:`memoir.model.harness_text`), its shape in
    # ``payload["harness"]``: archived, searched and shown, never the user's words
    HARNESS = "harness"


class Author(StrEnum):
    USER = "user"
    ASSISTANT = "assistant"
    TOOL = "tool"
    SYSTEM = "system"


@dataclass(frozen=True, slots=True)
class Event:
    """One durable event of a session.

    ``ordinal`` is per-session, starting at 1, strictly increasing, never reused.
    ``timestamp`` is timezone-aware UTC (or None when the source had none and none was
    inferred yet). ``time_inferred``: the source gave this event no time of its own, and
    ``timestamp`` is the nearest known one (:func:`memoir.model.event_times.infer_times`:
    the events around it, else the transcript file's modification time, else the time it
    was stored).
    ``tool_name``/``call_id`` are set for tool calls and results (a result carries the
    call id of the call it answers). ``payload`` holds what the source had beyond text
    (tool input as a dict, ``is_error``, model name, …) and must be JSON-serialisable.
    ``payload["speaker"]`` is the name of who wrote a user or assistant message when the
    source named one (an OpenAI-style message's ``name``: a person in a group chat, one agent
    of several); :func:`spoken_text` shows it.
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
    time_inferred: bool = False


MAX_SPEAKER_CHARS = 64
_SPACE = re.compile(r"\s+")
_CONTROL = re.compile(r"[\x00-\x1f\x7f]")


def clean_speaker(raw: object) -> str | None:
    """A source's participant name as Memoir keeps it: a string, control characters and
    runs of spaces collapsed, at most :data:`MAX_SPEAKER_CHARS` characters; None when
    nothing is left (or it was not a string)."""
    if not isinstance(raw, str):
        return None
    name = _SPACE.sub(" ", _CONTROL.sub(" ", raw)).strip()[:MAX_SPEAKER_CHARS].strip()
    return name or None


def speaker_of(event: Event) -> str | None:
    """The named speaker of a user or assistant message, if the source gave one."""
    if event.kind not in (EventKind.USER_TEXT, EventKind.ASSISTANT_TEXT):
        return None
    return clean_speaker(event.payload.get("speaker"))


def spoken_text(event: Event) -> str:
    """The event's text as a transcript shows it: led by the speaker's name when the source
    named one (``"Alice: …"``), so the name is searched, embedded and summarised with the
    words it said."""
    speaker = speaker_of(event)
    if speaker is None or not event.text:
        return event.text
    return f"{speaker}: {event.text}"
