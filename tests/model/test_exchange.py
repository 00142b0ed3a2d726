from __future__ import annotations

import itertools
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from memoir.model import (
    Author,
    Event,
    EventKind,
    Exchange,
    build_exchanges,
    exchange_id,
    exchanges_around,
)
from memoir.model.exchange import LEAD_EXCERPT_CHARS, TOOL_EXCERPT_CHARS, open_tail

T0 = datetime(2026, 1, 1, tzinfo=UTC)


def ev(n: int, kind: EventKind, author: Author, text: str, tool: str | None = None) -> Event:
    return Event(
        "s1", n, kind, author, text, T0 + timedelta(minutes=n), tool_name=tool, source_line=n
    )


def history() -> list[Event]:
    return [
        ev(1, EventKind.META, Author.SYSTEM, "preamble"),
        ev(2, EventKind.USER_TEXT, Author.USER, "fix the parser"),
        ev(3, EventKind.THINKING, Author.ASSISTANT, "hmm"),
        ev(4, EventKind.TOOL_CALL, Author.ASSISTANT, '{"path": "a.py"}', "Read"),
        ev(5, EventKind.TOOL_RESULT, Author.TOOL, "def parse(): ...", "Read"),
        ev(6, EventKind.ASSISTANT_TEXT, Author.ASSISTANT, "Fixed it."),
        ev(7, EventKind.USER_TEXT, Author.USER, "thanks, now tests"),
        ev(8, EventKind.ASSISTANT_TEXT, Author.ASSISTANT, "Added tests."),
    ]


def test_groups_by_user_prompt_and_skips_preamble() -> None:
    xs = build_exchanges(history())
    assert [x.id for x in xs] == [exchange_id("s1", 2), exchange_id("s1", 7)]
    first = xs[0]
    assert (first.first_ordinal, first.last_ordinal) == (2, 6)
    assert first.user_text == "fix the parser"
    assert first.assistant_text == "Fixed it."
    assert first.tool_names == ("Read",)
    assert "def parse" in first.tool_excerpt
    assert first.started_at == T0 + timedelta(minutes=2)
    assert first.ended_at == T0 + timedelta(minutes=6)
    assert (first.line_start, first.line_end) == (2, 6)


def test_growing_exchange_keeps_its_id() -> None:
    events = history()
    before = build_exchanges(events)
    grown = build_exchanges([*events, ev(9, EventKind.ASSISTANT_TEXT, Author.ASSISTANT, "More.")])
    assert [x.id for x in grown] == [x.id for x in before]
    assert grown[-1].last_ordinal == 9
    assert grown[-1].assistant_text == "Added tests.\n\nMore."


def test_meta_user_text_does_not_open_an_exchange() -> None:
    events = [
        ev(1, EventKind.USER_TEXT, Author.USER, "hello"),
        ev(2, EventKind.USER_TEXT, Author.SYSTEM, "<command-name>/clear</command-name>"),
        ev(3, EventKind.ASSISTANT_TEXT, Author.ASSISTANT, "hi"),
    ]
    xs = build_exchanges(events)
    assert len(xs) == 1 and xs[0].last_ordinal == 3


def test_tool_excerpt_is_bounded() -> None:
    big = "x" * 100_000
    events = [ev(1, EventKind.USER_TEXT, Author.USER, "go")] + [
        ev(n, EventKind.TOOL_RESULT, Author.TOOL, big, "Bash") for n in range(2, 20)
    ]
    (x,) = build_exchanges(events)
    assert 0 < len(x.tool_excerpt) <= TOOL_EXCERPT_CHARS + 40  # plus the joins


def test_tool_excerpt_keeps_the_end_of_long_output_and_reads_json_line_breaks() -> None:
    trace = "Traceback (most recent call last):\n" + '  File "a.py", line 1\n' * 80
    trace += "ModuleNotFoundError: No module named 'structlog'"
    edit = '{"new_string":"import os\\nMAX_EXPORT_ROWS = 5"}'  # JSON: the \n is escaped
    events = [
        ev(1, EventKind.USER_TEXT, Author.USER, "go"),
        ev(2, EventKind.TOOL_CALL, Author.ASSISTANT, edit, "Edit"),
        ev(3, EventKind.TOOL_RESULT, Author.TOOL, "\x1b[31m" + trace + "\x1b[0m", "Bash"),
    ]
    (x,) = build_exchanges(events)
    assert "No module named 'structlog'" in x.tool_excerpt  # the last line, not cut off
    assert "import os MAX_EXPORT_ROWS" in x.tool_excerpt  # not "nMAX_EXPORT_ROWS"
    assert "\x1b" not in x.tool_excerpt


