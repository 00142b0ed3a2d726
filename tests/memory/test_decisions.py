"""Decision tables: retry/discard, next work, policy, denial, lane, failure classes."""

from __future__ import annotations

from typing import Any

import pytest

from memoir.errors import BudgetExhausted
from memoir.llm import port as e
from memoir.memory import (
    EvidenceSlice,
    FailureAction,
    LaneOp,
    MalformedProposal,
    PendingFailure,
    PolicyAction,
    PolicyStage,
    Proposal,
    ProposalStatus,
    Range,
    ReceiptOutcome,
    Trigger,
    Work,
    after_failure,
    build_slice,
    failure_class,
    lane_order,
    next_work,
    on_denied,
    operation_id,
    policy_decision,
    precheck,
    receipt_of,
    skip_denied,
    split_anchor,
    validate_proposal,
)
from memoir.model import SessionFlags

from .helpers import SESSION, assistant, item, user

R1 = Range(0, 10, 12)
R2 = Range(10, 20, 20)


def _pending(
    trigger: Trigger = Trigger.COMPACTION,
    range_: Range = R1,
    anchor: str = "ck1",
    turn: int | None = None,
) -> PendingFailure:
    return PendingFailure(
        SESSION,
        range_,
        "hash",
        operation_id(SESSION, trigger, anchor),
        trigger,
        "transient",
        anchor,
        "ck1" if trigger is Trigger.COMPACTION else None,
        turn,
    )


def _work(
    trigger: Trigger = Trigger.COMPACTION, range_: Range | None = R1, anchor: str = "ck1", **kw: Any
) -> Work:
    return Work(SESSION, trigger, anchor, range_, **kw)


@pytest.mark.parametrize(
    ("pending", "work", "action", "advance", "receipt"),
    [
        (None, _work(), FailureAction.RECORD_PENDING, None, None),
        (_pending(), _work(), FailureAction.DISCARD, 10, ReceiptOutcome.DISCARDED),
        # the same span failing under a widened context is still the same range
        (
            _pending(),
            _work(range_=Range(0, 10, 15)),
            FailureAction.DISCARD,
            10,
            ReceiptOutcome.DISCARDED,
        ),
        (_pending(), _work(range_=R2, anchor="ck2"), FailureAction.KEEP_PENDING, None, None),
        (
            _pending(Trigger.REMEMBER, anchor="turn-9", turn=9),
            _work(Trigger.REMEMBER, anchor="turn-9", requested_turn=9),
            FailureAction.DISCARD,
            10,
            ReceiptOutcome.DISCARDED,
        ),
    ],
)
def test_after_failure(
    pending: PendingFailure | None,
    work: Work,
    action: FailureAction,
    advance: int | None,
    receipt: ReceiptOutcome | None,
) -> None:
    d = after_failure(pending, work, "hash2", "truncated")
    assert (d.action, d.advance_to, d.receipt) == (action, advance, receipt)
    if action is FailureAction.RECORD_PENDING:
        assert d.pending is not None
        assert (d.pending.range, d.pending.trigger, d.pending.failure_class) == (
            R1,
            Trigger.COMPACTION,
            "truncated",
        )
        assert d.pending.first_operation_id == work.operation_id
        assert d.pending.coverage_hash == "hash2"
    if action is FailureAction.DISCARD:
        assert pending is not None and d.pending is None
        assert d.receipt_operation == pending.first_operation_id
    if action is FailureAction.KEEP_PENDING:
        assert d.pending == pending


def test_after_failure_records_remember_turn_and_split_prefix_identity() -> None:
    prefix = _work(Trigger.INCIDENTAL, Range(0, 6, 6), split_anchor("ck1", 6), checkpoint_id="ck1")
    d = after_failure(None, prefix, "h", "refused")
    assert d.pending is not None
    assert d.pending.range == Range(0, 6, 6)  # its own boundary, not the checkpoint's
    assert d.pending.anchor == "ck1#split@6" and d.pending.checkpoint_id == "ck1"
    remember = _work(Trigger.REMEMBER, R1, "turn-9", requested_turn=9)
    recorded = after_failure(None, remember, "h", "auth").pending
    assert recorded is not None and recorded.requested_turn == 9


def test_after_failure_needs_a_range() -> None:
    with pytest.raises(ValueError):
        after_failure(None, _work(range_=None), "h", "x")


NEW = _work(range_=None, anchor="ck2")


@pytest.mark.parametrize(
    ("pending", "new", "expected"),
    [
        (None, None, []),
        (None, NEW, [("ck2", None, False)]),
        (_pending(), None, [("ck1", R1, True)]),  # a recovery run retries the pending
        (_pending(), NEW, [("ck1", R1, True), ("ck2", None, False)]),  # old first, not merged
        (_pending(), _work(range_=None), []),  # the failed operation again: not distinct
    ],
)
def test_next_work(
    pending: PendingFailure | None, new: Work | None, expected: list[tuple[str, Range | None, bool]]
) -> None:
    got = next_work(pending, new)
    assert [(w.anchor, w.range, w.retry) for w in got] == expected


