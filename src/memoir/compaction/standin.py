"""Deterministic stand-ins for messages too large to send or keep whole.

A message over the cap is replaced whole — never sliced: a byte-slice can land inside a
structured value and the model "completes" it by guessing. The stand-in names the tool,
gives the approximate size, says what is known of it (the call's arguments, its exit
status and error lines; a user message's length and first and last lines — see
:mod:`memoir.compaction.describe`), says the work happened and that the source should be
re-read rather than reconstructed. It is derived only from the message and its place in
the history (no clock, no request id), so retries send byte-identical requests and
prefix caches stay valid::

    [content omitted from this summary request: read_file result, ~225006 tokens; of
     read_file path="big.log"; error: "OSError: disk full". It ran and produced output;
     re-read the source for its contents rather than reconstructing them.]

In the context the same stand-in also says where the full message is: ``re-read the
source (#4 of the full history)``.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any, Literal

from memoir.compaction.describe import calls_by_result, message_details
from memoir.compaction.sequence import Message

__all__ = [
    "IN_CONTEXT",
    "IN_REQUEST",
    "StandIns",
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
    return {i: _name_of(c) for i, c in calls_by_result(messages).items()}


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


def stand_in(
    message: Message,
    tokens: int,
    *,
    tool_name: str | None,
    where: Where,
    details: str = "",
    position: int | None = None,
) -> str:
    """The text that replaces ``message`` whole; a pure function of its arguments.

    ``details`` (:func:`memoir.compaction.describe.message_details`) says what is known
    of it — the call and its outcome, a user message's first and last lines — and
    ``position`` where the full message is (its place in the caller's history)."""
    what = describe(message, tool_name)
    role = message.get("role")
    if role == "tool":
        did = "It ran and produced output"
    elif role == "assistant":
        did = "It was written and sent" if not message.get("tool_calls") else "It was made"
    else:
        did = "The user sent it"
    said = f"; {details}" if details else ""
    source = "the source" if position is None else f"the source (#{position} of the full history)"
    return (
        f"[content omitted from {where}: {what}, ~{tokens} tokens{said}. {did}; re-read "
        f"{source} for its contents rather than reconstructing them.]"
    )


def replaced(
    message: Message,
    tokens: int,
    *,
    tool_name: str | None,
    details: str = "",
    position: int | None = None,
) -> dict[str, Any]:
    """A copy of ``message`` for the context with its bulk replaced by the stand-in.

    Ids, roles and tool-call names stay, so tool pairing is untouched; tool-call arguments
    become a small JSON object holding the stand-in (providers expect JSON there).
    """
    text = stand_in(
        message, tokens, tool_name=tool_name, where=IN_CONTEXT, details=details, position=position
    )
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


class StandIns:
    """The stand-ins of one history, built once per message: what the summary request
    shows in a message's place, and the copy the context keeps instead of it."""

    def __init__(
        self,
        messages: Sequence[Message],
        positions: Sequence[int],
        sizes: Sequence[int],
    ) -> None:
        self.messages = messages
        self.positions = positions
        self.sizes = sizes  # content tokens (without the message framing)
        self._calls: dict[int, Mapping[str, Any]] | None = None  # read on first need
        self._names: dict[int, str] | None = None
        self._details: dict[int, str] = {}
        self._context: dict[int, dict[str, Any]] = {}

    @property
    def calls(self) -> dict[int, Mapping[str, Any]]:
        """Index of each tool result -> the call it answers."""
        if self._calls is None:
            self._calls = calls_by_result(self.messages)
        return self._calls

    @property
    def tool_names(self) -> dict[int, str]:
        if self._names is None:
            self._names = {i: _name_of(c) for i, c in self.calls.items()}
        return self._names

    def details(self, i: int) -> str:
        if i not in self._details:
            self._details[i] = message_details(self.messages[i], self.calls.get(i))
        return self._details[i]

    def request_text(self, i: int) -> str:
        m = self.messages[i]
        return stand_in(
            m,
            self.sizes[i],
            tool_name=self.tool_names.get(i),
            where=IN_REQUEST,
            details=self.details(i),
        )

    def context(self, i: int) -> dict[str, Any]:
        hit = self._context.get(i)
        if hit is None:
            hit = replaced(
                self.messages[i],
                self.sizes[i],
                tool_name=self.tool_names.get(i),
                details=self.details(i),
                position=self.positions[i],
            )
            self._context[i] = hit
        return hit


def _name_of(call: Mapping[str, Any]) -> str:
    fn = call.get("function") or {}
    name = fn.get("name") if isinstance(fn, Mapping) else None
    return str(name or call.get("name") or "tool")
