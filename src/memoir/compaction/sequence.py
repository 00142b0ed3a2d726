"""What a message sequence must be for the OpenAI and Anthropic chat APIs, and its units.

Messages are OpenAI-style mappings: ``{"role", "content", "tool_calls", "tool_call_id"}``.
:func:`validate_sequence` is the pure check every compaction output passes; it enforces
the intersection of what both APIs accept (Anthropic renders tool results as user
content, so a block of tool results, optionally followed by one user message, is one
user-side turn):

1. roles are system (or ``developer``) / user / assistant / tool; system messages only as a
   leading prefix;
2. the first non-system message is a user message;
3. an assistant message with ``tool_calls`` (unique, non-empty ids) is followed at once
   by exactly one tool result per call id, in any order, before anything else;
4. no tool result outside such a block (no orphans, no duplicates);
5. roles alternate: no two user-side turns and no two assistant messages in a row (an
   input that has them is not refused: :func:`join_same_role` joins each run first);
6. no empty user message and no assistant message without content or tool calls;
7. no Anthropic-style ``tool_use`` / ``tool_result`` content blocks (their pairing is not
   tracked, so a cut could orphan one: they are refused, not guessed at).

:func:`units` splits a valid sequence into the atoms compaction keeps or drops whole: a
user message, or an assistant message together with all its tool results.

Token counts of chat messages, cached per message so a long history is counted once.

A message costs ``MESSAGE_FRAME_TOKENS`` tokens (role and framing, as OpenAI's cookbook
counts them) plus its content, plus for each tool call its name and arguments. The cache
is keyed by the message object and checked against the identity of its ``content`` and
``tool_calls`` values, so replacing either (``m["content"] = …``) is noticed; messages are
otherwise treated as immutable once handed over, like a provider SDK does. Entries not
seen for a while are evicted, so the cache stays the size of the live history.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from memoir.llm import default_counter
from memoir.llm.port import TokenCounter

__all__ = [
    "BLOCK_TOOL_PARTS",
    "MEDIA_PARTS",
    "MEDIA_TOKENS",
    "MESSAGE_FRAME_TOKENS",
    "SYSTEM_ROLES",
    "Message",
    "MessageCounter",
    "Unit",
    "call_ids",
    "content_text",
    "content_tokens",
    "is_empty_content",
    "join_same_role",
    "leading_system_count",
    "media_parts",
    "shorten_runs",
    "tidy",
    "tool_call_text",
    "uncounted_text",
    "units",
    "validate_sequence",
]

Message = Mapping[str, Any]
_ROLES = frozenset({"system", "developer", "user", "assistant", "tool"})
# instructions: OpenAI's newer models take ``developer`` where older ones took ``system``
SYSTEM_ROLES = frozenset({"system", "developer"})


# content parts that hold no text: a model still reads (and is billed for) them
MEDIA_PARTS = frozenset({"image_url", "image", "input_image", "input_audio", "file", "document"})
# content blocks that pair a call with its result the Anthropic way; compaction pairs them
# only in the OpenAI form (``tool_calls`` + ``role: tool``), so it refuses to cut these
BLOCK_TOOL_PARTS = frozenset({"tool_use", "tool_result"})


def content_text(message: Message) -> str:
    """The text of a message's content: a string, or a part list's text parts, with
    ``[image]``-style placeholders for media parts."""
    content = message.get("content")
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        out = []
        for part in content:
            if isinstance(part, Mapping):
                text = part.get("text")
                if isinstance(text, str):
                    out.append(text)
                elif part.get("type") in MEDIA_PARTS:
                    kind = str(part.get("type")).removeprefix("input_").removesuffix("_url")
                    out.append(f"[{kind}]")
            elif isinstance(part, str):
                out.append(part)
        return "\n".join(out)
    return str(content)


def media_parts(message: Message) -> int:
    """How many media parts (images, audio, files) a message's content holds."""
    content = message.get("content")
    if not isinstance(content, list):
        return 0
    return sum(1 for p in content if isinstance(p, Mapping) and p.get("type") in MEDIA_PARTS)


def _block_tool_part(message: Message) -> str | None:
    content = message.get("content")
    if isinstance(content, list):
        for part in content:
            if isinstance(part, Mapping) and part.get("type") in BLOCK_TOOL_PARTS:
                return str(part.get("type"))
    return None


def is_empty_content(message: Message) -> bool:
    content = message.get("content")
    if content is None:
        return True
    if isinstance(content, str):
        return content.strip() == ""
    if isinstance(content, list):
        return len(content) == 0
    return False


def call_ids(message: Message) -> list[str]:
    """The ids of an assistant message's tool calls ('' for a call without an id)."""
    calls = message.get("tool_calls") or []
    return [str(c.get("id") or "") if isinstance(c, Mapping) else "" for c in calls]


