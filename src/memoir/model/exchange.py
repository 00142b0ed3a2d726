"""Exchanges: a user prompt plus the assistant turns and tool calls that answer it.

Derived from events by :func:`build_exchanges` (pure); a message whose source named its
speaker reads ``"Name: text"`` there (:func:`~memoir.model.event.spoken_text`). An
exchange's id is the session id plus the ordinal of the user event that opens it, so an
exchange that grows (new assistant turns appended) keeps its id and is updated in place,
never duplicated. Harness text (:attr:`EventKind.HARNESS`) opens no exchange and is never
its ``user_text``: inside an exchange it goes to the searched excerpt with the tool
events. The harness text before a session's first prompt (the lead-in: a local command's
caveat and output, Codex's ``<environment_context>``) goes to the first exchange's
excerpt, after its own and within a budget of its own, so the session is found by it; it
stays outside the exchange's ordinals, times and lines. Until the first prompt comes, it
belongs to no exchange (archived and shown, not yet indexed).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime

from memoir.model.event import Author, Event, EventKind, spoken_text

__all__ = [
    "EXCERPTED",
    "LEAD_EXCERPT_CHARS",
    "TERMINAL_ESCAPE",
    "Exchange",
    "build_exchanges",
    "exchange_id",
    "exchanges_around",
    "open_tail",
    "tool_piece",
]


def exchange_id(session_id: str, first_ordinal: int) -> str:
    return f"{session_id}:{first_ordinal}"


@dataclass(frozen=True, slots=True)
class Exchange:
    id: str
    session_id: str
    first_ordinal: int
    last_ordinal: int
    user_text: str
    assistant_text: str
    tool_names: tuple[str, ...]
    started_at: datetime | None
    ended_at: datetime | None
    line_start: int | None = None
    line_end: int | None = None
    tool_excerpt: str = ""


TOOL_EXCERPT_CHARS = 2000  # bounded excerpt of tool input/output kept for search
# what the excerpt takes, in event order: tool calls and results, and the harness text
# inside the exchange (a command's output, a system reminder) — searched, never the user's
EXCERPTED = (EventKind.TOOL_CALL, EventKind.TOOL_RESULT, EventKind.HARNESS)
# the lead-in's harness text, after the first exchange's own excerpt: a budget of its own,
# so a pasted AGENTS.md never crowds out what the first exchange's tools did
LEAD_EXCERPT_CHARS = TOOL_EXCERPT_CHARS
TOOL_PIECE_CHARS = 600  # per tool call or result: its start and its end when longer
# terminal escape sequences (colours, cursor moves, window titles) in tool output
TERMINAL_ESCAPE = re.compile(
    r"\x1b(?:\[[0-9;?]*[ -/]*[@-~]|\][^\x07\x1b]*(?:\x07|\x1b\\)?|[@-Z\\-_])"
)
_JSON_ESCAPE = re.compile(r"\\[nrt]")


def tool_piece(text: str, *, json_text: bool = False) -> str:
    """What a tool call or result gives the search index: its text without terminal escapes
    (and, for JSON tool input, with its ``\\n`` escapes read as the line breaks they are),
    whole when short, else its first and last part — an error is usually the last line of
    a traceback, a failing test the end of pytest's output."""
    if "\x1b" in text:
        text = TERMINAL_ESCAPE.sub("", text)
    if json_text and "\\" in text:
        text = _JSON_ESCAPE.sub(" ", text)
    if len(text) <= TOOL_PIECE_CHARS:
        return text
    half = TOOL_PIECE_CHARS // 2
    return f"{text[:half]} … {text[-half:]}"


def exchanges_around(exchanges: Sequence[Exchange], target: str, context: int) -> list[Exchange]:
    """The exchange whose id is ``target`` with up to ``context`` exchanges before and after
    it, in session order (``exchanges`` in that order); [] when ``target`` is not there."""
    for at, exchange in enumerate(exchanges):
        if exchange.id == target:
            reach = max(0, context)
            return list(exchanges[max(0, at - reach) : at + reach + 1])
    return []


def _opens_exchange(event: Event) -> bool:
    return event.kind is EventKind.USER_TEXT and event.author is Author.USER


def build_exchanges(events: Iterable[Event]) -> list[Exchange]:
    """Group ordered events into exchanges. Events before the first user prompt
    (meta records, a resumed session's preamble) belong to no exchange; the harness text
    among them goes to the first exchange's excerpt (see the module doc)."""
    out: list[Exchange] = []
    lead: list[Event] = []
    group: list[Event] = []
    for event in events:
        if _opens_exchange(event):
            if group:
                out.append(_fold(group, () if out else lead))
            group = [event]
        elif group:
            group.append(event)
        elif event.kind is EventKind.HARNESS:
            lead.append(event)
    if group:
        out.append(_fold(group, () if out else lead))
    return out


