"""The envelope: whole-request preflight, the one split, localization, the call budget."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from memoir.llm import MESSAGE_OVERHEAD, REPLY_PRIMING, TiktokenCounter
from memoir.memory import (
    MAX_MODEL_CALLS,
    Boundary,
    CallStep,
    Envelope,
    PriorSummary,
    ProposalStatus,
    Range,
    Trigger,
    build_slice,
    choose_boundary,
    localization_window,
    may_call,
    next_call,
    preflight,
    safe_summary,
    split_range,
)
from memoir.memory.prompt import SYSTEM_PROMPT
from memoir.model import Event

from .helpers import SESSION, assistant, turn, user

COUNTER = TiktokenCounter("cl100k_base")


def _envelope(events: list[Event], range_: Range, **kw: Any) -> Envelope:
    kw.setdefault("trigger", Trigger.COMPACTION)
    kw.setdefault("anchor", "ck1")
    return Envelope(SESSION, slice=build_slice(events, range_), **kw)


def _chat(n: int, words: int = 40) -> list[Event]:
    events = []
    for i in range(n):
        body = " ".join(f"word{i}x{j}" for j in range(words))
        events.append(user(2 * i + 1, f"I prefer option {i}. {body}"))
        events.append(assistant(2 * i + 2, f"Fine, option {i}. {body}"))
    return events


def test_preflight_counts_the_whole_request_exactly() -> None:
    events = [user(1, "I prefer tabs over spaces."), assistant(2, "Noted.")]
    env = _envelope(events, Range(0, 2, 2), summary="Earlier: the user set up the repo.")
    request = env.request(700)
    expected = (
        REPLY_PRIMING
        + MESSAGE_OVERHEAD
        + COUNTER.count(SYSTEM_PROMPT)
        + MESSAGE_OVERHEAD
        + COUNTER.count(request.messages[0].content)
    )
    p = preflight(env, window=100_000, output_reserve=700, counter=COUNTER)
    assert p.input_tokens == expected
    assert p.total == expected + 700
    # the summary is part of the request: its tokens are counted
    bare = preflight(_envelope(events, Range(0, 2, 2)), 100_000, 700, COUNTER)
    assert p.input_tokens > bare.input_tokens
    assert request.system == SYSTEM_PROMPT and request.json and request.max_tokens == 700


@pytest.mark.parametrize(("slack", "fits"), [(0, True), (-1, False)])
def test_preflight_window_edge(slack: int, fits: bool) -> None:
    env = _envelope([user(1, "I prefer tabs.")], Range(0, 1, 1))
    total = preflight(env, 10**6, 300, COUNTER).total
    assert preflight(env, total + slack, 300, COUNTER).fits is fits


def _additive(sizes: dict[int, int]) -> tuple[Callable[[int], int], Callable[[int], int]]:
    """Prefix/suffix sizes of a cut after ordinal c, from per-event sizes, plus 10 overhead."""

    def prefix(c: int) -> int:
        return 10 + sum(v for o, v in sizes.items() if o <= c)

    def suffix(c: int) -> int:
        return 10 + sum(v for o, v in sizes.items() if o > c)

    return prefix, suffix


@pytest.mark.parametrize(
    ("sizes", "turn_cuts", "event_cuts", "limit", "expected"),
    [
        # four equal events, turn cuts everywhere: the even cut
        ({1: 10, 2: 10, 3: 10, 4: 10}, [1, 2, 3], [1, 2, 3], 35, Boundary(2, "turn")),
        # only one turn cut, and both parts fit there
        ({1: 10, 2: 10, 3: 10, 4: 10}, [1], [1, 2, 3], 45, Boundary(1, "turn")),
        # the turn cut leaves a part too big: fall back to an event cut
        ({1: 10, 2: 10, 3: 10, 4: 10}, [1], [1, 2, 3], 35, Boundary(2, "event")),
        # no cut gives two fitting parts
        ({1: 10, 2: 40, 3: 10}, [1, 2], [1, 2], 45, None),
        # one huge event: nothing fits
        ({1: 100}, [], [], 50, None),
        # uneven: the cut whose larger part is smallest
        ({1: 30, 2: 5, 3: 5, 4: 5, 5: 30}, [1, 2, 3, 4], [1, 2, 3, 4], 60, Boundary(2, "turn")),
        # ties go to the earlier cut
        ({1: 10, 2: 10, 3: 10}, [1, 2], [1, 2], 40, Boundary(1, "turn")),
    ],
)
def test_choose_boundary(
    sizes: dict[int, int],
    turn_cuts: list[int],
    event_cuts: list[int],
    limit: int,
    expected: Boundary | None,
) -> None:
    prefix, suffix = _additive(sizes)
    assert choose_boundary(turn_cuts, event_cuts, prefix, suffix, limit) == expected


def test_choose_boundary_uses_few_size_evaluations() -> None:
    sizes = {o: 10 for o in range(1, 1001)}
    calls: list[int] = []
    prefix, suffix = _additive(sizes)

    def counted(fn: Callable[[int], int]) -> Callable[[int], int]:
        def call(c: int) -> int:
            calls.append(c)
            return fn(c)

        return call

    cut = choose_boundary(list(range(1, 1000)), [], counted(prefix), counted(suffix), 6000)
    assert cut == Boundary(500, "turn")
    assert len(calls) < 80  # bisection, not a scan of 999 cuts


def test_split_range_two_fitting_parts() -> None:
    events = _chat(12)
    env = _envelope(events, Range(0, 24, 24))
    whole = preflight(env, 10**6, 500, COUNTER).total
    window = whole * 2 // 3
    assert not preflight(env, window, 500, COUNTER).fits
    split = split_range(env, window, 500, COUNTER)
    assert split is not None
    first, second = split.first, split.second
    assert split.boundary.kind == "turn"
    assert first.range.after_cursor == 0 and first.range.coverage_through == split.boundary.ordinal
    assert second.range.after_cursor == split.boundary.ordinal
    assert second.range.coverage_through == 24
    assert first.trigger is Trigger.INCIDENTAL and second.trigger is Trigger.COMPACTION
    assert first.operation_id != second.operation_id == env.operation_id
    assert all(p.fits for p in split.preflights)
    assert (
        preflight(first, window, 500, COUNTER).fits and preflight(second, window, 500, COUNTER).fits
    )
    # nothing lost, nothing twice
    ordinals = [t.ordinal for t in first.slice.turns] + [t.ordinal for t in second.slice.turns]
    assert ordinals == [t.ordinal for t in env.slice.turns]
    # a turn cut: the second part opens with a user event
    assert second.slice.turns[0].role == "user"


def test_split_keeps_remember_turn_in_the_second_part() -> None:
    env = _envelope(
        _chat(12),
        Range(0, 24, 24),
        trigger=Trigger.REMEMBER,
        anchor="turn-23",
        requested_turn=23,
    )
    window = preflight(env, 10**6, 500, COUNTER).total * 2 // 3
    split = split_range(env, window, 500, COUNTER)
    assert split is not None
    assert split.second.trigger is Trigger.REMEMBER and split.second.requested_turn == 23
    assert split.second.range.covers(23) and not split.first.range.covers(23)
    assert split.first.trigger is Trigger.INCIDENTAL and split.first.requested_turn is None


def test_no_split_may_leave_the_remember_turn_in_the_first_part() -> None:
    # the turn is early: every cut before it leaves a second part too big
    env = _envelope(
        _chat(12), Range(0, 24, 24), trigger=Trigger.REMEMBER, anchor="turn-5", requested_turn=5
    )
    window = preflight(env, 10**6, 500, COUNTER).total * 2 // 3
    assert split_range(env, window, 500, COUNTER) is None
    compaction = _envelope(_chat(12), Range(0, 24, 24))
    assert split_range(compaction, window, 500, COUNTER) is not None  # the same range splits


def test_split_range_returns_none_when_two_parts_cannot_fit() -> None:
    env = _envelope(_chat(6), Range(0, 12, 12))
    window = preflight(env, 10**6, 500, COUNTER).total // 3
    assert split_range(env, window, 500, COUNTER) is None


def test_split_prefix_has_no_retained_tail_and_suffix_keeps_it() -> None:
    events = _chat(8)
    env = _envelope(events, Range(0, 14, 16))
    window = preflight(env, 10**6, 500, COUNTER).total * 2 // 3
    split = split_range(env, window, 500, COUNTER)
    assert split is not None
    assert split.first.range.context_through == split.first.range.coverage_through
    assert split.second.range.context_through == 16
    assert not any(t.citable for t in split.second.slice.turns if t.ordinal > 14)


def test_tokens_sent_do_not_grow_with_session_length() -> None:
    """The 10th extraction of a long session sends no more than the 1st: the envelope
    holds the range, never the history prefix."""
    events = _chat(100)
    sizes = []
    for k in range(10):
        after = 20 * k
        r = Range(after, after + 20, after + 20)
        sizes.append(preflight(_envelope(events, r), 10**6, 500, COUNTER).input_tokens)
    assert sizes[9] <= sizes[0] * 1.05


@pytest.mark.parametrize(
    ("candidates", "denied", "expected"),
    [
        ([PriorSummary("a", 10, "s10"), PriorSummary("b", 20, "s20")], [], "b"),
        (
            [PriorSummary("a", 10, "s10"), PriorSummary("b", 40, "s40")],
            [],
            "a",
        ),  # after the range start
        ([PriorSummary("a", 10, "s10", eligible=False)], [], None),
        ([PriorSummary("a", 10, "  ")], [], None),
        # a denied range before the summary's watermark: the summary barrier
        ([PriorSummary("a", 10, "s10"), PriorSummary("b", 20, "s20")], [Range(12, 15, 15)], "a"),
        ([PriorSummary("a", 10, "s10")], [Range(5, 8, 8)], None),
        ([PriorSummary("a", 10, "s10")], [Range(10, 15, 15)], "a"),  # denied after it
    ],
)
def test_safe_summary(
    candidates: list[PriorSummary], denied: list[Range], expected: str | None
) -> None:
    chosen = safe_summary(candidates, before=30, denied=denied)
    assert (chosen.checkpoint_id if chosen else None) == expected


@pytest.mark.parametrize(
    ("n", "chars", "denied", "expected"),
    [
        (3, 10, [], [7, 8, 9]),
        (10, 10, [], [3, 4, 5, 6, 7, 8, 9]),  # at most 7 turns
        (10, 3000, [], [6, 7, 8, 9]),  # at most 12,000 characters
        (10, 12_001, [], []),
        (10, 10, [Range(4, 6, 6)], [7, 8, 9]),  # never across a denied range
        (10, 10, [Range(4, 5, 6)], [7, 8, 9]),  # its retained tail included
        (10, 10, [Range(12, 14, 14)], [3, 4, 5, 6, 7, 8, 9]),  # a later denial is no barrier
    ],
)
def test_localization_window(n: int, chars: int, denied: list[Range], expected: list[int]) -> None:
    candidates = [turn(o, "x" * chars) for o in range(10 - n, 10)]
    candidates += [turn(10, "in range"), turn(11, "in range")]  # not before the range
    window = localization_window(candidates, before=10, denied=denied)
    assert [t.ordinal for t in window] == expected
    assert not any(t.citable for t in window)


@pytest.mark.parametrize(
    ("calls", "last", "localized", "canonicalize", "canonicalized", "step"),
    [
        (0, None, False, False, False, CallStep.PROPOSE),
        (1, ProposalStatus.COMPLETE, False, False, False, CallStep.STOP),
        (1, ProposalStatus.COMPLETE, False, True, False, CallStep.CANONICALIZE),
        (2, ProposalStatus.COMPLETE, False, True, True, CallStep.STOP),
        (1, ProposalStatus.NOT_APPLICABLE, False, True, False, CallStep.STOP),
        (1, ProposalStatus.SEARCH_REQUIRED, False, False, False, CallStep.LOCALIZE),
        (2, ProposalStatus.SEARCH_REQUIRED, True, False, False, CallStep.STOP),
        (2, ProposalStatus.COMPLETE, True, True, False, CallStep.CANONICALIZE),
        (3, ProposalStatus.COMPLETE, True, True, False, CallStep.STOP),  # budget spent
        (3, ProposalStatus.SEARCH_REQUIRED, False, False, False, CallStep.STOP),
        (1, ProposalStatus.CANNOT_RESOLVE, False, True, False, CallStep.STOP),
    ],
)
def test_next_call(
    calls: int,
    last: ProposalStatus | None,
    localized: bool,
    canonicalize: bool,
    canonicalized: bool,
    step: CallStep,
) -> None:
    assert (
        next_call(
            calls, last, localized=localized, canonicalize=canonicalize, canonicalized=canonicalized
        )
        is step
    )


@pytest.mark.parametrize(("calls", "ok"), [(0, True), (2, True), (3, False), (4, False)])
def test_may_call(calls: int, ok: bool) -> None:
    assert MAX_MODEL_CALLS == 3
    assert may_call(calls) is ok


def test_a_turn_cut_is_preferred_over_a_more_even_event_cut() -> None:
    body = " ".join(f"w{j}" for j in range(300))
    events = [
        user(1, f"I prefer tabs. {body}"),
        assistant(2, f"Noted. {body}"),
        user(3, "I live in Lisbon."),
        assistant(4, "Nice."),
    ]
    env = _envelope(events, Range(0, 4, 4))
    window = preflight(env, 10**6, 200, COUNTER).total - 20
    split = split_range(env, window, 200, COUNTER)
    assert split is not None
    # cutting after event 1 would be more even, but it splits a turn
    assert split.boundary == Boundary(2, "turn")
    assert [t.ordinal for t in split.second.slice.turns] == [3, 4]


def test_event_cut_when_no_turn_cut_fits() -> None:
    body = " ".join(f"w{j}" for j in range(300))
    events = [user(1, f"I prefer tabs. {body}"), assistant(2, f"Noted. {body}")]
    env = _envelope(events, Range(0, 2, 2))
    window = preflight(env, 10**6, 200, COUNTER).total - 20
    split = split_range(env, window, 200, COUNTER)
    assert split is not None and split.boundary == Boundary(1, "event")
