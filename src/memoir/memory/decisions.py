"""Pure decision tables of the extraction pipeline: retry and discard, policy, the lane.

Retry and discard (one pending failure per session):

============================  =========================================================
after a failure, pending is   decision
============================  =========================================================
none                          record it pending (range, coverage hash, first operation
                              id, trigger, failure class, anchor, checkpoint, turn)
the same covered span         discard: a ``discarded`` receipt under the first operation
                              id, pending cleared, the cursor moves to the span's end
another span                  keep the older pending; the cursor stays before both, so
                              the newer range is rebuilt later (never lost, never merged)
============================  =========================================================

:func:`next_work`: with a pending failure, the next *distinct* trigger first retries the
old range with its own trigger, anchor (hence operation id), boundary, checkpoint and
requested turn, then runs its own work separately; a duplicate dispatch of the pending
operation is not a distinct trigger; a recovery run (no new trigger) retries the pending.

Policy (:func:`policy_decision`), the same at every stage (checkpoint, before reading
events, before the model call, before commit): a frozen ``policy_denied`` disposition or
flags denied now → deny (a durable denial marker is written before any cursor skip);
flags unreadable now, or a disposition this version does not know → unavailable
(transient: nothing is read or sent, the range stays eligible); else proceed.
:func:`on_denied`: the cursor skips a denied range only when no pending failure precedes
it, and a policy skip consumes a pending failure of the same span only when it is not an
explicit ``remember``/``extract`` one.

Lane (:func:`lane_order`): the running operation is never preempted; a foreground
``remember`` goes ahead of queued background work; operations with the same id are one.

Near-duplicates: when a new item says what a live item of the same owner and scope
already says in other words, it merges into it (its quotes appended) instead of standing
beside it. Pure.

Vectors alone are not enough: with the bundled MiniLM, "I prefer tabs over spaces." and
"I prefer spaces over tabs." score 0.981 — higher than the paraphrase "I prefer tabs to
spaces." (0.975). So a pair is a near-duplicate only when all three hold:

- cosine similarity of their vectors at least :data:`NEAR_DUPLICATE` (0.95; measured pairs
  in docs/benchmarks.md: paraphrases 0.95–0.98, a different city 0.59, a different
  allergy wording 0.88);
- the content words they share appear in the same order in both (the reversed
  preference above shares {prefer, tabs, spaces} in another order);
- both or neither carry a negation (``not``, ``never``, ``no``, ``n't`` …).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from enum import StrEnum
from typing import TYPE_CHECKING

from memoir.errors import BudgetExhausted
from memoir.llm import port as llm_errors
from memoir.memory.evidence import EvidenceSlice, has_user_text
from memoir.memory.validate import Validation, remember_precheck
from memoir.memory.values import (
    MalformedProposal,
    PendingFailure,
    ProposalStatus,
    Range,
    ReceiptOutcome,
    Trigger,
    operation_id,
)
from memoir.model import SessionFlags
from memoir.store.search_text import STOPWORDS

if TYPE_CHECKING:
    import numpy as np

__all__ = [
    "ELIGIBLE",
    "NEAR_DUPLICATE",
    "OVERSIZED",
    "POLICY_DENIED",
    "VALIDATION",
    "Candidate",
    "DenialPlan",
    "FailureAction",
    "FailureDecision",
    "LaneOp",
    "PolicyAction",
    "PolicyStage",
    "PolicyVerdict",
    "Work",
    "after_failure",
    "dedupe",
    "failure_class",
    "lane_order",
    "near_duplicate",
    "next_work",
    "on_denied",
    "policy_decision",
    "precheck",
    "receipt_of",
    "same_claim",
    "skip_denied",
]


ELIGIBLE = "eligible"  # the dispositions a compaction checkpoint freezes
POLICY_DENIED = "policy_denied"
VALIDATION = "validation"  # failure class: a requested item failed validation
OVERSIZED = "oversized"  # failure class: the range does not fit even split in two


@dataclass(frozen=True, slots=True)
class Work:
    """One unit of extraction work. ``range`` is None for a new trigger whose range is
    built from the cursor when it runs; a retry carries the pending failure's range."""

    session_id: str
    trigger: Trigger
    anchor: str
    range: Range | None = None
    checkpoint_id: str | None = None
    requested_turn: int | None = None
    retry: bool = False
    first_operation_id: str | None = None  # a retry keeps the id its failure recorded

    @property
    def operation_id(self) -> str:
        if self.first_operation_id is not None:
            return self.first_operation_id
        return operation_id(self.session_id, self.trigger, self.anchor)

    @classmethod
    def retrying(cls, pending: PendingFailure) -> Work:
        return cls(
            pending.session_id,
            pending.trigger,
            pending.anchor,
            pending.range,
            pending.checkpoint_id,
            pending.requested_turn,
            retry=True,
            first_operation_id=pending.first_operation_id,
        )


class FailureAction(StrEnum):
    RECORD_PENDING = "record_pending"
    DISCARD = "discard"
    KEEP_PENDING = "keep_pending"