def _excerpt(events: Iterable[Event], budget: int) -> list[str]:
    """The excerpt's pieces of ``events`` (those of an :data:`EXCERPTED` kind with text,
    in order), the last cut where ``budget`` characters are spent."""
    pieces: list[str] = []
    for ev in events:
        if budget <= 0:
            break
        if ev.kind in EXCERPTED and ev.text:
            piece = tool_piece(ev.text, json_text=ev.kind is EventKind.TOOL_CALL)[:budget]
            pieces.append(piece)
            budget -= len(piece)
    return pieces


def _fold(group: list[Event], lead: Sequence[Event] = ()) -> Exchange:
    first, last = group[0], group[-1]
    assistant: list[str] = []
    users: list[str] = [spoken_text(first)]
    tools: list[str] = []
    for ev in group[1:]:
        if ev.kind is EventKind.ASSISTANT_TEXT:
            assistant.append(spoken_text(ev))
        elif ev.kind is EventKind.USER_TEXT and ev.author is Author.USER:
            users.append(spoken_text(ev))
        elif ev.kind is EventKind.TOOL_CALL and ev.tool_name and ev.tool_name not in tools:
            tools.append(ev.tool_name)
    excerpt = [*_excerpt(group[1:], TOOL_EXCERPT_CHARS), *_excerpt(lead, LEAD_EXCERPT_CHARS)]
    times = [e.timestamp for e in group if e.timestamp is not None]
    lines = [e.source_line for e in group if e.source_line is not None]
    return Exchange(
        id=exchange_id(first.session_id, first.ordinal),
        session_id=first.session_id,
        first_ordinal=first.ordinal,
        last_ordinal=last.ordinal,
        user_text="\n\n".join(u for u in users if u),
        assistant_text="\n\n".join(a for a in assistant if a),
        tool_names=tuple(tools),
        started_at=times[0] if times else None,
        ended_at=times[-1] if times else None,
        line_start=lines[0] if lines else None,
        line_end=lines[-1] if lines else None,
        tool_excerpt="\n".join(excerpt),
    )


def open_tail(events: Sequence[Event]) -> list[Event]:
    """Of ordered ``events``, the fewest that building their last exchange reads: building
    from them gives that exchange again, and so does building from them and the events
    that follow (what a reader in batches carries from one batch to the next, the start
    a store records to read it back from). They are the last exchange's events from its
    prompt on, led by the lead-in's harness text when it is the first exchange; before
    any prompt, the lead-in alone; [] when there is neither. Kept of the exchange: the
    first and the last event, every user and assistant text, the first call of each tool,
    the events whose text its excerpt takes (until the budget is spent), and the first
    and last event with a timestamp and with a source line. Mirrors :func:`_fold`."""
    first = next((at for at, ev in enumerate(events) if _opens_exchange(ev)), len(events))
    last = next(
        (at for at in range(len(events) - 1, first, -1) if _opens_exchange(events[at])), first
    )
    lead = _lead_needed(events[:first]) if last == first else []
    return [*lead, *_group_needed(events[last:])]


def _lead_needed(events: Sequence[Event]) -> list[Event]:
    """The lead-in's harness events whose text the first exchange's excerpt takes."""
    kept: list[Event] = []
    budget = LEAD_EXCERPT_CHARS
    for ev in events:
        if budget <= 0:
            break
        if ev.kind is EventKind.HARNESS and ev.text:
            kept.append(ev)
            budget -= len(tool_piece(ev.text)[:budget])
    return kept


def _group_needed(group: Sequence[Event]) -> list[Event]:
    """Of one exchange's events (``group[0]`` its prompt), those :func:`_fold` reads."""
    if len(group) <= 2:
        return list(group)
    keep = [False] * len(group)
    keep[0] = keep[-1] = True
    budget = TOOL_EXCERPT_CHARS
    tools: set[str] = set()
    for at in range(1, len(group)):
        ev = group[at]
        if ev.kind is EventKind.ASSISTANT_TEXT or _opens_exchange(ev):
            keep[at] = True
        elif ev.kind in EXCERPTED:
            if ev.kind is EventKind.TOOL_CALL and ev.tool_name and ev.tool_name not in tools:
                tools.add(ev.tool_name)
                keep[at] = True
            if budget > 0 and ev.text:
                piece = tool_piece(ev.text, json_text=ev.kind is EventKind.TOOL_CALL)
                budget -= len(piece[:budget])
                keep[at] = True
    for has in (lambda e: e.timestamp is not None, lambda e: e.source_line is not None):
        marked = [at for at, ev in enumerate(group) if has(ev)]
        if marked:
            keep[marked[0]] = keep[marked[-1]] = True
    return [ev for ev, kept in zip(group, keep, strict=True) if kept]
