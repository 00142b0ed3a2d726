"""The rows the memory part stores and gives back (the memory engine maps its own values
to and from these), and their row mappers."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from memoir.store.codec import from_iso, loads, stored_time

__all__ = [
    "DenialRow",
    "MemoryItemRow",
    "MemoryOpRow",
    "MemorySourceRow",
    "PendingRow",
    "ReceiptRow",
    "Settlement",
    "denial_from_row",
    "item_from_row",
    "op_from_row",
    "pending_from_row",
    "receipt_from_row",
]


@dataclass(frozen=True, slots=True)
class MemoryOpRow:
    """One operation in a session's lane, durable until it settles: ``anchor`` is the
    checkpoint id, the requested turn or the tool-call id its identity is built from;
    ``coverage_through`` / ``context_through`` the frozen boundaries (None: decided when
    it runs); ``request`` what else the trigger carried (JSON)."""

    operation_id: str
    session_id: str
    trigger: str
    anchor: str
    enqueued_at: datetime
    coverage_through: int | None = None
    context_through: int | None = None
    request: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class PendingRow:
    """A session's one pending failure: the range that failed, kept with its own trigger,
    boundary and identity so the next trigger retries exactly it."""

    session_id: str
    operation_id: str
    trigger: str
    anchor: str
    range_after: int
    coverage_through: int
    context_through: int
    coverage_hash: str
    failure: str
    created_at: datetime
    message: str = ""
    checkpoint_id: str | None = None
    turn: int | None = None
    failures: int = 1


@dataclass(frozen=True, slots=True)
class DenialRow:
    """A durable policy denial: events ``(range_after, range_through]`` of the session are
    never read for memory, never sent to a model, never cited (a barrier)."""

    session_id: str
    range_after: int
    range_through: int
    reason: str
    created_at: datetime
    checkpoint_id: str | None = None


@dataclass(frozen=True, slots=True)
class ReceiptRow:
    operation_id: str
    session_id: str
    trigger: str
    outcome: str
    range_after: int
    range_through: int
    created_at: datetime
    reason: str = ""
    checkpoint_id: str | None = None
    prompt: str = ""
    model: str = ""
    items: int = 0
    dropped: int = 0
    model_calls: int = 0
    input_tokens: int = 0
    data: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class MemorySourceRow:
    """An exact quote of a user event that supports an item."""

    session_id: str
    ordinal: int
    quote: str


@dataclass(frozen=True, slots=True)
class MemoryItemRow:
    id: str
    session_id: str
    project: str
    scope: str
    kind: str
    content: str
    normalized: str
    keys: tuple[str, ...]
    operation_id: str
    created_at: datetime
    temporal: dict[str, Any] = field(default_factory=dict)
    observed_at: datetime | None = None
    superseded_by: str | None = None
    forgotten_at: datetime | None = None
    sources: tuple[MemorySourceRow, ...] = ()


@dataclass(frozen=True, slots=True)
class Settlement:
    """Everything one operation's outcome writes, in one transaction: the items, the
    cursor moved from ``cursor_from`` to ``cursor_to`` (compare-and-set; None: the cursor
    stays), the pending failure set (``pending``) or cleared (``clear_pending``), the
    receipt, and the lane's operations now done. Settling an operation that already has a
    receipt changes nothing (a replay)."""

    receipt: ReceiptRow
    items: tuple[MemoryItemRow, ...] = ()
    cursor_from: int | None = None
    cursor_to: int | None = None
    pending: PendingRow | None = None
    clear_pending: bool = False
    done_ops: tuple[str, ...] = ()


def op_from_row(r: Any) -> MemoryOpRow:
    return MemoryOpRow(
        operation_id=r[0],
        session_id=r[1],
        trigger=r[2],
        anchor=r[3],
        coverage_through=r[4],
        context_through=r[5],
        request=loads(r[6]) or {},
        enqueued_at=stored_time(r[7]),
    )


def pending_from_row(r: Any) -> PendingRow:
    return PendingRow(
        session_id=r[0],
        operation_id=r[1],
        trigger=r[2],
        anchor=r[3],
        range_after=int(r[4]),
        coverage_through=int(r[5]),
        context_through=int(r[6]),
        coverage_hash=r[7],
        failure=r[8],
        message=r[9],
        checkpoint_id=r[10],
        turn=r[11],
        failures=int(r[12]),
        created_at=stored_time(r[13]),
    )


def denial_from_row(r: Any) -> DenialRow:
    return DenialRow(
        session_id=r[0],
        range_after=int(r[1]),
        range_through=int(r[2]),
        reason=r[3],
        checkpoint_id=r[4],
        created_at=stored_time(r[5]),
    )


def receipt_from_row(r: Any) -> ReceiptRow:
    return ReceiptRow(
        operation_id=r[0],
        session_id=r[1],
        trigger=r[2],
        outcome=r[3],
        reason=r[4],
        range_after=int(r[5]),
        range_through=int(r[6]),
        checkpoint_id=r[7],
        prompt=r[8],
        model=r[9],
        items=int(r[10]),
        dropped=int(r[11]),
        model_calls=int(r[12]),
        input_tokens=int(r[13]),
        created_at=stored_time(r[14]),
        data=loads(r[15]) or {},
    )


def item_from_row(r: Any, sources: tuple[MemorySourceRow, ...] = ()) -> MemoryItemRow:
    return MemoryItemRow(
        id=r[0],
        session_id=r[1],
        project=r[2],
        scope=r[3],
        kind=r[4],
        content=r[5],
        normalized=r[6],
        keys=tuple(loads(r[7]) or ()),
        temporal=loads(r[8]) or {},
        operation_id=r[9],
        created_at=stored_time(r[10]),
        observed_at=from_iso(r[11]),
        superseded_by=r[12],
        forgotten_at=from_iso(r[13]),
        sources=sources,
    )
