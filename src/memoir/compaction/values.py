"""The values of compaction in and out — the history read from a stored session, the
result handed back, the checkpoint kept — and what derives from them.

The values compaction hands back: the result and what was omitted. Pure.

Memoir events as chat messages, with each message's position (its last event ordinal).

User text becomes a user message (consecutive ones joined; a named speaker leads their
words, ``"Alice: …"``, as chat APIs without a ``name`` field need), assistant text and the tool
calls that follow it one assistant message, tool results tool messages. Thinking,
attachments, meta and compaction events are not replayed. The output is always a valid
sequence: a tool result without its call is left out, a call that never got a result
is removed from its message (the message too when nothing else remains), and anything
before the first user message is skipped. Pure.

Checkpoints: a compaction persisted so later turns replay it instead of redoing it.

A checkpoint row records the summary (or the carried previous summary after a truncate
backstop), the watermark (position of the last covered message — the event ordinal for
event histories), a fingerprint of that message (so a replay never lands on a different
history), the positions replaced by stand-ins in the kept part and their messages'
fingerprints (so a stand-in never replaces another message), what was omitted, the
previous checkpoint, and — for the memory extraction that runs later, never waited on —
the frozen memory boundary (the last covered position) and the session's memory-policy
disposition at that moment. Pure, except :func:`latest_checkpoint`, which reads the store.
"""

from __future__ import annotations

import hashlib
import json
import uuid
from bisect import bisect_left
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Literal

from memoir.compaction.sequence import Message
from memoir.model import Event, EventKind, SessionFlags, spoken_text
from memoir.store.port import Store
from memoir.store.values import CheckpointRow

__all__ = [
    "ELIGIBLE",
    "POLICY_DENIED",
    "CompactionResult",
    "History",
    "Omission",
    "Replay",
    "Strategy",
    "Where",
    "disposition",
    "fingerprint",
    "latest_checkpoint",
    "messages_from_events",
    "new_checkpoint",
    "replay_point",
]

# summary: older messages summarized, the tail kept; stand_in: nothing needed summarizing,
# messages too large for the context were replaced by stand-ins; truncate: the backstop
# (no usable summary) dropped the oldest messages; none: under the threshold
Strategy = Literal["summary", "stand_in", "truncate", "none"]
Where = Literal["request", "context", "dropped"]


@dataclass(frozen=True, slots=True)
class Omission:
    """A message whose content is not in the new context: where it went, and how big —
    never its content. ``request``: summarized, but the summary request held its stand-in
    (the summary knows of it, not what it said); ``context``: kept as its stand-in;
    ``dropped``: removed by the backstop without a summary."""

    position: int  # 1-based position in the caller's list, or the event ordinal
    role: str
    tool: str | None
    tokens: int
    where: Where

    def as_dict(self) -> dict[str, Any]:
        return {
            "position": self.position,
            "role": self.role,
            "tool": self.tool,
            "tokens": self.tokens,
            "where": self.where,
        }


@dataclass(frozen=True, slots=True)
class CompactionResult:
    """What one compaction did.

    ``messages`` is the new context (under the threshold: the input list's contents, or
    the replayed checkpoint context). ``output_budget`` is the summary budget of the last
    request sent (the accepted ladder step for a summary), None when no request was sent.
    ``threshold_source`` says where the ratio came from (``default``, ``env
    MEMOIR_COMPACT_THRESHOLD_RATIO``, ``argument``). ``reason`` says why the backstop ran.

    The accounts agree on every path: of the non-system messages the compaction started
    from (after a replayed checkpoint, those after its watermark), ``kept_verbatim`` are
    in the new context word for word, ``removed_count`` are gone from it (summarized, or
    dropped by the backstop — each dropped one, and each summarized one the summary saw
    only as a stand-in, is in ``omitted``), and the rest are kept as stand-ins (in
    ``omitted`` with ``where="context"``). A note standing for earlier messages of a run
    of user messages lists each of them in ``omitted`` as well.
    """

    messages: list[dict[str, Any]]
    strategy: Strategy
    tokens_before: int
    tokens_after: int
    removed_count: int
    omitted: tuple[Omission, ...]
    window: int
    threshold: int
    ratio: float
    threshold_source: str
    cap: int
    output_budget: int | None
    checkpoint_id: str | None = None
    replayed_from: str | None = None
    summary: str | None = None
    reason: str | None = None
    model_calls: int = 0
    budgets_tried: tuple[int, ...] = field(default_factory=tuple)
    kept_verbatim: int = 0
    tail_budget: int = 0

    @property
    def compacted(self) -> bool:
        return self.strategy != "none"

    def to_json(self) -> dict[str, Any]:
        """The CLI's ``--json`` document (the fixed keys first)."""
        return {
            "messages": self.messages,
            "strategy": self.strategy,
            "tokens_before": self.tokens_before,
            "tokens_after": self.tokens_after,
            "removed_count": self.removed_count,
            "omitted": [o.as_dict() for o in self.omitted],
            "kept_verbatim": self.kept_verbatim,
            **{k: v for k, v in self.trace_data().items() if k not in _JSON_FIXED},
        }

    def trace_data(self) -> dict[str, Any]:
        """The trace event: counts and sizes only, never message content."""
        return {
            "strategy": self.strategy,
            "tokens_before": self.tokens_before,
            "tokens_after": self.tokens_after,
            "removed_count": self.removed_count,
            "omitted": [o.as_dict() for o in self.omitted],
            "kept_verbatim": self.kept_verbatim,
            "cap": self.cap,
            "tail_budget": self.tail_budget,
            "output_budget": self.output_budget,
            "budgets_tried": list(self.budgets_tried),
            "window": self.window,
            "threshold": self.threshold,
            "ratio": self.ratio,
            "threshold_source": self.threshold_source,
            "checkpoint_id": self.checkpoint_id,
            "replayed_from": self.replayed_from,
            "reason": self.reason,
            "model_calls": self.model_calls,
        }