@dataclass(frozen=True, slots=True)
class FailureDecision:
    """``pending`` is what the session holds afterwards (None: cleared); ``receipt`` and
    ``receipt_operation`` the receipt to write; ``advance_to`` the cursor's new value."""

    action: FailureAction
    pending: PendingFailure | None
    receipt: ReceiptOutcome | None = None
    receipt_operation: str | None = None
    advance_to: int | None = None


def after_failure(
    pending: PendingFailure | None, work: Work, coverage_hash: str, failure: str
) -> FailureDecision:
    """What a failed range leaves behind (see the module's table)."""
    if work.range is None:
        raise ValueError("a failed work item always has its range")
    if pending is None:
        recorded = PendingFailure(
            session_id=work.session_id,
            range=work.range,
            coverage_hash=coverage_hash,
            first_operation_id=work.operation_id,
            trigger=work.trigger,
            failure_class=failure,
            anchor=work.anchor,
            checkpoint_id=work.checkpoint_id,
            requested_turn=work.requested_turn,
        )
        return FailureDecision(FailureAction.RECORD_PENDING, recorded)
    if pending.range.span == work.range.span:
        return FailureDecision(
            FailureAction.DISCARD,
            None,
            ReceiptOutcome.DISCARDED,
            pending.first_operation_id,
            pending.range.coverage_through,
        )
    return FailureDecision(FailureAction.KEEP_PENDING, pending)


def next_work(pending: PendingFailure | None, new: Work | None) -> tuple[Work, ...]:
    """The work to run, in order, when ``new`` arrives (None: a recovery run)."""
    if pending is None:
        return () if new is None else (new,)
    retry = Work.retrying(pending)
    if new is None:
        return (retry,)
    if new.operation_id == pending.first_operation_id:
        return ()  # the failed operation dispatched again: not a distinct trigger
    return (retry, new)


class PolicyStage(StrEnum):
    CHECKPOINT = "checkpoint"  # freezing the disposition (synchronous flags, no I/O)
    BEFORE_READ = "before_read"
    BEFORE_MODEL = "before_model"
    BEFORE_COMMIT = "before_commit"


class PolicyAction(StrEnum):
    PROCEED = "proceed"
    DENY = "deny"  # durable denial marker, then the range is skipped for ever
    UNAVAILABLE = "unavailable"  # transient: nothing read or sent, stays eligible


@dataclass(frozen=True, slots=True)
class PolicyVerdict:
    action: PolicyAction
    stage: PolicyStage
    reason: str | None = None

    @property
    def write_marker(self) -> bool:
        """A denial is made durable (marker) before the cursor skips anything."""
        return self.action is PolicyAction.DENY


def _denial_reason(flags: SessionFlags) -> str:
    for name in ("incognito", "memory_disabled", "archived", "subagent"):
        if getattr(flags, name):
            return name
    return "memory_denied"  # pragma: no cover - memory_denied implies one of the flags


def policy_decision(
    disposition_at_checkpoint: str | None, flags_now: SessionFlags | None, stage: PolicyStage
) -> PolicyVerdict:
    """The policy check of one stage. ``disposition_at_checkpoint`` is None for work with
    no checkpoint (remember, extract); ``flags_now`` None when they cannot be read now."""
    if disposition_at_checkpoint == POLICY_DENIED:
        return PolicyVerdict(PolicyAction.DENY, stage, "denied_at_checkpoint")
    if disposition_at_checkpoint not in (None, ELIGIBLE):
        return PolicyVerdict(PolicyAction.UNAVAILABLE, stage, "unknown_disposition")
    if flags_now is None:
        return PolicyVerdict(PolicyAction.UNAVAILABLE, stage, "policy_unavailable")
    if flags_now.memory_denied:
        return PolicyVerdict(PolicyAction.DENY, stage, _denial_reason(flags_now))
    return PolicyVerdict(PolicyAction.PROCEED, stage)


@dataclass(frozen=True, slots=True)
class DenialPlan:
    """What a denied range leads to: the marker is always written first; the cursor moves
    only when ``advance_to`` is set (and then a ``policy_denied`` receipt is written)."""

    write_marker: bool
    advance_to: int | None
    clear_pending: bool
    receipt: ReceiptOutcome | None


def on_denied(pending: PendingFailure | None, denied: Range) -> DenialPlan:
    """The settlement of a denied range given the session's pending failure."""
    if pending is None:
        return DenialPlan(True, denied.coverage_through, False, ReceiptOutcome.POLICY_DENIED)
    if pending.range.span == denied.span and not pending.trigger.explicit:
        return DenialPlan(True, denied.coverage_through, True, ReceiptOutcome.POLICY_DENIED)
    return DenialPlan(True, None, False, None)  # an explicit or an earlier pending stays


def skip_denied(cursor: int, markers: Iterable[Range]) -> int:
    """Where the cursor lands after skipping every denied range that starts at or before
    it and ends after it (markers chain: one ending where the next starts)."""
    ranges = sorted(markers, key=lambda r: r.after_cursor)
    moved = True
    while moved:
        moved = False
        for r in ranges:
            if r.after_cursor <= cursor < r.coverage_through:
                cursor, moved = r.coverage_through, True
    return cursor


