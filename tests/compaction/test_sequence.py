"""validate_sequence: what the OpenAI and Anthropic APIs accept."""

from __future__ import annotations

from typing import Any

import pytest

from memoir.compaction import validate_sequence
from memoir.compaction.sequence import units

from .helpers import assistant, call, result, system, user

VALID: dict[str, list[dict[str, Any]]] = {
    "one user": [user("hi")],
    "system then user": [system(), user("hi")],
    "two systems": [system(), system("more"), user("hi")],
    "plain turns": [user("a"), assistant("b"), user("c"), assistant("d")],
    "tool round": [user("a"), call(("1", "ls")), result("1", "x"), assistant("done")],
    "parallel any order": [
        user("a"),
        call(("1", "ls"), ("2", "cat")),
        result("2", "y"),
        result("1", "x"),
    ],
    "tool then user": [user("a"), call(("1", "ls")), result("1", "x"), user("stop")],
    "back to back calls": [
        user("a"),
        call(("1", "ls")),
        result("1", "x"),
        call(("2", "ls")),
        result("2", "y"),
    ],
    "text with call": [user("a"), call(("1", "ls"), text="looking"), result("1", "x")],
    "part list content": [user([{"type": "text", "text": "hi"}])],  # type: ignore[arg-type]
}

INVALID: dict[str, tuple[list[dict[str, Any]], str]] = {
    "empty": ([], "no user message"),
    "only system": ([system()], "no user message"),
    "assistant first": ([assistant("a"), user("b")], "first non-system"),
    "system later": ([user("a"), system(), assistant("b")], "system message after"),
    "orphan result": ([user("a"), result("1", "x")], "answers no open tool call"),
    "missing result": ([user("a"), call(("1", "ls")), assistant("b")], "have no result"),
    "missing at end": (
        [user("a"), call(("1", "ls"), ("2", "ls")), result("1", "x")],
        "have no result",
    ),
    "duplicate result": (
        [user("a"), call(("1", "ls")), result("1", "x"), result("1", "x")],
        "answers no open tool call",
    ),
    "two users": ([user("a"), user("b")], "two user turns"),
    "tool then two users": (
        [user("a"), call(("1", "ls")), result("1", "x"), user("b"), user("c")],
        "two user turns",
    ),
    "two assistants": ([user("a"), assistant("b"), assistant("c")], "two assistant"),
    "repeated ids": (
        [user("a"), call(("1", "ls"), ("1", "ls")), result("1", "x")],
        "missing or repeated",
    ),
    "empty user": ([user("  ")], "empty user message"),
    "empty assistant": ([user("a"), assistant("")], "without content or tool calls"),
    "unknown role": ([{"role": "narrator", "content": "x"}], "known role"),
    "result of older call": (
        [
            user("a"),
            call(("1", "ls")),
            result("1", "x"),
            assistant("b"),
            user("c"),
            assistant("d"),
            result("1", "x"),
        ],
        "answers no open tool call",
    ),
}


@pytest.mark.parametrize("name", sorted(VALID))
def test_valid(name: str) -> None:
    assert validate_sequence(VALID[name]) == []


@pytest.mark.parametrize("name", sorted(INVALID))
def test_invalid(name: str) -> None:
    messages, expected = INVALID[name]
    problems = validate_sequence(messages)
    assert problems and any(expected in p for p in problems), problems


def test_units_keep_calls_with_results() -> None:
    msgs = [
        system(),
        user("a"),
        call(("1", "ls"), ("2", "ls")),
        result("1", "x"),
        result("2", "y"),
        assistant("ok"),
        user("b"),
    ]
    got = [(u.kind, u.start, u.stop) for u in units(msgs)]
    assert got == [("user", 1, 2), ("assistant", 2, 5), ("assistant", 5, 6), ("user", 6, 7)]
    assert [(u.start, u.stop) for u in units(msgs, 5)] == [(5, 6), (6, 7)]


@pytest.mark.parametrize(
    ("messages", "joined"),
    [
        ([user("a"), user("b")], [user("a\n\nb")]),
        (
            [user("q"), assistant("looking"), call(("1", "ls")), result("1", "x")],
            [user("q"), call(("1", "ls"), text="looking"), result("1", "x")],
        ),
        (
            [
                {"role": "user", "name": "Ana", "content": "hi"},
                {"role": "user", "name": "Bob", "content": "yo"},
            ],
            [user("Ana:\n\nhi\n\nBob:\n\nyo")],
        ),
        (
            [
                {"role": "user", "name": "Ana", "content": "a"},
                {"role": "user", "name": "Ana", "content": "b"},
            ],
            [{"role": "user", "name": "Ana", "content": "a\n\nb"}],
        ),
        (
            [user("see"), user([{"type": "image_url", "image_url": {"url": "u"}}])],  # type: ignore[arg-type]
            [
                user(
                    [
                        {"type": "text", "text": "see"},
                        {"type": "image_url", "image_url": {"url": "u"}},
                    ]
                )
            ],  # type: ignore[arg-type]
        ),
        ([user("a"), assistant("b"), user("c")], [user("a"), assistant("b"), user("c")]),
    ],
)
def test_runs_of_one_role_are_joined(messages: list[dict[str, Any]], joined: list[Any]) -> None:
    from memoir.compaction.sequence import join_same_role

    out, positions = join_same_role(messages, list(range(1, len(messages) + 1)))
    assert out == joined
    assert positions[-1] == len(messages) and len(positions) == len(out)
    assert validate_sequence(out) == [] or out == messages