def leading_system_count(messages: Sequence[Message]) -> int:
    n = 0
    while n < len(messages) and messages[n].get("role") in SYSTEM_ROLES:
        n += 1
    return n


def validate_sequence(messages: Sequence[Message]) -> list[str]:
    """Every way ``messages`` breaks the rules above; an empty list means valid."""
    problems: list[str] = []
    start = 0
    for i, m in enumerate(messages):
        role = m.get("role") if isinstance(m, Mapping) else None
        if not isinstance(role, str) or role not in _ROLES:
            return [f"message {i}: not a message with a known role"]
        if (block := _block_tool_part(m)) is not None:
            return [
                f"message {i}: a {block} content block; pass tool calls OpenAI-style "
                "(assistant tool_calls, then role 'tool' results)"
            ]
        if role in SYSTEM_ROLES and i != start:
            problems.append(f"message {i}: system message after the conversation started")
        if role in SYSTEM_ROLES and i == start:
            start += 1
    if start == len(messages):
        return [*problems, "no user message"]
    if messages[start]["role"] != "user":
        problems.append(f"message {start}: the first non-system message is not a user message")
    prev: str | None = None  # "user" (user-side turn), "assistant", or "tools" (open block)
    pending: set[str] = set()
    after_tools = False
    for i in range(start, len(messages)):
        m = messages[i]
        role = m["role"]
        if role != "tool" and pending:
            problems.append(f"message {i}: tool call(s) {sorted(pending)} have no result")
            pending = set()
        if role == "tool":
            cid = str(m.get("tool_call_id") or "")
            if cid not in pending:
                problems.append(f"message {i}: tool result {cid!r} answers no open tool call")
            pending.discard(cid)
            after_tools = True
            prev = "user"
            continue
        if role == "user":
            if prev == "user" and not after_tools:
                problems.append(f"message {i}: two user turns in a row")
            if is_empty_content(m):
                problems.append(f"message {i}: empty user message")
            after_tools = False
            prev = "user"
            continue
        if role == "assistant":
            if prev == "assistant":
                problems.append(f"message {i}: two assistant messages in a row")
            ids = call_ids(m)
            if not ids and is_empty_content(m):
                problems.append(f"message {i}: assistant message without content or tool calls")
            if any(not c for c in ids) or len(set(ids)) != len(ids):
                problems.append(f"message {i}: tool call ids are missing or repeated")
            pending = set(ids)
            after_tools = False
            prev = "assistant" if not ids else "tools"
            continue
    if pending:
        problems.append(f"end: tool call(s) {sorted(pending)} have no result")
    return problems


def tidy(messages: Sequence[Message], positions: Sequence[int]) -> tuple[list[Message], list[int]]:
    """What providers accept but rules 1, 2 and 6 do not, made valid without losing words:
    an assistant refusal (``content`` None, ``refusal`` text) becomes its text; an
    assistant message with nothing in it is dropped (nothing is lost); a system message
    after the conversation started, or an assistant message before the first user one,
    becomes a user-side note (``[system] …``) — joined with its neighbours next."""
    out: list[Message] = []
    pos: list[int] = []
    system_prefix, seen_user = True, False
    for m, p in zip(messages, positions, strict=True):
        role = m.get("role") if isinstance(m, Mapping) else None
        if not isinstance(role, str):  # not a message: validation says so
            out.append(m)
            pos.append(p)
            continue
        if role in SYSTEM_ROLES and system_prefix:
            out.append(m)
            pos.append(p)
            continue
        system_prefix = False
        if role == "assistant" and not m.get("tool_calls") and is_empty_content(m):
            refusal = m.get("refusal")
            if not (isinstance(refusal, str) and refusal.strip()):
                continue
            m = {**m, "content": refusal}
        if role in SYSTEM_ROLES or (role == "assistant" and not seen_user):
            text = content_text(m)
            if not text.strip() or m.get("tool_calls"):
                if role == "assistant" and m.get("tool_calls"):
                    out.append(m)  # a tool call before any user message: left to validation
                    pos.append(p)
                continue
            m = {"role": "user", "content": f"[{role}] {text}"}
        seen_user = seen_user or m.get("role") == "user"
        out.append(m)
        pos.append(p)
    return out, pos


