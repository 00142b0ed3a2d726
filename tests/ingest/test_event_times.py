"""The time an event without one takes (issue 34, point 7): the nearest known event time
before it, else after it, else the fallback — a decision table, and what marking and
batching add to it."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from hypothesis import given
from hypothesis import strategies as st

from memoir.ingest.discover import Format
from memoir.ingest.plan import KNOWN_AT, known_before, with_times
from memoir.ingest.reader import ReadResult
from memoir.model import Author, Event, EventKind
from memoir.model.event import fill_times, infer_times, time_of_ns


def at(hour: int) -> datetime:
    return datetime(2025, 3, 10, hour, tzinfo=UTC)


A, B, C, BEFORE, FALLBACK = at(8), at(9), at(10), at(6), at(23)
_ = None  # an event with no time of its own


@pytest.mark.parametrize(
    ("times", "before", "expected"),
    [
        # nothing to fill
        ([], None, []),
        ([A, B], None, [A, B]),
        ([A, B], BEFORE, [A, B]),
        # the previous known time wins over the next one
        ([A, _, B], None, [A, A, B]),
        ([A, _, _, B], None, [A, A, A, B]),
        ([A, _, B, _, C], None, [A, A, B, B, C]),
        # at the end: the previous one
        ([A, _], None, [A, A]),
        ([A, B, _, _], None, [A, B, B, B]),
        # at the start: the next one, unless a time came before the events
        ([_, A], None, [A, A]),
        ([_, _, A, _], None, [A, A, A, A]),
        ([_, A], BEFORE, [BEFORE, A]),
        ([_, _], BEFORE, [BEFORE, BEFORE]),
        # no known time anywhere: the fallback
        ([_], None, [FALLBACK]),
        ([_, _, _], None, [FALLBACK, FALLBACK, FALLBACK]),
        # times out of order are kept as the source gave them; the neighbour rule holds
        ([C, _, A], None, [C, C, A]),
    ],
)
def test_fill_times(
    times: list[datetime | None], before: datetime | None, expected: list[datetime]
) -> None:
    assert fill_times(times, before=before, fallback=FALLBACK) == expected


def ev(n: int, when: datetime | None, *, inferred: bool = False) -> Event:
    return Event("s", n, EventKind.USER_TEXT, Author.USER, f"m{n}", when, time_inferred=inferred)


def test_infer_times_marks_only_what_it_filled() -> None:
    out = infer_times([ev(1, A), ev(2, None), ev(3, B)], before=None, fallback=FALLBACK)
    assert [(e.timestamp, e.time_inferred) for e in out] == [(A, False), (A, True), (B, False)]
    assert [e.text for e in out] == ["m1", "m2", "m3"]


def test_an_inferred_time_is_no_anchor_for_another_event() -> None:
    """An event inferred before (the carried open exchange) keeps its time, but the event
    after it takes the next known time, not the guess."""
    out = infer_times(
        [ev(1, C, inferred=True), ev(2, None), ev(3, B)], before=None, fallback=FALLBACK
    )
    assert [(e.timestamp, e.time_inferred) for e in out] == [(C, True), (B, True), (B, False)]


def test_events_that_all_have_times_come_back_unchanged() -> None:
    events = [ev(1, A), ev(2, B)]
    assert infer_times(events, before=None, fallback=FALLBACK) == events


def _result(events: list[Event], state: dict[str, object], *, more: bool) -> ReadResult:
    return ReadResult(tuple(events), (), 100, 4, state, 4, more)


class _Ahead:
    def __init__(self, found: datetime | None) -> None:
        self.found, self.asked = found, 0

    def __call__(self, after: ReadResult) -> datetime | None:
        self.asked += 1
        return self.found


MTIME_NS = int(at(22).timestamp() * 1e9)


@pytest.mark.parametrize(
    ("state_before", "times", "more", "ahead", "expected", "asked", "known_after"),
    [
        # the last known time of the earlier batches comes first
        ({KNOWN_AT: A.isoformat()}, [_, B], False, None, [A, B], 0, B),
        ({KNOWN_AT: A.isoformat()}, [_, _], True, C, [A, A], 0, A),
        # a state saved before KNOWN_AT was kept: the reader's last time
        ({"last_at": A.isoformat()}, [_], False, None, [A], 0, A),
        # KNOWN_AT None (no event time yet) is not the reader's last_at
        ({KNOWN_AT: None, "last_at": A.isoformat()}, [_], False, None, [at(22)], 0, None),
        # nothing known before, nothing in the batch, more to read: the first time ahead
        ({}, [_, _], True, C, [C, C], 1, None),
        ({}, [_, _], True, None, [at(22), at(22)], 1, None),
        # ... but the last batch takes the file's mtime without looking
        ({}, [_, _], False, C, [at(22), at(22)], 0, None),
        # a known time in the batch: no need to look ahead
        ({}, [_, B, _], True, C, [B, B, B], 0, B),
    ],
)
def test_with_times_carries_times_across_batches(
    state_before: dict[str, object],
    times: list[datetime | None],
    more: bool,
    ahead: datetime | None,
    expected: list[datetime],
    asked: int,
    known_after: datetime | None,
) -> None:
    look = _Ahead(ahead)
    events = [ev(n, t) for n, t in enumerate(times, start=1)]
    result = with_times(
        _result(events, {"format": Format.CLAUDE.value}, more=more),
        state_before,
        mtime_ns=MTIME_NS,
        ahead=look,  # type: ignore[arg-type]
    )
    assert [e.timestamp for e in result.events] == expected
    assert [e.time_inferred for e in result.events] == [t is None for t in times]
    assert look.asked == asked
    assert known_before(result.state) == known_after
    assert result.state["format"] == Format.CLAUDE.value  # the reader's state kept


_HOURS = st.lists(st.one_of(st.none(), st.integers(min_value=0, max_value=22)), max_size=30)


@given(hours=_HOURS, before=st.one_of(st.none(), st.integers(min_value=0, max_value=22)))
def test_fill_times_takes_the_nearest_known_time(
    hours: list[int | None], before: int | None
) -> None:
    times = [None if h is None else at(h) for h in hours]
    start = None if before is None else at(before)
    out = fill_times(times, before=start, fallback=FALLBACK)
    assert len(out) == len(times)
    for n, (own, got) in enumerate(zip(times, out, strict=True)):
        if own is not None:
            assert got == own
            continue
        earlier = [t for t in times[:n] if t is not None]
        later = [t for t in times[n + 1 :] if t is not None]
        if earlier:
            assert got == earlier[-1]
        elif start is not None:
            assert got == start
        elif later:
            assert got == later[0]
        else:
            assert got == FALLBACK


@pytest.mark.parametrize(
    ("ns", "expected"),
    [
        (0, datetime(1970, 1, 1, tzinfo=UTC)),
        (999, datetime(1970, 1, 1, tzinfo=UTC)),
        (1_000, datetime(1970, 1, 1, microsecond=1, tzinfo=UTC)),
        # the CI failure: through a float this lands on ...492
        (1_796_515_032_567_491_943, datetime(2026, 12, 5, 23, 57, 12, 567_491, tzinfo=UTC)),
        (1_796_515_032_999_999_999, datetime(2026, 12, 5, 23, 57, 12, 999_999, tzinfo=UTC)),
    ],
)
def test_time_of_ns_cuts_to_the_microsecond_exactly(ns: int, expected: datetime) -> None:
    assert time_of_ns(ns) == expected


@given(st.integers(min_value=0, max_value=4_000_000_000 * 10**9))
def test_time_of_ns_never_rounds_up(ns: int) -> None:
    got = time_of_ns(ns)
    back = (got - datetime(1970, 1, 1, tzinfo=UTC)) // timedelta(microseconds=1)
    assert back == ns // 1000
