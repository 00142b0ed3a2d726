"""The rows the memory part stores and gives back (the memory engine maps its own values
to and from these), and their row mappers."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field, replace
from datetime import datetime
from typing import Any

from memoir.store.codec import from_iso, loads, stored_time, value_from_row

__all__ = [
    "DENIAL_COLS",
    "ITEM_COLS",
    "OP_COLS",
    "PENDING_COLS",
    "RECEIPT_COLS",
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


OP_COLS = (
    "operation_id, session_id, trigger, anchor, coverage_through, context_through, request, "
    "enqueued_at"
)
PENDING_COLS = (
    "session_id, operation_id, trigger, anchor, range_after, coverage_through, context_through, "
    "coverage_hash, failure, message, checkpoint_id, turn, failures, created_at"
)
DENIAL_COLS = "session_id, range_after, range_through, reason, checkpoint_id, created_at"
RECEIPT_COLS = (
    "operation_id, session_id, trigger, outcome, reason, range_after, range_through, "
    "checkpoint_id, prompt, model, items, dropped, model_calls, input_tokens, created_at, data"
)
ITEM_COLS = (
    "id, session_id, project, scope, kind, content, normalized, keys, temporal, operation_id, "
    "created_at, observed_at, superseded_by, forgotten_at"
)


def _json_object(value: Any) -> dict[str, Any]:
    return loads(value) or {}


def _ints(*names: str) -> dict[str, Callable[[Any], Any]]:
    return dict.fromkeys(names, int)


def op_from_row(r: Any) -> MemoryOpRow:
    convert = {"request": _json_object, "enqueued_at": stored_time}
    return value_from_row(MemoryOpRow, OP_COLS, r, convert=convert)


def pending_from_row(r: Any) -> PendingRow:
    ints = _ints("range_after", "coverage_through", "context_through", "failures")
    convert = {**ints, "created_at": stored_time}
    return value_from_row(PendingRow, PENDING_COLS, r, convert=convert)


def denial_from_row(r: Any) -> DenialRow:
    convert = {**_ints("range_after", "range_through"), "created_at": stored_time}
    return value_from_row(DenialRow, DENIAL_COLS, r, convert=convert)


def receipt_from_row(r: Any) -> ReceiptRow:
    ints = _ints("range_after", "range_through", "items", "dropped", "model_calls", "input_tokens")
    convert = {**ints, "created_at": stored_time, "data": _json_object}
    return value_from_row(ReceiptRow, RECEIPT_COLS, r, convert=convert)


def item_from_row(r: Any, sources: tuple[MemorySourceRow, ...] = ()) -> MemoryItemRow:
    convert: dict[str, Callable[[Any], Any]] = {
        "keys": lambda v: tuple(loads(v) or ()),
        "temporal": _json_object,
        "created_at": stored_time,
        "observed_at": from_iso,
        "forgotten_at": from_iso,
    }
    item = value_from_row(MemoryItemRow, ITEM_COLS, r, convert=convert)
    return replace(item, sources=sources)