def test_retry_rebuilds_the_original_identity() -> None:
    pending = _pending(Trigger.REMEMBER, anchor="turn-9", turn=9)
    (retry, new) = next_work(pending, NEW)
    assert retry.trigger is Trigger.REMEMBER and retry.requested_turn == 9
    assert retry.operation_id == pending.first_operation_id
    assert new.trigger is Trigger.COMPACTION and new.operation_id != retry.operation_id
    # a pending whose recorded id cannot be rebuilt from its anchor keeps the recorded id
    odd = PendingFailure(SESSION, R1, "h", "op_recorded", Trigger.EXTRACT, "x", "call-1")
    assert Work.retrying(odd).operation_id == "op_recorded"


OPEN = SessionFlags()
S = PolicyStage.BEFORE_MODEL


@pytest.mark.parametrize(
    ("disposition", "flags", "action", "reason"),
    [
        ("eligible", OPEN, PolicyAction.PROCEED, None),
        (None, OPEN, PolicyAction.PROCEED, None),
        ("policy_denied", OPEN, PolicyAction.DENY, "denied_at_checkpoint"),
        ("policy_denied", None, PolicyAction.DENY, "denied_at_checkpoint"),
        ("eligible", SessionFlags(incognito=True), PolicyAction.DENY, "incognito"),
        ("eligible", SessionFlags(memory_disabled=True), PolicyAction.DENY, "memory_disabled"),
        ("eligible", SessionFlags(archived=True), PolicyAction.DENY, "archived"),
        (None, SessionFlags(subagent=True), PolicyAction.DENY, "subagent"),
        ("eligible", None, PolicyAction.UNAVAILABLE, "policy_unavailable"),
        (None, None, PolicyAction.UNAVAILABLE, "policy_unavailable"),
        ("quarantined", OPEN, PolicyAction.UNAVAILABLE, "unknown_disposition"),
    ],
)
@pytest.mark.parametrize("stage", list(PolicyStage))
def test_policy_decision(
    disposition: str | None,
    flags: SessionFlags | None,
    action: PolicyAction,
    reason: str | None,
    stage: PolicyStage,
) -> None:
    verdict = policy_decision(disposition, flags, stage)
    assert (verdict.action, verdict.reason, verdict.stage) == (action, reason, stage)
    assert verdict.write_marker is (action is PolicyAction.DENY)


@pytest.mark.parametrize(
    ("pending", "denied", "advance", "clear", "receipt"),
    [
        (None, R1, 10, False, ReceiptOutcome.POLICY_DENIED),
        (_pending(Trigger.COMPACTION), R1, 10, True, ReceiptOutcome.POLICY_DENIED),
        (_pending(Trigger.INCIDENTAL), R1, 10, True, ReceiptOutcome.POLICY_DENIED),
        # never consumes an explicit pending failure
        (_pending(Trigger.REMEMBER, anchor="turn-9"), R1, None, False, None),
        (_pending(Trigger.EXTRACT, anchor="call-1"), R1, None, False, None),
        # a later denied range behind an older pending: marker only, no skip
        (_pending(Trigger.COMPACTION), R2, None, False, None),
        (_pending(Trigger.REMEMBER, anchor="turn-9"), R2, None, False, None),
    ],
)
def test_on_denied(
    pending: PendingFailure | None,
    denied: Range,
    advance: int | None,
    clear: bool,
    receipt: ReceiptOutcome | None,
) -> None:
    plan = on_denied(pending, denied)
    assert plan.write_marker  # always durable first
    assert (plan.advance_to, plan.clear_pending, plan.receipt) == (advance, clear, receipt)


@pytest.mark.parametrize(
    ("cursor", "markers", "landed"),
    [
        (0, [], 0),
        (0, [Range(0, 10, 10)], 10),
        (0, [Range(0, 10, 10), Range(10, 20, 20)], 20),  # chained
        (0, [Range(10, 20, 20), Range(0, 10, 10)], 20),  # any order
        (0, [Range(5, 10, 10)], 0),  # starts after the cursor: events 1..5 come first
        (7, [Range(5, 10, 10)], 10),
        (10, [Range(5, 10, 10)], 10),
    ],
)
def test_skip_denied(cursor: int, markers: list[Range], landed: int) -> None:
    assert skip_denied(cursor, markers) == landed


A, B, C = (LaneOp(f"op_{x}", Trigger.COMPACTION) for x in "abc")
REM = LaneOp("op_r", Trigger.REMEMBER, foreground=True)