def _five() -> list:
    events = [
        ev(n, kind, author, f"turn {n}")
        for n in range(1, 11)
        for kind, author in [
            (EventKind.USER_TEXT, Author.USER)
            if n % 2
            else (EventKind.ASSISTANT_TEXT, Author.ASSISTANT)
        ]
    ]
    return build_exchanges(events)  # ids s1:1, s1:3, s1:5, s1:7, s1:9


@pytest.mark.parametrize(
    ("target", "context", "expected"),
    [
        ("s1:5", 0, ["s1:5"]),
        ("s1:5", 1, ["s1:3", "s1:5", "s1:7"]),
        ("s1:1", 1, ["s1:1", "s1:3"]),  # nothing before the first
        ("s1:9", 2, ["s1:5", "s1:7", "s1:9"]),  # nothing after the last
        ("s1:5", 99, ["s1:1", "s1:3", "s1:5", "s1:7", "s1:9"]),
        ("s1:5", -3, ["s1:5"]),  # a negative reach is none
        ("s1:4", 1, []),  # an ordinal inside an exchange is not its id
        ("other:5", 1, []),
    ],
)
def test_exchanges_around_table(target: str, context: int, expected: list[str]) -> None:
    assert [x.id for x in exchanges_around(_five(), target, context)] == expected


# --- the lead-in: harness text before the first prompt (issue 34.3) ---------------------

H, U, A, M = EventKind.HARNESS, EventKind.USER_TEXT, EventKind.ASSISTANT_TEXT, EventKind.META
CALL, RESULT = EventKind.TOOL_CALL, EventKind.TOOL_RESULT
_AUTHOR = {H: Author.SYSTEM, U: Author.USER, A: Author.ASSISTANT, M: Author.SYSTEM}


def seq(*items: tuple[EventKind, str]) -> list[Event]:
    return [
        ev(
            n,
            kind,
            _AUTHOR.get(kind, Author.TOOL),
            text,
            "Bash" if kind in (CALL, RESULT) else None,
        )
        for n, (kind, text) in enumerate(items, start=1)
    ]


LONG = "a" * 300 + "m" * 2000 + "z" * 300
PIECE = "a" * 300 + " … " + "z" * 300  # a long text's piece: its first and last 300


@pytest.mark.parametrize(
    ("events", "expected"),
    [
        pytest.param(  # the lead-in's harness text follows the first exchange's own excerpt
            [(H, "caveat"), (H, "/model opus"), (U, "go"), (RESULT, "ok"), (A, "done")],
            [("s1:3", "ok\ncaveat\n/model opus")],
            id="lead-in",
        ),
        pytest.param(  # meta and assistant text before the prompt are not excerpted
            [(M, "preamble"), (H, "<environment_context>"), (A, "resumed"), (U, "go")],
            [("s1:4", "<environment_context>")],
            id="only-harness-of-the-lead-in",
        ),
        pytest.param(  # harness inside the exchange stays in event order, before the lead-in
            [(H, "lead"), (U, "go"), (H, "reminder"), (CALL, "ls"), (U, "next"), (H, "late")],
            [("s1:2", "reminder\nls\nlead"), ("s1:5", "late")],
            id="inside-then-lead-in-and-never-the-second",
        ),
        pytest.param([(H, "caveat"), (H, "/clear")], [], id="harness-only-so-far"),
        pytest.param([(M, "preamble"), (U, "go")], [("s1:2", "")], id="no-lead-in"),
        pytest.param(  # a budget of its own: cut at LEAD_EXCERPT_CHARS, never the first's
            [*[(H, LONG)] * 4, (U, "go"), (RESULT, "x" * 500), (RESULT, "y" * 100)],
            [
                (
                    "s1:5",
                    "\n".join(
                        ["x" * 500, "y" * 100, *[PIECE] * 3, PIECE[: LEAD_EXCERPT_CHARS - 3 * 603]]
                    ),
                )
            ],
            id="lead-in-budget",
        ),
    ],
)
def test_the_lead_in_goes_to_the_first_exchanges_excerpt_table(
    events: list[tuple[EventKind, str]], expected: list[tuple[str, str]]
) -> None:
    built = build_exchanges(seq(*events))
    assert [(x.id, x.tool_excerpt) for x in built] == expected