@dataclass(frozen=True, slots=True)
class LaneOp:
    operation_id: str
    trigger: Trigger
    foreground: bool = False


def dedupe(ops: Iterable[LaneOp]) -> tuple[LaneOp, ...]:
    """Operations with the same id are one (the first occurrence keeps its place)."""
    seen: set[str] = set()
    out: list[LaneOp] = []
    for op in ops:
        if op.operation_id not in seen:
            seen.add(op.operation_id)
            out.append(op)
    return tuple(out)


def lane_order(
    queued: Sequence[LaneOp], running: LaneOp | None, foreground: LaneOp | None = None
) -> tuple[LaneOp, ...]:
    """The order to run queued work in once ``running`` is done: a foreground remember
    first (moved up if it was queued already), then the queue in arrival order; nothing
    twice, and nothing that is the running operation again."""
    busy = {running.operation_id} if running is not None else set()
    first = (foreground,) if foreground is not None else ()
    return tuple(op for op in dedupe((*first, *queued)) if op.operation_id not in busy)


def failure_class(exc: BaseException) -> str:
    """The failure class a pending failure records for an exception."""
    table: tuple[tuple[type[BaseException], str], ...] = (
        (MalformedProposal, "malformed_proposal"),
        (llm_errors.Truncated, "truncated"),
        (llm_errors.Refused, "refused"),
        (llm_errors.OutOfCredit, "budget"),
        (BudgetExhausted, "budget"),
        (llm_errors.AuthError, "auth"),
        (llm_errors.RateLimited, "rate_limited"),
        (llm_errors.Transient, "transient"),
        (llm_errors.ContextTooLong, "context_too_long"),
        (llm_errors.OutputBudgetRejected, "output_budget"),
        (llm_errors.EmptyResponse, "empty_response"),
        (llm_errors.BadResponse, "bad_response"),
        (llm_errors.ModelError, "model_error"),
    )
    return next((name for cls, name in table if isinstance(exc, cls)), "internal")


def precheck(
    slice_: EvidenceSlice, trigger: Trigger, requested_text: str | None = None
) -> str | None:
    """Why a range settles as a ``no_op`` before any model call (``no_user_text``,
    ``sensitive_information``), or None when the model is to be asked."""
    if not has_user_text(slice_):
        return "no_user_text"
    if trigger is Trigger.REMEMBER:
        return remember_precheck(requested_text)
    return None


def receipt_of(
    trigger: Trigger, status: ProposalStatus, validation: Validation | None
) -> tuple[ReceiptOutcome, str | None]:
    """The receipt (outcome, reason) of a range whose model run succeeded and whose
    validation did not fail it: items saved → remembered / extracted (reason
    ``request_not_applicable`` when only incidental ones were); none → not_applicable
    (reason ``all_items_rejected``, ``search_required`` or ``cannot_resolve``)."""
    accepted = validation.accepted if validation is not None else ()
    if accepted:
        done = (
            ReceiptOutcome.REMEMBERED if trigger is Trigger.REMEMBER else ReceiptOutcome.EXTRACTED
        )
        asked = trigger.requests_items and all(item.incidental for item in accepted)
        return done, "request_not_applicable" if asked else None
    if status is ProposalStatus.COMPLETE:
        return ReceiptOutcome.NOT_APPLICABLE, "all_items_rejected"
    if status is ProposalStatus.NOT_APPLICABLE:
        return ReceiptOutcome.NOT_APPLICABLE, None
    return ReceiptOutcome.NOT_APPLICABLE, status.value


NEAR_DUPLICATE = 0.95
_WORD = re.compile(r"[^\W_]+(?:'[^\W_]+)?", re.UNICODE)
_NEGATION = re.compile(r"\b(?:not|never|no|none|nobody|nothing|neither|nor|without)\b|n't\b")


@dataclass(frozen=True, slots=True)
class Candidate:
    id: str
    text: str
    vector: np.ndarray


def _content_words(text: str) -> list[str]:
    return [w for w in (m.casefold() for m in _WORD.findall(text)) if w not in STOPWORDS]


def same_claim(a: str, b: str) -> bool:
    """The word-order and negation guards of the module (not the vectors)."""
    if bool(_NEGATION.search(a.casefold())) != bool(_NEGATION.search(b.casefold())):
        return False
    wa, wb = _content_words(a), _content_words(b)
    shared = set(wa) & set(wb)
    order_a = [w for w in dict.fromkeys(wa) if w in shared]
    order_b = [w for w in dict.fromkeys(wb) if w in shared]
    return bool(shared) and order_a == order_b


def near_duplicate(text: str, vector: np.ndarray, candidates: Sequence[Candidate]) -> str | None:
    """The id of the most similar candidate that is a near-duplicate of ``text``, or None."""
    import numpy as np

    best: tuple[float, str] | None = None
    v = np.asarray(vector, dtype=np.float32).reshape(-1)
    for c in candidates:
        score = float(np.asarray(c.vector, dtype=np.float32).reshape(-1) @ v)
        near = score >= NEAR_DUPLICATE and same_claim(text, c.text)
        if near and (best is None or score > best[0]):
            best = (score, c.id)
    return best[1] if best is not None else None