_JSON_FIXED = frozenset(
    {
        "strategy",
        "tokens_before",
        "tokens_after",
        "removed_count",
        "omitted",
        "kept_verbatim",
        "messages",
    }
)


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


ELIGIBLE = "eligible"
POLICY_DENIED = "policy_denied"


def disposition(flags: SessionFlags | None) -> str:
    """The memory-policy disposition frozen into a checkpoint (incognito, memory disabled,
    archived and subagent sessions are denied)."""
    return POLICY_DENIED if flags is not None and flags.memory_denied else ELIGIBLE


def fingerprint(message: Message) -> str:
    raw = json.dumps(message, sort_keys=True, ensure_ascii=False, default=str)
    return hashlib.sha256(raw.encode("utf-8")).hexdigest()[:32]


@dataclass(frozen=True, slots=True)
class Replay:
    """Where a checkpoint leaves the history: replay ``summary`` + ``messages[start:]``."""

    checkpoint_id: str
    summary: str | None
    start: int
    watermark: int
    replaced: frozenset[int]  # positions replaced by their stand-ins


def replay_point(
    row: CheckpointRow,
    messages: Sequence[Message],
    positions: Sequence[int],
    fingerprint_of: Any = fingerprint,
) -> Replay | None:
    """The replay of ``row`` over this history, or None when it does not apply (the
    watermark is not a position of this history or its message changed)."""
    summary = row.data.get("summary")
    replaced = frozenset(int(p) for p in row.data.get("replaced", ()))
    summary = summary if isinstance(summary, str) and summary else None
    if not _replaced_match(row, replaced, messages, positions, fingerprint_of):
        return None
    if row.watermark <= 0:  # nothing covered (stand-ins only, no system message)
        return Replay(row.id, summary, 0, row.watermark, replaced)
    k = _index(positions, row.watermark)
    if k is None or fingerprint_of(messages[k]) != row.data.get("fingerprint"):
        return None
    return Replay(row.id, summary, k + 1, row.watermark, replaced)


def _index(positions: Sequence[int], position: int) -> int | None:
    k = bisect_left(positions, position)
    return k if k < len(positions) and positions[k] == position else None


def _replaced_match(
    row: CheckpointRow,
    replaced: frozenset[int],
    messages: Sequence[Message],
    positions: Sequence[int],
    fingerprint_of: Any,
) -> bool:
    """Are the messages the checkpoint replaced by stand-ins still those messages? A row
    written before their fingerprints were kept is trusted only behind a checked
    watermark (with none, nothing would tie it to this history)."""
    if not replaced:
        return True
    prints = row.data.get("replaced_fingerprints")
    if not isinstance(prints, dict):
        return row.watermark > 0
    for position in replaced:
        k = _index(positions, position)
        if k is None or fingerprint_of(messages[k]) != prints.get(str(position)):
            return False
    return True


def new_checkpoint(
    session_id: str,
    *,
    at: datetime,
    strategy: str,
    summary: str | None,
    watermark: int,
    watermark_fingerprint: str,
    previous_id: str | None,
    flags: SessionFlags | None,
    kept: Sequence[int],
    tail_from: int | None,
    replaced: Sequence[int],
    omitted: Sequence[dict[str, Any]],
    replaced_fingerprints: Sequence[str],
    context_through: int | None = None,
    window: int | None = None,
) -> CheckpointRow:
    """A checkpoint row; ``replaced_fingerprints`` are those of the ``replaced`` messages,
    in the same order (a replay checks them before putting stand-ins in their place).
    ``context_through`` is the last position of the history compacted (the retained tail
    memory extraction may read, never cite) and ``window`` the context window compacted
    for (the bound a memory request is preflighted against)."""
    return CheckpointRow(
        id=uuid.uuid4().hex,
        session_id=session_id,
        created_at=at,
        watermark=watermark,
        memory_boundary=watermark,
        disposition=disposition(flags),
        previous_id=previous_id,
        data={
            "strategy": strategy,
            "summary": summary or "",
            "fingerprint": watermark_fingerprint,
            "kept": list(kept),
            "tail_from": tail_from,
            "replaced": sorted(replaced),
            "replaced_fingerprints": {
                str(p): f for p, f in zip(replaced, replaced_fingerprints, strict=True)
            },
            "omitted": list(omitted),
            "context_through": watermark if context_through is None else context_through,
            "window": window,
        },
    )


def latest_checkpoint(store: Store, session_id: str) -> CheckpointRow | None:
    rows = store.checkpoints.of(session_id)
    if not rows:
        return None
    return max(enumerate(rows), key=lambda kr: (kr[1].created_at, kr[0]))[1]