def test_the_lead_in_is_never_the_exchanges_words_span_time_or_lines() -> None:
    events = seq((H, "caveat"), (U, "go"), (A, "done"))
    (x,) = build_exchanges(events)
    assert (x.user_text, x.assistant_text, x.tool_names) == ("go", "done", ())
    assert (x.first_ordinal, x.last_ordinal, x.line_start, x.line_end) == (2, 3, 2, 3)
    assert x.started_at == T0 + timedelta(minutes=2)


# --- open_tail: what a reader in batches carries; batches build what one read builds ---

_KINDS = [H, U, A, M, CALL, RESULT, EventKind.THINKING]


@st.composite
def histories(draw: st.DrawFn) -> list[Event]:
    out: list[Event] = []
    for n in range(1, draw(st.integers(0, 40)) + 1):
        kind = draw(st.sampled_from(_KINDS))
        size = draw(st.sampled_from([0, 5, 400, 900]))
        timed = draw(st.booleans())
        lined = draw(st.booleans())
        out.append(
            Event(
                "s1",
                n,
                kind,
                _AUTHOR.get(kind, Author.TOOL),
                f"{kind.value}{n} " + "w" * size,
                T0 + timedelta(minutes=n) if timed else None,
                tool_name=draw(st.sampled_from(["Read", "Bash"]))
                if kind in (CALL, RESULT)
                else None,
                source_line=n if lined else None,
            )
        )
    return out


def _by_batches(events: list[Event], cuts: list[int]) -> dict[str, Exchange]:
    """Exchanges as a sync in batches stores them: each batch builds from the carried open
    tail and its own events, and what it builds replaces what was stored by id."""
    stored: dict[str, Exchange] = {}
    carry: list[Event] = []
    bounds = [0, *sorted(set(cuts)), len(events)]
    for start, end in itertools.pairwise(bounds):
        batch = events[start:end]
        if not batch:
            continue
        everything = [*carry, *batch]
        for x in build_exchanges(everything):
            if x.last_ordinal >= batch[0].ordinal:
                stored[x.id] = x
        carry = open_tail(everything)
    return stored


@settings(max_examples=300, deadline=None)
@given(events=histories(), data=st.data())
def test_a_history_built_in_batches_is_built_as_in_one(events: list[Event], data: Any) -> None:
    cuts = data.draw(st.lists(st.integers(0, len(events)), max_size=8))
    assert _by_batches(events, cuts) == {x.id: x for x in build_exchanges(events)}


@settings(max_examples=300, deadline=None)
@given(events=histories(), data=st.data())
def test_the_open_tail_read_back_from_its_first_ordinal_is_the_same(
    events: list[Event], data: Any
) -> None:
    """A store records the carry's first ordinal (``open_from``) and reads the events from
    there back a page at a time: the same carry, so building on from it is the same."""
    cut = data.draw(st.integers(0, len(events)))
    carry = open_tail(events[:cut])
    if not carry:  # nothing to carry: no exchange and no lead-in harness text yet
        assert build_exchanges(events[:cut]) == []
        assert not any(e.kind is H for e in events[:cut])
        return
    page = data.draw(st.integers(1, 5))
    from_open = events[carry[0].ordinal - 1 : cut]
    again: list[Event] = []
    for at in range(0, len(from_open), page):
        again = open_tail([*again, *from_open[at : at + page]])
    assert again == carry
    expected = [x for x in build_exchanges(events) if x.last_ordinal >= carry[0].ordinal]
    assert build_exchanges([*again, *events[cut:]]) == expected


def test_the_carried_lead_in_is_bounded_by_its_budget() -> None:
    """A session that opens with a hundred harness records carries the five the first
    exchange's excerpt takes (2,000 characters of 400-character texts), not all of them."""
    assert LEAD_EXCERPT_CHARS == 2000
    lead = seq(*[(H, f"{n:03d}" + "h" * 397) for n in range(100)])
    carried = open_tail(lead)
    assert [e.ordinal for e in carried] == [1, 2, 3, 4, 5]
    prompt = ev(101, U, Author.USER, "go")
    assert build_exchanges([*carried, prompt]) == build_exchanges([*lead, prompt])
