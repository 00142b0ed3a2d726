"""Event and slice builders for the memory tests."""

from __future__ import annotations

from typing import Any

from memoir.memory import EvidenceSlice, ProposedItem, Quote, Range, SliceTurn, build_slice
from memoir.model import Author, Event, EventKind

__all__ = [
    "SESSION",
    "assistant",
    "event",
    "item",
    "slice_of",
    "tool_call",
    "tool_result",
    "turn",
    "user",
]

SESSION = "s1"


def event(ordinal: int, kind: EventKind, author: Author, text: str, **payload: Any) -> Event:
    return Event(SESSION, ordinal, kind, author, text, payload=dict(payload))


def user(ordinal: int, text: str, **payload: Any) -> Event:
    return event(ordinal, EventKind.USER_TEXT, Author.USER, text, **payload)


def assistant(ordinal: int, text: str) -> Event:
    return event(ordinal, EventKind.ASSISTANT_TEXT, Author.ASSISTANT, text)


def tool_call(ordinal: int, text: str) -> Event:
    return Event(
        SESSION,
        ordinal,
        EventKind.TOOL_CALL,
        Author.ASSISTANT,
        text,
        tool_name="Bash",
        call_id=f"c{ordinal}",
    )


def tool_result(ordinal: int, text: str) -> Event:
    return Event(
        SESSION,
        ordinal,
        EventKind.TOOL_RESULT,
        Author.TOOL,
        text,
        tool_name="Bash",
        call_id=f"c{ordinal - 1}",
    )


def slice_of(
    turns: list[tuple[int, str, str]],
    after: int = 0,
    through: int | None = None,
    context: int | None = None,
) -> EvidenceSlice:
    """A slice from (ordinal, role, text) rows, built through build_slice."""
    events = [user(o, t) if r == "user" else assistant(o, t) for o, r, t in turns]
    last = max(o for o, _, _ in turns)
    through = last if through is None else through
    return build_slice(events, Range(after, through, max(through, context or last)))


def item(
    content: str = "The user prefers tabs.",
    quotes: tuple[tuple[int, str], ...] = ((1, "I prefer tabs"),),
    **fields: Any,
) -> ProposedItem:
    base: dict[str, Any] = {"kind": "preference", "keys": ("tabs",)}
    base.update(fields)
    return ProposedItem(content=content, quotes=tuple(Quote(o, t) for o, t in quotes), **base)


def turn(ordinal: int, text: str, role: str = "user", citable: bool = True) -> SliceTurn:
    return SliceTurn(ordinal, "user" if role == "user" else "assistant", text, citable)
