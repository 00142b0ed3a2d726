"""The decision table, the quiescence gate and the shared failure policy (pure)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from hypothesis import given
from hypothesis import strategies as st

from memoir.summaries.state import (
    Coverage,
    Failure,
    SummaryAction,
    SummaryKind,
    SummaryPolicy,
    SummaryState,
    decide,
    is_quiescent,
    queue_rank,
    should_retry_after_failure,
)

HOUR = 3_600_000
NOW = 1_800_000_000_000
POLICY = SummaryPolicy(quiescence_ms=HOUR, retry_floor_ms=HOUR, max_attempts=5)


def real(covered: int, failure: Failure | None = None) -> SummaryState:
    return SummaryState(SummaryKind.REAL, body="b", coverage=Coverage(covered), failure=failure)


# Every row of the decision table: (state, current size, expected action).
TABLE = [
    ("missing", SummaryState.missing(), 100, SummaryAction.SUMMARIZE),
    ("empty: skip forever", SummaryState.empty(), 10**9, SummaryAction.SKIP_EMPTY),
    ("errored at max", SummaryState.errored(5, NOW), 100, SummaryAction.GIVE_UP),
    ("errored beyond max", SummaryState.errored(9, 0), 100, SummaryAction.GIVE_UP),
    ("errored floor elapsed", SummaryState.errored(2, NOW - HOUR), 100, SummaryAction.RETRY),
    (
        "errored floor not elapsed",
        SummaryState.errored(2, NOW - HOUR + 1),
        100,
        SummaryAction.BACKOFF,
    ),
    ("errored legacy {0, ts}", SummaryState.errored(0, NOW - 10), 100, SummaryAction.BACKOFF),
    ("errored unrecognised {0,0}", SummaryState.errored(0, 0), 100, SummaryAction.RETRY),
    (
        "legacy header-less",
        SummaryState(SummaryKind.LEGACY, body="x"),
        100,
        SummaryAction.STAMP_BASELINE,
    ),
    ("real, no growth", real(100), 100, SummaryAction.CURRENT),
    ("real, shrunk", real(100), 50, SummaryAction.CURRENT),
    ("real, grown", real(100), 101, SummaryAction.RESUMMARIZE),
    (
        "real, grown, floor elapsed",
        real(100, Failure(1, NOW - HOUR)),
        200,
        SummaryAction.RETRY_RESUMMARY,
    ),
    ("real, grown, floor not elapsed", real(100, Failure(1, NOW - 1)), 200, SummaryAction.BACKOFF),
    ("real, grown, at max", real(100, Failure(5, 0)), 200, SummaryAction.GIVE_UP),
    ("real, at max, no growth", real(100, Failure(5, 0)), 100, SummaryAction.GIVE_UP),
    ("real, failure state, no growth", real(100, Failure(1, NOW)), 100, SummaryAction.CURRENT),
]


@pytest.mark.parametrize(("name", "state", "current", "expected"), TABLE, ids=[r[0] for r in TABLE])
def test_decision_table(
    name: str, state: SummaryState, current: int, expected: SummaryAction
) -> None:
    assert decide(state, current, POLICY, NOW) is expected


@given(
    attempts=st.integers(5, 100),
    covered=st.integers(0, 10**12),
    growth=st.integers(0, 10**12),
    last=st.integers(0, NOW),
    later=st.integers(0, 10**12),
)
def test_giving_up_is_permanent(
    attempts: int, covered: int, growth: int, last: int, later: int
) -> None:
    """At max attempts nothing — growth, time — brings a conversation back."""
    assert (
        decide(real(covered, Failure(attempts, last)), covered + growth, POLICY, NOW + later)
        is SummaryAction.GIVE_UP
    )
    assert (
        decide(SummaryState.errored(attempts, last), covered, POLICY, NOW + later)
        is SummaryAction.GIVE_UP
    )


@pytest.mark.parametrize(
    ("failure", "expected"),
    [
        (Failure(0, 0), SummaryAction.RETRY),
        (Failure(4, NOW - HOUR), SummaryAction.RETRY),
        (Failure(4, NOW - HOUR + 1), SummaryAction.BACKOFF),
        (Failure(5, NOW - 10 * HOUR), SummaryAction.GIVE_UP),
        (Failure(1, NOW + HOUR), SummaryAction.BACKOFF),  # clock skew: a future attempt waits
    ],
)
def test_shared_failure_policy(failure: Failure, expected: SummaryAction) -> None:
    assert should_retry_after_failure(failure, POLICY, NOW) is expected


def test_policy_cap_and_floor_come_from_settings(settings) -> None:
    from dataclasses import replace

    tuned = replace(
        settings, summary_error_retry_hours=0.5, summary_max_attempts=2, summary_quiescence_hours=0
    )
    policy = SummaryPolicy.from_settings(tuned)
    assert policy == SummaryPolicy(quiescence_ms=0, retry_floor_ms=1_800_000, max_attempts=2)
    assert decide(SummaryState.errored(2, 0), 1, policy, NOW) is SummaryAction.GIVE_UP


NOW_DT = datetime.fromtimestamp(NOW / 1000, tz=UTC)


@pytest.mark.parametrize(
    ("last", "quiescence", "expected"),
    [
        (None, HOUR, True),  # missing timestamp: idle
        (NOW_DT - timedelta(hours=1), HOUR, True),
        (NOW_DT - timedelta(minutes=59), HOUR, False),
        (NOW_DT, 0, True),  # window 0: summarize at once
        (NOW_DT + timedelta(minutes=5), HOUR, False),  # future timestamp: not idle
        (NOW_DT + timedelta(hours=23), HOUR, False),  # a skewed clock still waits
        (NOW_DT + timedelta(days=2), HOUR, True),  # further ahead is bogus: never blocks
        (datetime(2099, 1, 1, tzinfo=UTC), HOUR, True),
        (datetime(2025, 9, 19, 17, 36, tzinfo=UTC), HOUR, True),
    ],
)
def test_quiescence(last: datetime | None, quiescence: int, expected: bool) -> None:
    policy = SummaryPolicy(quiescence_ms=quiescence)
    assert is_quiescent(last, policy, NOW) is expected


def test_queue_order_is_fresh_before_retries() -> None:
    items = [
        (SummaryAction.RETRY_RESUMMARY, real(1, Failure(1, 5))),
        (SummaryAction.RESUMMARIZE, real(1)),
        (SummaryAction.RETRY, SummaryState.errored(1, 7)),
        (SummaryAction.RETRY, SummaryState.errored(1, 3)),
        (SummaryAction.SUMMARIZE, SummaryState.missing()),
    ]
    ordered = sorted(items, key=lambda i: queue_rank(*i))
    assert [a for a, _ in ordered] == [
        SummaryAction.SUMMARIZE,
        SummaryAction.RETRY,
        SummaryAction.RETRY,
        SummaryAction.RESUMMARIZE,
        SummaryAction.RETRY_RESUMMARY,
    ]
    assert [s.failure.last_attempt_ms for a, s in ordered if a is SummaryAction.RETRY] == [3, 7]


def test_only_summary_actions_call_the_model() -> None:
    assert {a for a in SummaryAction if a.calls_model} == {
        SummaryAction.SUMMARIZE,
        SummaryAction.RETRY,
        SummaryAction.RESUMMARIZE,
        SummaryAction.RETRY_RESUMMARY,
    }
