"""Deterministic stand-ins for messages too large to send whole.

A message over the cap is replaced whole — never sliced: a byte-slice can land inside a
structured value and the model "completes" it by guessing. The stand-in names the tool,
gives the approximate size, says the work happened and that the source should be re-read
rather than reconstructed. It is derived only from the message (no clock, no request
id), so retries send byte-identical requests and prefix caches stay valid::

    [content omitted from this summary request: read_file result, ~225006 tokens.
     It ran and produced output; re-read the source for its contents rather than
     reconstructing them.]
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any, Literal

from memoir.compaction.sequence import Message

__all__ = [
    "IN_CONTEXT",
    "IN_REQUEST",
    "describe",
    "replaced",
    "stand_in",
    "tool_names_by_call",
]

Where = Literal["this summary request", "the context"]
IN_REQUEST: Where = "this summary request"
IN_CONTEXT: Where = "the context"


def tool_names_by_call(messages: Sequence[Message]) -> dict[int, str]:
    """Index of each tool result -> the name of the call it answers, matched by
    occurrence (the assistant message just before its block), so a call id reused later
    in the history never borrows another call's name."""
    names: dict[int, str] = {}
    open_calls: dict[str, str] = {}
    for i, m in enumerate(messages):
        role = m.get("role")
        if role == "assistant":
            open_calls = {}
            for call in m.get("tool_calls") or []:
                if isinstance(call, Mapping) and call.get("id"):
                    fn = call.get("function") or {}
                    open_calls[str(call["id"])] = str(fn.get("name") or call.get("name") or "tool")
        elif role == "tool":
            name = open_calls.get(str(m.get("tool_call_id") or ""))
            if name is not None:
                names[i] = name
        else:
            open_calls = {}
    return names


def _call_names(message: Message) -> list[str]:
    out = []
    for call in message.get("tool_calls") or []:
        fn = call.get("function") or {} if isinstance(call, Mapping) else {}
        out.append(str(fn.get("name") or "tool"))
    return out


def describe(message: Message, tool_name: str | None = None) -> str:
    """What the message was, in a few words: ``read_file result``, ``user message``…"""
    role = message.get("role")
    if role == "tool":
        name = tool_name or message.get("name") or "tool"
        return f"{name} result"
    if role == "assistant":
        names = _call_names(message)
        if names:
            return " and ".join(dict.fromkeys(n + " call" for n in names))
        return "assistant message"
    return f"{role} message"


def stand_in(message: Message, tokens: int, *, tool_name: str | None, where: Where) -> str:
    """The text that replaces ``message`` whole; a pure function of its arguments."""
    what = describe(message, tool_name)
    role = message.get("role")
    if role == "tool":
        did = "It ran and produced output"
    elif role == "assistant":
        did = "It was written and sent" if not message.get("tool_calls") else "It was made"
    else:
        did = "The user sent it"
    return (
        f"[content omitted from {where}: {what}, ~{tokens} tokens. {did}; re-read the source "
        "for its contents rather than reconstructing them.]"
    )


def replaced(message: Message, tokens: int, *, tool_name: str | None) -> dict[str, Any]:
    """A copy of ``message`` for the context with its bulk replaced by the stand-in.

    Ids, roles and tool-call names stay, so tool pairing is untouched; tool-call arguments
    become a small JSON object holding the stand-in (providers expect JSON there).
    """
    text = stand_in(message, tokens, tool_name=tool_name, where=IN_CONTEXT)
    out = dict(message)
    calls = message.get("tool_calls")
    if calls:
        new_calls = []
        for call in calls:
            c = dict(call)
            fn = dict(c.get("function") or {})
            fn["arguments"] = json.dumps({"omitted": text}, ensure_ascii=False)
            c["function"] = fn
            new_calls.append(c)
        out["tool_calls"] = new_calls
        out["content"] = None if message.get("content") in (None, "") else text
    else:
        out["content"] = text
    return out
