"""Token counts of chat messages, cached per message so a long history is counted once.

A message costs ``MESSAGE_OVERHEAD`` tokens (role and framing, as OpenAI's cookbook
counts them) plus its content, plus for each tool call its name and arguments. The cache
is keyed by the message object and checked against the identity of its ``content`` and
``tool_calls`` values, so replacing either (``m["content"] = …``) is noticed; messages are
otherwise treated as immutable once handed over, like a provider SDK does. Entries not
seen for a while are evicted, so the cache stays the size of the live history.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from memoir.compaction.sequence import Message, content_text, media_parts
from memoir.llm.offline import default_counter
from memoir.llm.port import TokenCounter

__all__ = [
    "MEDIA_TOKENS",
    "MESSAGE_OVERHEAD",
    "MessageCounter",
    "content_tokens",
    "tool_call_text",
    "uncounted_text",
]

MESSAGE_OVERHEAD = 4
# what one image (or audio clip, file) costs in context, counted high: its bytes are not
# text, but a model is billed ~85-1,600 tokens for an image by the providers' own tables
# (OpenAI by 512-px tiles, Anthropic ~1,600 at 1.15 megapixels); compaction errs towards
# compacting
MEDIA_TOKENS = 1_600


# content blocks whose words are not under "text": what they hold still fills the window
_BLOCK_FIELDS = ("thinking", "content", "input", "data")
# message fields beside "content" that providers bill: reasoning traces, refusals
_MESSAGE_FIELDS = ("reasoning_content", "reasoning", "refusal")


def uncounted_text(message: Message) -> str:
    """Text a message carries outside what :func:`content_text` reads — thinking blocks,
    Anthropic ``tool_use`` input and ``tool_result`` content, reasoning and refusal
    fields — so a history in any shape is counted at its size (a 200k-token tool result
    block must not count as nothing)."""
    out: list[str] = []
    for field in _MESSAGE_FIELDS:
        value = message.get(field)
        if isinstance(value, str):
            out.append(value)
    content = message.get("content")
    if isinstance(content, list):
        for part in content:
            if not isinstance(part, Mapping) or isinstance(part.get("text"), str):
                continue
            for field in _BLOCK_FIELDS:
                value = part.get(field)
                if isinstance(value, str):
                    out.append(value)
                elif value is not None:
                    out.append(json.dumps(value, ensure_ascii=False, default=str))
    return "\n".join(out)


def content_tokens(message_tokens: int) -> int:
    """A message's size without its framing: what stand-ins and omissions report."""
    return max(0, message_tokens - MESSAGE_OVERHEAD)


def tool_call_text(call: Any) -> str:
    """``name(arguments)`` of one OpenAI-style tool call, for counting and transcripts."""
    if not isinstance(call, Mapping):
        return str(call)
    fn = call.get("function") or {}
    name = str(fn.get("name") or call.get("name") or "tool")
    args = fn.get("arguments", call.get("arguments", ""))
    if not isinstance(args, str):
        args = json.dumps(args, ensure_ascii=False, sort_keys=True)
    return f"{name}({args})"


class MessageCounter:
    """Counts messages with a per-message cache; ``total`` of a 2,000-message history is a
    cache walk once the messages have been seen."""

    def __init__(self, counter: TokenCounter | None = None, *, max_entries: int = 100_000) -> None:
        self.counter = counter or default_counter()
        self.max_entries = max_entries
        # id(message) -> (message, content object, tool_calls object, tokens)
        self._cache: dict[int, tuple[Message, object, object, int]] = {}

    def text(self, text: str) -> int:
        return self.counter.count(text) if text else 0

    def count(self, message: Message) -> int:
        key = id(message)
        content = message.get("content")
        calls = message.get("tool_calls")
        hit = self._cache.get(key)
        if hit is not None and hit[0] is message and hit[1] is content and hit[2] is calls:
            return hit[3]
        tokens = self._measure(message)
        if len(self._cache) >= self.max_entries:
            self._cache.clear()
        self._cache[key] = (message, content, calls, tokens)
        return tokens

    def counts(self, messages: Sequence[Message]) -> list[int]:
        count = self.count
        return [count(m) for m in messages]

    def total(self, messages: Sequence[Message]) -> int:
        cache = self._cache
        total = 0
        for m in messages:
            hit = cache.get(id(m))
            if (
                hit is not None
                and hit[0] is m
                and hit[1] is m.get("content")
                and hit[2] is m.get("tool_calls")
            ):
                total += hit[3]
            else:
                total += self.count(m)
        return total

    def forget_except(self, messages: Sequence[Message]) -> None:
        """Drop cache entries of messages no longer in the history."""
        live = {id(m) for m in messages}
        for key in [k for k in self._cache if k not in live]:
            del self._cache[key]

    def _measure(self, message: Message) -> int:
        tokens = MESSAGE_OVERHEAD + self.text(content_text(message))
        tokens += self.text(uncounted_text(message))
        tokens += MEDIA_TOKENS * media_parts(message)
        for call in message.get("tool_calls") or []:
            tokens += MESSAGE_OVERHEAD + self.text(tool_call_text(call))
        return tokens
