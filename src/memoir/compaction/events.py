"""Memoir events as chat messages, with each message's position (its last event ordinal).

User text becomes a user message (consecutive ones joined; a named speaker leads their
words, ``"Alice: …"``, as chat APIs without a ``name`` field need), assistant text and the tool
calls that follow it one assistant message, tool results tool messages. Thinking,
attachments, meta and compaction events are not replayed. The output is always a valid
sequence: a tool result without its call is left out, a call that never got a result
is removed from its message (the message too when nothing else remains), and anything
before the first user message is skipped. Pure.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from memoir.model import Event, EventKind, spoken_text

__all__ = ["History", "messages_from_events"]


@dataclass(frozen=True, slots=True)
class History:
    messages: list[dict[str, Any]]
    positions: list[int]


def _call(event: Event) -> dict[str, Any]:
    # Readers keep small tool inputs in the payload; larger ones only as the event text.
    args = event.payload.get("input", event.payload.get("arguments"))
    if args is None:
        args = event.text or "{}"
    if not isinstance(args, str):
        args = json.dumps(args, ensure_ascii=False, sort_keys=True)
    return {
        "id": str(event.call_id),
        "type": "function",
        "function": {"name": event.tool_name or "tool", "arguments": args},
    }


def messages_from_events(events: Sequence[Event]) -> History:
    msgs: list[dict[str, Any]] = []
    pos: list[int] = []
    answered: dict[int, set[str]] = {}  # assistant message index -> call ids answered
    for ev in sorted(events, key=lambda e: e.ordinal):
        last = msgs[-1] if msgs else None
        if ev.kind == EventKind.USER_TEXT:
            if not ev.text.strip():
                continue
            if last is not None and last["role"] == "user":
                last["content"] = f"{last['content']}\n\n{spoken_text(ev)}"
                pos[-1] = ev.ordinal
            else:
                msgs.append({"role": "user", "content": spoken_text(ev)})
                pos.append(ev.ordinal)
        elif not msgs:
            continue  # nothing is replayed before the first user message
        elif ev.kind == EventKind.ASSISTANT_TEXT:
            if not ev.text.strip():
                continue
            if last is not None and last["role"] == "assistant" and not last.get("tool_calls"):
                last["content"] = f"{last['content']}\n\n{spoken_text(ev)}"
                pos[-1] = ev.ordinal
            else:
                msgs.append({"role": "assistant", "content": spoken_text(ev)})
                pos.append(ev.ordinal)
        elif ev.kind == EventKind.TOOL_CALL and ev.call_id:
            if last is not None and last["role"] == "assistant":
                if any(c["id"] == str(ev.call_id) for c in last.get("tool_calls") or []):
                    continue  # the same call recorded twice
                last.setdefault("tool_calls", []).append(_call(ev))
                pos[-1] = ev.ordinal
            else:
                msgs.append({"role": "assistant", "content": None, "tool_calls": [_call(ev)]})
                pos.append(ev.ordinal)
        elif ev.kind == EventKind.TOOL_RESULT and ev.call_id:
            _add_result(msgs, pos, ev, answered)
    return _drop_unanswered(msgs, pos, answered)


def _open_calls(msgs: list[dict[str, Any]]) -> tuple[int, set[str]]:
    """The assistant message the trailing tool block answers, and its call ids."""
    k = len(msgs) - 1
    while k >= 0 and msgs[k]["role"] == "tool":
        k -= 1
    if k < 0 or msgs[k]["role"] != "assistant":
        return -1, set()
    return k, {c["id"] for c in msgs[k].get("tool_calls") or []}


def _add_result(
    msgs: list[dict[str, Any]], pos: list[int], ev: Event, answered: dict[int, set[str]]
) -> None:
    cid = str(ev.call_id)
    k, open_ids = _open_calls(msgs)
    done = answered.setdefault(k, set())
    if cid in done or cid not in open_ids:
        return  # an orphan or repeated result would make the sequence invalid
    done.add(cid)
    msgs.append({"role": "tool", "tool_call_id": cid, "content": ev.text or "(no output)"})
    pos.append(ev.ordinal)


def _drop_unanswered(
    msgs: list[dict[str, Any]], pos: list[int], answered: dict[int, set[str]]
) -> History:
    """Tool calls are matched by occurrence (the message they are in), not by id alone:
    a reused call id later in the history is a different call."""
    out: list[dict[str, Any]] = []
    out_pos: list[int] = []
    for k, (m, p) in enumerate(zip(msgs, pos, strict=True)):
        if m["role"] == "assistant" and m.get("tool_calls"):
            done = answered.get(k, set())
            calls = [c for c in m["tool_calls"] if c["id"] in done]
            if calls:
                m["tool_calls"] = calls
            else:
                m.pop("tool_calls")
                if not (m.get("content") or "").strip():
                    continue
        prev = out[-1] if out else None
        if prev is not None and prev["role"] == m["role"] and m["role"] != "tool":
            # a dropped call left two user or two assistant messages side by side
            texts = [t for t in (prev.get("content"), m.get("content")) if t and t.strip()]
            prev["content"] = "\n\n".join(texts) if texts else None
            if m.get("tool_calls"):
                prev["tool_calls"] = m["tool_calls"]
            out_pos[-1] = p
            continue
        out.append(m)
        out_pos.append(p)
    return History(out, out_pos)
