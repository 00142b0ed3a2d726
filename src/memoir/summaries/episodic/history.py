"""A history as the summarizer sees it: one rendered line per message, tool pairs known.

:func:`normalise` accepts memoir :class:`~memoir.model.Event` values or OpenAI-style message
dicts (``role``/``content``, ``tool_calls``, ``tool_call_id``; content may also be a list of
parts, including Anthropic ``tool_use``/``tool_result`` blocks). Thinking, meta and system
messages are left out: they are the agent's scaffolding, not the conversation. Tool inputs
and outputs are clipped (head and tail kept) so that one huge tool result cannot fill an
episode on its own.

:func:`cut_allowed` says where an episode boundary may fall: never between a tool call and
the result that answers it.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from memoir.llm.transcript import quote_speaker_lines
from memoir.model import Event, EventKind, clean_speaker, speaker_of
from memoir.summaries.episodic.text import clip_middle

__all__ = ["TOOL_TEXT_CHARS", "Item", "cut_allowed", "normalise"]

TOOL_TEXT_CHARS = 2_000


@dataclass(frozen=True, slots=True)
class Item:
    """One message of the history, rendered for a transcript.

    ``opens`` are the tool-call ids this message issues, ``answers`` the ids it answers.
    ``ordinal`` is the event ordinal (None for message dicts), ``index`` the position in
    the history given to :func:`normalise`.
    """

    role: str
    text: str
    opens: tuple[str, ...] = ()
    answers: tuple[str, ...] = ()
    ordinal: int | None = None
    index: int = -1  # position in the history given to :func:`normalise`


def normalise(history: Iterable[Event | Mapping[str, Any]]) -> list[Item]:
    out: list[Item] = []
    for index, entry in enumerate(history):
        item = _from_event(entry) if isinstance(entry, Event) else _from_dict(entry, index)
        if item is not None and item.text.strip():
            out.append(replace(item, index=index))
    return out


def _speaker_label(ev: Event, role: str) -> str:
    """``User`` / ``Assistant``, or ``Alice (user)`` when the source named the speaker (as
    ``_from_dict`` labels a message with a ``name``)."""
    speaker = speaker_of(ev)
    return f"{speaker} ({role.lower()})" if speaker else role


def _from_event(ev: Event) -> Item | None:
    kind, text = ev.kind, ev.text or ""
    if kind is EventKind.USER_TEXT:
        body = quote_speaker_lines(text.strip())
        return Item("user", f"{_speaker_label(ev, 'User')}: {body}", ordinal=ev.ordinal)
    if kind is EventKind.ASSISTANT_TEXT:
        label = _speaker_label(ev, "Assistant")
        body = quote_speaker_lines(text.strip())
        return Item("assistant", f"{label}: {body}", ordinal=ev.ordinal)
    if kind is EventKind.TOOL_CALL:
        name = ev.tool_name or "tool"
        body = quote_speaker_lines(clip_middle(text.strip(), TOOL_TEXT_CHARS))
        opens = (ev.call_id,) if ev.call_id else ()
        return Item(
            "assistant", f"Assistant called {name}: {body}", opens=opens, ordinal=ev.ordinal
        )
    if kind is EventKind.TOOL_RESULT:
        label = f"Tool result ({ev.tool_name})" if ev.tool_name else "Tool result"
        if ev.payload.get("is_error"):
            label += " [error]"
        body = quote_speaker_lines(clip_middle(text.strip(), TOOL_TEXT_CHARS))
        answers = (ev.call_id,) if ev.call_id else ()
        return Item("tool", f"{label}: {body}", answers=answers, ordinal=ev.ordinal)
    if kind is EventKind.COMPACTION:
        body = quote_speaker_lines(clip_middle(text.strip(), TOOL_TEXT_CHARS))
        return Item("system", f"[Earlier context was compacted: {body}]", ordinal=ev.ordinal)
    if kind is EventKind.ATTACHMENT:
        body = quote_speaker_lines(clip_middle(text.strip(), TOOL_TEXT_CHARS))
        return Item("user", f"Attachment: {body}", ordinal=ev.ordinal)
    return None  # THINKING, META


def _from_dict(msg: Mapping[str, Any], index: int) -> Item | None:
    role = str(msg.get("role") or "")
    if role in ("system", "developer"):
        return None
    lines: list[str] = []
    opens: list[str] = []
    answers: list[str] = []
    speaker = {"user": "User", "assistant": "Assistant"}.get(role, "Tool result")
    if role in ("user", "assistant") and (named := clean_speaker(msg.get("name"))):
        speaker = f"{named} ({role})"
    content = msg.get("content")
    if isinstance(content, str):
        text = content.strip()
        if text:
            lines.append(text)
    elif isinstance(content, list):
        _parts(content, lines, opens, answers)
    for call in msg.get("tool_calls") or ():
        if isinstance(call, Mapping):
            fn = call.get("function") or {}
            name = fn.get("name", "tool") if isinstance(fn, Mapping) else "tool"
            args = fn.get("arguments", "") if isinstance(fn, Mapping) else ""
            lines.append(f"[called {name}: {clip_middle(str(args), TOOL_TEXT_CHARS)}]")
            if call.get("id"):
                opens.append(str(call["id"]))
    if role == "tool":
        if msg.get("tool_call_id"):
            answers.append(str(msg["tool_call_id"]))
        name = msg.get("name")
        speaker = f"Tool result ({name})" if name else "Tool result"
        lines = [clip_middle("\n".join(lines), TOOL_TEXT_CHARS)] if lines else []
    if not lines:
        return None
    body = quote_speaker_lines("\n".join(lines))
    return Item(role or "user", f"{speaker}: {body}", tuple(opens), tuple(answers))


def _parts(parts: Sequence[Any], lines: list[str], opens: list[str], answers: list[str]) -> None:
    for part in parts:
        if isinstance(part, str):
            lines.append(part.strip())
            continue
        if not isinstance(part, Mapping):
            continue
        kind = part.get("type")
        if kind == "text" and isinstance(part.get("text"), str):
            lines.append(part["text"].strip())
        elif kind == "tool_use":
            lines.append(
                f"[called {part.get('name', 'tool')}: "
                f"{clip_middle(str(part.get('input', '')), TOOL_TEXT_CHARS)}]"
            )
            if part.get("id"):
                opens.append(str(part["id"]))
        elif kind == "tool_result":
            inner = part.get("content")
            if isinstance(inner, list):
                inner = " ".join(str(p.get("text", "")) for p in inner if isinstance(p, Mapping))
            lines.append(f"[tool result: {clip_middle(str(inner or ''), TOOL_TEXT_CHARS)}]")
            if part.get("tool_use_id"):
                answers.append(str(part["tool_use_id"]))
    lines[:] = [line for line in lines if line]


def cut_allowed(items: Sequence[Item]) -> list[bool]:
    """``allowed[i]`` is True when an episode may start at item ``i`` (``allowed[0]`` is
    always True): no tool call issued before ``i`` is answered at or after ``i``.
    A call that is never answered constrains nothing. Each answer pairs with the nearest
    open call of its id before it: some servers and copied histories reuse ids, and
    pairing the first opening with the last answer glued everything between into one
    episode far over its budget."""
    n = len(items)
    open_at: dict[str, int] = {}
    blocked = [0] * (n + 1)  # difference array over cut positions
    for i, item in enumerate(items):
        for cid in item.answers:
            start = open_at.pop(cid, None)
            if start is not None and i > start:
                blocked[start + 1] += 1
                blocked[i + 1] -= 1
        for cid in item.opens:
            open_at[cid] = i
    allowed: list[bool] = []
    depth = 0
    for i in range(n):
        depth += blocked[i]
        allowed.append(i == 0 or depth == 0)
    return allowed
