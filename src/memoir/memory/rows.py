"""The memory engine's values ↔ the store's memory rows.

What the memory runner is given and gives back: the store parts it uses, its bounds,
one task to run, and how a run ended.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime

from memoir.memory.decisions import Work
from memoir.memory.validate import normalize
from memoir.memory.values import MemoryItem, PendingFailure, Range, Scope, Trigger
from memoir.model import Event
from memoir.store.memory_rows import MemoryItemRow, MemorySourceRow, PendingRow, ReceiptRow, key_sig
from memoir.store.parts import (
    CheckpointsPart,
    EventsPart,
    MemoryItemsPart,
    MemoryPart,
    SessionsPart,
)

__all__ = [
    "MemoryConfig",
    "MemoryParts",
    "Outcome",
    "Task",
    "item_row",
    "pending_of",
    "pending_row",
]


def item_row(
    item: MemoryItem,
    *,
    operation: str,
    n: int,
    session_id: str,
    project: str,
    events: Mapping[int, Event],
    at: datetime,
    owner: str = "local",
    merge_into: str | None = None,
) -> MemoryItemRow:
    """The row of the ``n``-th item an operation saves: its id is a hash of both (a replay
    writes the same row), observed from the earliest to the latest event it quotes, valid
    from the earliest (or from now when the events carry no time)."""
    stamps = [events[q.ordinal].timestamp for q in item.quotes if q.ordinal in events]
    known = [s for s in stamps if s is not None]
    temporal = {"type": item.temporal.type.value}
    for name in ("start", "end"):
        value = getattr(item.temporal, name)
        if value is not None:
            temporal[name] = value.isoformat()
    return MemoryItemRow(
        id=hashlib.sha256(f"{operation}\0{n}".encode()).hexdigest()[:16],
        session_id=session_id,
        project=project,
        scope=item.scope.value,
        kind=item.kind.value,
        content=item.content,
        normalized=normalize(item.content).casefold(),
        keys=item.keys,
        operation_id=operation,
        created_at=at,
        temporal=temporal,
        observed_at=max(known, default=None),
        first_observed_at=min(known, default=None),
        valid_from=min(known, default=at),
        sources=tuple(
            MemorySourceRow(session_id, q.ordinal, q.text, operation) for q in item.quotes
        ),
        owner=owner,
        scope_key=project if item.scope is Scope.PROJECT else "",
        key_sig=key_sig(item.keys),
        supersedes=item.updates,
        merge_into=merge_into,
    )


def pending_of(row: PendingRow) -> PendingFailure:
    return PendingFailure(
        session_id=row.session_id,
        range=Range(row.range_after, row.coverage_through, row.context_through),
        coverage_hash=row.coverage_hash,
        first_operation_id=row.operation_id,
        trigger=Trigger(row.trigger),
        failure_class=row.failure,
        anchor=row.anchor,
        checkpoint_id=row.checkpoint_id,
        requested_turn=row.turn,
    )


def pending_row(p: PendingFailure, message: str, at: datetime) -> PendingRow:
    return PendingRow(
        session_id=p.session_id,
        operation_id=p.first_operation_id,
        trigger=p.trigger.value,
        anchor=p.anchor,
        range_after=p.range.after_cursor,
        coverage_through=p.range.coverage_through,
        context_through=p.range.context_through,
        coverage_hash=p.coverage_hash,
        failure=p.failure_class,
        created_at=at,
        message=message,
        checkpoint_id=p.checkpoint_id,
        turn=p.requested_turn,
    )


@dataclass(frozen=True, slots=True)
class MemoryParts:
    """The store parts memory reads and writes."""

    sessions: SessionsPart
    events: EventsPart
    checkpoints: CheckpointsPart
    memory: MemoryPart
    items: MemoryItemsPart


@dataclass(frozen=True, slots=True)
class MemoryConfig:
    """``window``: the context window a request must fit when the trigger froze none (a
    compaction freezes its own); ``output_reserve``: tokens kept for the answer;
    ``context_tail``: most events past the coverage boundary read for interpretation."""

    window: int = 32_000
    output_reserve: int = 2_000
    context_tail: int = 16


@dataclass(frozen=True, slots=True)
class Task:
    """What to run: ``work`` (trigger, anchor, identity, a retry's range), the frozen
    ``boundary`` / ``context`` (a compaction's coverage and context ends; None: the
    requested turn's exchange, or the session's end), the frozen ``disposition`` and
    ``window`` of a checkpoint, an extract's ``note``."""

    work: Work
    boundary: int | None = None
    context: int | None = None
    disposition: str | None = None
    window: int | None = None
    note: str | None = None


@dataclass(frozen=True, slots=True)
class Outcome:
    """How a run ended: ``receipt`` when it settled; ``pending`` when it failed and was
    recorded for a retry; ``waiting`` when policy was unavailable (nothing happened)."""

    receipt: ReceiptRow | None = None
    items: tuple[MemoryItemRow, ...] = ()
    pending: PendingRow | None = None
    waiting: str | None = None
    error: str | None = None

    @property
    def settled(self) -> bool:
        return self.receipt is not None
