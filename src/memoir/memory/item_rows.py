"""The rows the memory part stores and gives back (the memory engine maps its own values
to and from these), and their row mappers."""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Sequence
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
    "column_marks",
    "denial_from_row",
    "evidence_fingerprint",
    "item_from_row",
    "key_sig",
    "op_from_row",
    "pending_from_row",
    "receipt_from_row",
    "standing_key",
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
    """An exact quote of a user event that supports an item; ``operation_id`` the
    operation that added it (a merged item holds quotes of several)."""

    session_id: str
    ordinal: int
    quote: str
    operation_id: str = ""


@dataclass(frozen=True, slots=True)
class MemoryItemRow:
    """A memory item. ``owner`` (the session's user) and ``scope_key`` (the project of a
    project-scoped item, else ``''``) are what it is unique within: two live items never
    share ``normalized`` or ``key_sig`` there. ``[valid_from, valid_until)`` is when it
    held (closed when a later statement superseded it: ``superseded_by``);
    ``first_observed_at`` .. ``observed_at`` the times of its earliest and latest quote.
    (``key_sig``: the keys as one string, what a same-key-set lookup compares.)
    ``supersedes`` / ``merge_into`` are instructions to the store when it is saved (the
    item it replaces; the near-duplicate it joins), not columns."""

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
    owner: str = ""
    scope_key: str = ""
    key_sig: str = ""
    first_observed_at: datetime | None = None
    valid_from: datetime | None = None
    valid_until: datetime | None = None
    supersedes: str | None = None
    merge_into: str | None = None

    @property
    def live(self) -> bool:
        return self.superseded_by is None


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
    "created_at, observed_at, superseded_by, forgotten_at, owner, scope_key, key_sig, "
    "first_observed_at, valid_from, valid_until"
)


def column_marks(cols: str) -> str:
    """The ``?`` placeholders of an insert of these columns."""
    return ", ".join("?" for _ in cols.split(","))


KEY_SEPARATOR = "\x1f"


def standing_key(item: MemoryItemRow, kinds: Sequence[str]) -> tuple[int, int, float, str]:
    """The order a context block takes items in: by kind in ``kinds``' order, then the
    most quoted, then the most recently said."""
    rank = kinds.index(item.kind) if item.kind in kinds else len(kinds)
    seen = item.observed_at or item.created_at
    return (rank, -len(item.sources), -seen.timestamp(), item.id)


def key_sig(keys: Any) -> str:
    """The key set of an item as one comparable string (sorted, case-folded, distinct)."""
    folded = {" ".join(str(k).casefold().split()) for k in keys}
    return KEY_SEPARATOR.join(sorted(k for k in folded if k))


def evidence_fingerprint(session_id: str, ordinal: int, quote: str) -> str:
    """What a forgotten quote leaves behind: a hash of the event it quotes and its words
    (case and spacing folded), so the same evidence is never extracted again."""
    words = " ".join(quote.split()).casefold()
    raw = f"{session_id}\0{ordinal}\0{words}"
    return hashlib.sha256(raw.encode("utf-8")).hexdigest()[:32]


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
        "first_observed_at": from_iso,
        "valid_from": from_iso,
        "valid_until": from_iso,
    }
    item = value_from_row(MemoryItemRow, ITEM_COLS, r, convert=convert)
    return replace(item, sources=sources)