def shorten_runs(
    messages: Sequence[Message], positions: Sequence[int], counts: Sequence[int], cap: int
) -> tuple[list[Message], list[int], list[tuple[int, int, int]]]:
    """In each run of user messages (one turn once joined), the latest are kept whole while
    they fit in ``cap`` tokens — the last one always — and the earlier ones become one
    short note of what they were (how many, their size, how the first ones began), so a
    turn that grew past the window (a paste, then the question; a thousand notes in a
    row) keeps the user's latest words instead of being stood in for whole. Also returns,
    for each message a note stands for, (the note's position, its position, its tokens)."""
    out: list[Message] = []
    pos: list[int] = []
    noted: list[tuple[int, int, int]] = []
    n = len(messages)
    i = 0
    while i < n:
        j = i
        while j < n and messages[j].get("role") == "user":
            j += 1
        if j - i < 2:
            out.append(messages[i])
            pos.append(positions[i])
            i += 1
            continue
        keep, used = j - 1, counts[j - 1]
        while keep - 1 >= i and used + counts[keep - 1] <= cap:
            keep -= 1
            used += counts[keep]
        if keep > i:  # messages[i:keep] no longer fit: one note stands for them
            dropped = keep - i
            tokens = sum(counts[i:keep])
            what = "user message" if dropped == 1 else f"{dropped} user messages"
            out.append({"role": "user", "content": _run_note(messages[i:keep], what, tokens)})
            pos.append(positions[keep - 1])
            noted.extend((positions[keep - 1], positions[k], counts[k]) for k in range(i, keep))
        out.extend(messages[keep:j])
        pos.extend(positions[keep:j])
        i = j
    return out, pos, noted


def _run_note(dropped: Sequence[Message], what: str, tokens: int) -> str:
    openings = []
    for m in dropped[:3]:
        line = next((x for x in content_text(m).splitlines() if x.strip()), "")
        words = " ".join(line.split())
        if words:
            shown = words if len(words) <= 80 else words[:80].rsplit(" ", 1)[0] + "…"
            openings.append(json.dumps(shown, ensure_ascii=False))
    began = f"; they began: {', '.join(openings)}" if openings else ""
    return (
        f"[content omitted from the context: {what}, ~{tokens} tokens{began}. The user sent "
        "it; re-read the source for its contents rather than reconstructing them.]"
    )


def join_same_role(
    messages: Sequence[Message], positions: Sequence[int]
) -> tuple[list[Message], list[int]]:
    """``messages`` with each run of user messages (or of assistant messages, the last of
    which may call tools) joined into one, so roles alternate as rule 5 asks — what both
    APIs make of such runs anyway. A joined message takes the position of its last part;
    a run whose parts name different speakers keeps each name before its words."""
    out: list[Message] = []
    pos: list[int] = []
    for m, p in zip(messages, positions, strict=True):
        prev = out[-1] if out else None
        role = m.get("role")
        if (
            prev is not None
            and role in ("user", "assistant")
            and prev.get("role") == role
            and not prev.get("tool_calls")
        ):
            out[-1] = _joined(prev, m)
            pos[-1] = p
        else:
            out.append(m)
            pos.append(p)
    return out, pos


def _joined(first: Message, second: Message) -> Message:
    names = {_name(first), _name(second)}
    parts: list[Any] = []
    for m in (first, second):
        content = m.get("content")
        items = content if isinstance(content, list) else [{"type": "text", "text": content or ""}]
        if len(names) > 1 and _name(m):
            items = [{"type": "text", "text": f"{_name(m)}:"}, *items]
        parts.extend(i for i in items if not (isinstance(i, Mapping) and i.get("text") == ""))
    joined: dict[str, Any] = {k: v for k, v in second.items() if k not in ("content", "name")}
    if len(names) == 1 and _name(first):
        joined["name"] = first["name"]
    if all(isinstance(i, Mapping) and i.get("type") == "text" for i in parts):
        joined["content"] = "\n\n".join(str(i["text"]) for i in parts)
    else:
        joined["content"] = parts
    return joined


def _name(message: Message) -> str | None:
    name = message.get("name")
    return name if isinstance(name, str) and name else None


@dataclass(frozen=True, slots=True)
class Unit:
    """Messages ``[start, stop)`` kept or dropped together."""

    kind: Literal["user", "assistant"]
    start: int
    stop: int


def units(messages: Sequence[Message], start: int | None = None) -> list[Unit]:
    """Split the non-system part of a *valid* sequence into units (from ``start``)."""
    i = leading_system_count(messages) if start is None else start
    out: list[Unit] = []
    n = len(messages)
    while i < n:
        role = messages[i].get("role")
        if role == "assistant":
            j = i + 1
            while j < n and messages[j].get("role") == "tool":
                j += 1
            out.append(Unit("assistant", i, j))
            i = j
        else:  # user (a stray tool result is kept with nothing; validation rejects it first)
            out.append(Unit("user", i, i + 1))
            i += 1
    return out


MESSAGE_FRAME_TOKENS = 4
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
    return max(0, message_tokens - MESSAGE_FRAME_TOKENS)


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
        tokens = MESSAGE_FRAME_TOKENS + self.text(content_text(message))
        tokens += self.text(uncounted_text(message))
        tokens += MEDIA_TOKENS * media_parts(message)
        for call in message.get("tool_calls") or []:
            tokens += MESSAGE_FRAME_TOKENS + self.text(tool_call_text(call))
        return tokens
