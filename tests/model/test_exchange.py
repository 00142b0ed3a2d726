from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from memoir.model import (
    Author,
    Event,
    EventKind,
    build_exchanges,
    exchange_id,
    exchanges_around,
)
from memoir.model.exchange import TOOL_EXCERPT_CHARS

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
