"""Values: range arithmetic, temporal checks, proposal shapes, operation ids."""

from __future__ import annotations

from datetime import date

import pytest

from memoir.memory import (
    MalformedProposal,
    Proposal,
    ProposalStatus,
    ProposedItem,
    Range,
    Temporal,
    TemporalType,
    Trigger,
    operation_id,
    split_anchor,
)

from .helpers import item

D1, D2 = date(2024, 5, 1), date(2024, 6, 1)


@pytest.mark.parametrize(
    ("after", "through", "context", "ok"),
    [
        (0, 0, 0, True),
        (0, 5, 5, True),
        (3, 5, 9, True),
        (5, 4, 9, False),
        (0, 5, 4, False),
        (-1, 2, 2, False),
    ],
)
def test_range_bounds(after: int, through: int, context: int, ok: bool) -> None:
    if ok:
        Range(after, through, context)
    else:
        with pytest.raises(ValueError):
            Range(after, through, context)


@pytest.mark.parametrize(
    ("ordinal", "covers", "context_only", "reads"),
    [
        (3, False, False, False),
        (4, True, False, True),
        (6, True, False, True),
        (7, False, True, True),
        (9, False, True, True),
        (10, False, False, False),
    ],
)
def test_range_membership(ordinal: int, covers: bool, context_only: bool, reads: bool) -> None:
    r = Range(3, 6, 9)
    assert (r.covers(ordinal), r.context_only(ordinal), r.reads(ordinal)) == (
        covers,
        context_only,
        reads,
    )
    assert r.span == (3, 6)


@pytest.mark.parametrize(
    ("temporal", "problem"),
    [
        (Temporal(), None),
        (Temporal(TemporalType.UNDATED, D1), "undated_with_dates"),
        (Temporal(TemporalType.POINT, D1), None),
        (Temporal(TemporalType.POINT), "point_needs_start_only"),
        (Temporal(TemporalType.POINT, D1, D2), "point_needs_start_only"),
        (Temporal(TemporalType.INTERVAL, D1, D2), None),
        (Temporal(TemporalType.INTERVAL, D1, D1), None),
        (Temporal(TemporalType.INTERVAL, D2, D1), "interval_start_after_end"),
        (Temporal(TemporalType.INTERVAL, D1), "interval_needs_start_and_end"),
        (Temporal(TemporalType.OPEN_ENDED, D1), None),
        (Temporal(TemporalType.OPEN_ENDED, None, D2), None),
        (Temporal(TemporalType.OPEN_ENDED), "open_ended_needs_one_date"),
        (Temporal(TemporalType.OPEN_ENDED, D1, D2), "open_ended_needs_one_date"),
    ],
)
def test_temporal_problem(temporal: Temporal, problem: str | None) -> None:
    assert temporal.problem() == problem


ONE = (item(),)


@pytest.mark.parametrize(
    ("status", "items", "incidental", "terms", "ok"),
    [
        (ProposalStatus.COMPLETE, ONE, (), (), True),
        (ProposalStatus.COMPLETE, (), (), (), False),
        (ProposalStatus.COMPLETE, ONE * 32, (), (), True),
        (ProposalStatus.COMPLETE, ONE * 33, (), (), False),
        (ProposalStatus.COMPLETE, ONE, ONE * 10, (), True),
        (ProposalStatus.COMPLETE, ONE, ONE * 11, (), False),
        (ProposalStatus.COMPLETE, ONE, (), ("x",), False),
        (ProposalStatus.NOT_APPLICABLE, (), (), (), True),
        (ProposalStatus.NOT_APPLICABLE, (), ONE * 10, (), True),
        (ProposalStatus.NOT_APPLICABLE, ONE, (), (), False),
        (ProposalStatus.SEARCH_REQUIRED, (), (), ("plan",), True),
        (ProposalStatus.SEARCH_REQUIRED, (), (), ("t",) * 8, True),
        (ProposalStatus.SEARCH_REQUIRED, (), (), ("t",) * 9, False),
        (ProposalStatus.SEARCH_REQUIRED, (), (), (), False),
        (ProposalStatus.SEARCH_REQUIRED, (), (), ("  ",), False),
        (ProposalStatus.SEARCH_REQUIRED, (), (), ("x" * 201,), False),
        (ProposalStatus.SEARCH_REQUIRED, ONE, (), ("plan",), False),
        (ProposalStatus.CANNOT_RESOLVE, (), (), (), True),
        (ProposalStatus.CANNOT_RESOLVE, (), ONE, (), False),
    ],
)
def test_proposal_shape(
    status: ProposalStatus,
    items: tuple[ProposedItem, ...],
    incidental: tuple[ProposedItem, ...],
    terms: tuple[str, ...],
    ok: bool,
) -> None:
    if ok:
        Proposal(status, items, incidental, terms)
    else:
        with pytest.raises(MalformedProposal):
            Proposal(status, items, incidental, terms)


def test_operation_id_is_stable_and_distinct() -> None:
    a = operation_id("s1", Trigger.COMPACTION, "ck1")
    assert a == operation_id("s1", "compaction", "ck1")  # replay: same id
    assert a.startswith("op_") and len(a) == 35
    others = {
        operation_id("s2", Trigger.COMPACTION, "ck1"),
        operation_id("s1", Trigger.REMEMBER, "ck1"),
        operation_id("s1", Trigger.COMPACTION, "ck2"),
        operation_id("s1", Trigger.INCIDENTAL, split_anchor("ck1", 40)),
    }
    assert a not in others and len(others) == 4


@pytest.mark.parametrize(
    ("trigger", "requests"),
    [
        (Trigger.REMEMBER, True),
        (Trigger.EXTRACT, True),
        (Trigger.COMPACTION, False),
        (Trigger.INCIDENTAL, False),
    ],
)
def test_which_triggers_request_items(trigger: Trigger, requests: bool) -> None:
    assert trigger.requests_items is requests
    assert trigger.explicit is requests