@pytest.mark.parametrize(
    ("queued", "running", "foreground", "order"),
    [
        ([A, B], None, None, ["op_a", "op_b"]),
        ([A, B], C, REM, ["op_r", "op_a", "op_b"]),  # ahead of queued, after running
        ([A, REM, B], C, REM, ["op_r", "op_a", "op_b"]),  # moved up, not twice
        ([A, A, B, A], None, None, ["op_a", "op_b"]),  # duplicate dispatches are one
        ([A, B], A, None, ["op_b"]),  # the running operation is not queued again
        ([A], REM, REM, ["op_a"]),  # a remember already running is not run twice
    ],
)
def test_lane_order(
    queued: list[LaneOp], running: LaneOp | None, foreground: LaneOp | None, order: list[str]
) -> None:
    assert [op.operation_id for op in lane_order(queued, running, foreground)] == order


@pytest.mark.parametrize(
    ("exc", "name"),
    [
        (MalformedProposal("x"), "malformed_proposal"),
        (e.Truncated("x"), "truncated"),
        (e.Refused("x"), "refused"),
        (e.OutOfCredit("x"), "budget"),
        (BudgetExhausted("x"), "budget"),
        (e.Unauthorized("x"), "auth"),
        (e.Forbidden("x"), "auth"),
        (e.UnknownModel("x"), "auth"),
        (e.RateLimited("x"), "rate_limited"),
        (e.Transient("x"), "transient"),
        (e.ContextTooLong("x"), "context_too_long"),
        (e.OutputBudgetRejected("x"), "output_budget"),
        (e.EmptyResponse("x"), "empty_response"),
        (e.BadResponse("x"), "bad_response"),
        (e.ModelError("x"), "model_error"),
        (RuntimeError("x"), "internal"),
    ],
)
def test_failure_class(exc: BaseException, name: str) -> None:
    assert failure_class(exc) == name


ONLY_ASSISTANT = build_slice([assistant(1, "I prefer tabs.")], Range(0, 1, 1))
WITH_USER = build_slice([user(1, "I prefer tabs over spaces.")], Range(0, 1, 1))


@pytest.mark.parametrize(
    ("slice_", "trigger", "text", "reason"),
    [
        (ONLY_ASSISTANT, Trigger.COMPACTION, None, "no_user_text"),
        (ONLY_ASSISTANT, Trigger.REMEMBER, "I prefer tabs.", "no_user_text"),
        (WITH_USER, Trigger.COMPACTION, None, None),
        (WITH_USER, Trigger.REMEMBER, "I prefer tabs over spaces.", None),
        (WITH_USER, Trigger.REMEMBER, "remember AKIAIOSFODNN7EXAMPLE", "sensitive_information"),
        (WITH_USER, Trigger.EXTRACT, "AKIAIOSFODNN7EXAMPLE", None),  # only a remember no-ops
    ],
)
def test_precheck(
    slice_: EvidenceSlice, trigger: Trigger, text: str | None, reason: str | None
) -> None:
    assert precheck(slice_, trigger, text) == reason


def test_outcome_of() -> None:
    good = item(quotes=((1, "I prefer tabs"),))
    done = validate_proposal(
        Proposal(ProposalStatus.COMPLETE, (good,)), WITH_USER, Trigger.REMEMBER
    )
    side = validate_proposal(
        Proposal(ProposalStatus.NOT_APPLICABLE, (), (good,)), WITH_USER, Trigger.REMEMBER
    )
    bad = validate_proposal(
        Proposal(ProposalStatus.COMPLETE, (item(quotes=((1, "nope nope"),)),)),
        WITH_USER,
        Trigger.COMPACTION,
    )
    table = [
        ((Trigger.REMEMBER, ProposalStatus.COMPLETE, done), (ReceiptOutcome.REMEMBERED, None)),
        ((Trigger.EXTRACT, ProposalStatus.COMPLETE, done), (ReceiptOutcome.EXTRACTED, None)),
        (
            (Trigger.REMEMBER, ProposalStatus.NOT_APPLICABLE, side),
            (ReceiptOutcome.REMEMBERED, "request_not_applicable"),
        ),
        (
            (Trigger.COMPACTION, ProposalStatus.COMPLETE, bad),
            (ReceiptOutcome.NOT_APPLICABLE, "all_items_rejected"),
        ),
        (
            (Trigger.COMPACTION, ProposalStatus.NOT_APPLICABLE, None),
            (ReceiptOutcome.NOT_APPLICABLE, None),
        ),
        (
            (Trigger.REMEMBER, ProposalStatus.CANNOT_RESOLVE, None),
            (ReceiptOutcome.NOT_APPLICABLE, "cannot_resolve"),
        ),
        (
            (Trigger.REMEMBER, ProposalStatus.SEARCH_REQUIRED, None),
            (ReceiptOutcome.NOT_APPLICABLE, "search_required"),
        ),
    ]
    for args, expected in table:
        assert receipt_of(*args) == expected, args
