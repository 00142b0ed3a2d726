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
