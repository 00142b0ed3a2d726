"""Checkpoints: a compaction persisted so later turns replay it instead of redoing it.

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
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from memoir.compaction.sequence import Message
from memoir.model import SessionFlags
from memoir.store.port import Store
from memoir.store.values import CheckpointRow

__all__ = [
    "ELIGIBLE",
    "POLICY_DENIED",
    "Replay",
    "disposition",
    "fingerprint",
    "latest_checkpoint",
    "new_checkpoint",
    "replay_point",
]

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
