"""Pure planning: cuts, pins, assembly, fitting."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from memoir.compaction import validate_sequence
from memoir.compaction.plan import (
    SUMMARY_HEADER,
    assemble,
    pin_index,
    pin_indices,
    summary_cut,
    truncate_cuts,
)
from memoir.compaction.sequence import leading_system_count

from .helpers import assistant, call, result, system, user
from .strategies import histories


@pytest.mark.parametrize(
    ("tokens", "first", "budget", "cut"),
    [
        ([10, 10, 10, 10], 0, 25, 2),
        ([10, 10, 10, 10], 0, 0, 4),  # nothing fits: everything is summarized
        ([10, 10, 10, 10], 0, 1000, 1),  # always covers at least the first unit
        ([10], 0, 1000, 1),
        ([5, 50, 5], 0, 20, 2),  # stops at the first unit that does not fit
        ([10, 10, 10], 2, 1000, 3),
        ([], 0, 100, 0),
    ],
)
def test_summary_cut(tokens: list[int], first: int, budget: int, cut: int) -> None:
    assert summary_cut(tokens, first, budget) == cut


@pytest.mark.parametrize(
    ("n", "first", "cuts"),
    [(0, 0, [0]), (1, 0, [0, 1]), (3, 0, [1, 2, 3]), (5, 2, [3, 4, 5]), (3, 2, [2, 3])],
)
def test_truncate_cuts(n: int, first: int, cuts: list[int]) -> None:
    assert truncate_cuts(n, first) == cuts


def test_assemble_joins_the_first_tail_user_message_to_the_head() -> None:
    msgs = [system(), user("a"), assistant("b"), user("c"), assistant("d")]
    out = assemble(msgs, 1, "S.", 3)
    assert [m["role"] for m in out] == ["system", "user", "assistant"]
    assert out[1]["content"].startswith(SUMMARY_HEADER) and out[1]["content"].endswith("\n\nc")
    assert out[2] is msgs[4]  # kept messages are the caller's own objects


def test_assemble_pins_the_latest_user_message_when_it_is_covered() -> None:
    msgs = [
        user("the task"),
        call(("1", "ls")),
        result("1", "x"),
        call(("2", "ls")),
        result("2", "y"),
    ]
    with_head = assemble(msgs, 0, "S.", 3)
    assert with_head[0]["content"].endswith("\n\nthe task")
    assert [m["role"] for m in with_head] == ["user", "assistant", "tool"]
    without = assemble(msgs, 0, None, 3)
    assert without[0] is msgs[0] and without[1] is msgs[3]
    assert validate_sequence(with_head) == validate_sequence(without) == []


def test_assemble_part_lists() -> None:
    parts: Any = [{"type": "text", "text": "see"}, {"type": "image_url", "image_url": {}}]
    msgs = [user("a"), assistant("b"), {"role": "user", "content": parts}]
    out = assemble(msgs, 0, "S.", 2)
    assert out[0]["content"][0]["type"] == "text" and out[0]["content"][1:] == parts


@settings(max_examples=100, deadline=None)
@given(histories(), st.booleans())
def test_pin_indices_agree_with_pin_index(msgs: list[dict[str, Any]], has_head: bool) -> None:
    sysn = leading_system_count(msgs)
    table = pin_indices(msgs, sysn, has_head)
    assert table == [pin_index(msgs, sysn, s, has_head) for s in range(len(msgs) + 1)]


@settings(max_examples=100, deadline=None)
@given(histories(), st.data())
def test_every_unit_cut_assembles_a_valid_sequence(msgs: list[dict[str, Any]], data: Any) -> None:
    from memoir.compaction.sequence import units

    us = units(msgs)
    starts = [u.start for u in us] + [len(msgs)]
    start = data.draw(st.sampled_from(starts[1:] or starts))
    summary = data.draw(st.sampled_from([None, "Summary."]))
    out = assemble(msgs, leading_system_count(msgs), summary, start)
    assert validate_sequence(out) == []


# -- the verbatim tail (issue 26) -------------------------------------------------------

# roles: u user, a assistant prose, c assistant calling tools, t tool result
_ROLE = {"u": "user", "a": "assistant", "c": "assistant", "t": "tool"}


@pytest.mark.parametrize(
    ("shape", "counts", "budget", "latest", "start", "stood"),
    [
        # everything fits: the whole history is the tail
        ("uaua", [10, 10, 10, 10], 100, 2, 0, set()),
        # the first message that does not fit ends it
        ("uaua", [50, 10, 30, 10], 50, 2, 1, set()),
        # a message larger than the whole budget is stood in and the walk goes on
        ("uauaua", [10, 10, 500, 10, 10, 10], 100, 4, 0, {2}),
        # ... but never the latest user message: the head carries it instead
        ("uaua", [10, 10, 500, 10], 100, 2, 3, set()),
        # tool output that does not fit what is left is stood in; the call stays verbatim
        ("uctct", [10, 5, 80, 5, 60], 100, 0, 0, {2}),
        # prose that does not fit ends the walk even after stood-in tool output
        ("uauct", [10, 90, 10, 5, 80], 100, 2, 2, set()),
        # a unit is never split: the walk ends inside it, so its call is kept too
        ("uactt", [10, 90, 5, 300, 40], 60, 0, 2, {3}),
        # nothing fits: the tail is empty
        ("ua", [10, 200], 5, 0, 2, set()),
    ],
)
def test_tail_plan(
    shape: str, counts: list[int], budget: int, latest: int, start: int, stood: set[int]
) -> None:
    from memoir.compaction.plan import tail_plan

    roles = [_ROLE[c] for c in shape]
    tool_output = {i for i, c in enumerate(shape) if c in "ct"}
    plan = tail_plan(roles, counts, 0, budget, lambda i: 20, (), latest, tool_output)
    assert (plan.start, set(plan.stand_ins)) == (start, stood)
    assert plan.tokens == sum(20 if i in stood else counts[i] for i in range(start, len(shape)))


def test_tail_plan_keeps_what_a_replayed_checkpoint_stood_in() -> None:
    from memoir.compaction.plan import tail_plan

    roles = ["user", "assistant", "tool", "user"]
    plan = tail_plan(roles, [10, 5, 30, 10], 0, 1_000, lambda i: 20, stood_in={2}, latest_user=3)
    assert plan.start == 0 and plan.stand_ins == {2} and plan.tokens == 45


@settings(max_examples=100, deadline=None)
@given(histories(), st.integers(0, 20_000))
def test_tail_plan_always_starts_a_unit_and_keeps_the_last_budget_verbatim(
    msgs: list[dict[str, Any]], budget: int
) -> None:
    from memoir.compaction.plan import tail_plan
    from memoir.compaction.sequence import MessageCounter, units

    counter = MessageCounter()
    counts = counter.counts(msgs)
    sysn = leading_system_count(msgs)
    roles = [str(m["role"]) for m in msgs]
    output = {i for i, m in enumerate(msgs) if m["role"] == "tool" or m.get("tool_calls")}
    plan = tail_plan(roles, counts, sysn, budget, lambda i: 30, (), None, output)
    assert plan.start in {u.start for u in units(msgs)} | {len(msgs)}
    used = 0
    for i in range(len(msgs) - 1, sysn - 1, -1):  # the last budget's worth: verbatim
        used += counts[i]
        if used > budget:
            break
        assert i >= plan.start and i not in plan.stand_ins
