"""Stand-ins: whole, deterministic, naming the tool and the size."""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from memoir.compaction import stand_in, validate_sequence
from memoir.compaction.standin import (
    IN_CONTEXT,
    IN_REQUEST,
    _letters,
    replaced,
    tool_names_by_call,
)

from .helpers import assistant, call, result, user

SEED = (
    "[content omitted from this summary request: read_file result, ~225006 tokens. It ran "
    "and produced output; re-read the source for its contents rather than reconstructing them.]"
)


def test_seed_wording() -> None:
    assert stand_in(result("c", "x"), 225006, tool_name="read_file", where=IN_REQUEST) == SEED


@pytest.mark.parametrize(
    ("message", "tool", "expected"),
    [
        (result("c", "x"), None, "tool result, ~10 tokens. It ran and produced output"),
        (
            {"role": "tool", "tool_call_id": "c", "name": "grep", "content": "x"},
            None,
            "grep result, ~10 tokens",
        ),
        (assistant("long"), None, "assistant message, ~10 tokens. It was written and sent"),
        (
            call(("1", "write_file"), ("2", "write_file")),
            None,
            "write_file call, ~10 tokens. It was made",
        ),
        (call(("1", "a"), ("2", "b")), None, "a call and b call, ~10 tokens"),
        (user("pasted"), None, "user message, ~10 tokens. The user sent it"),
    ],
)
def test_describes_each_role(message: dict, tool: str | None, expected: str) -> None:
    text = stand_in(message, 10, tool_name=tool, where=IN_CONTEXT)
    assert text.startswith("[content omitted from the context: ")
    assert expected in text and text.endswith("rather than reconstructing them.]")


def test_depends_only_on_the_message() -> None:
    a = stand_in(result("c", "x" * 10), 5, tool_name="ls", where=IN_REQUEST)
    b = stand_in(result("c", "x" * 10), 5, tool_name="ls", where=IN_REQUEST)
    assert a == b


def test_replaced_copy_keeps_pairing() -> None:
    msgs = [user("go"), call(("c1", "write_file"), text="writing"), result("c1", "ok")]
    msgs[1]["tool_calls"][0]["function"]["arguments"] = json.dumps({"body": "y" * 5000})
    new = replaced(msgs[1], 1300, tool_name=None)
    assert new["tool_calls"][0]["id"] == "c1"
    assert new["tool_calls"][0]["function"]["name"] == "write_file"
    args = json.loads(new["tool_calls"][0]["function"]["arguments"])
    assert "write_file call, ~1300 tokens" in args["omitted"]
    assert msgs[1]["tool_calls"][0]["function"]["arguments"].startswith('{"body"')  # not mutated
    assert validate_sequence([msgs[0], new, msgs[2]]) == []
    tool = replaced(msgs[2], 99, tool_name="write_file")
    assert tool["tool_call_id"] == "c1" and "write_file result, ~99 tokens" in tool["content"]


def test_tool_names_by_call() -> None:
    msgs = [user("a"), call(("1", "ls"), ("2", "cat")), result("1", ""), result("2", "")]
    assert tool_names_by_call(msgs) == {2: "ls", 3: "cat"}
    reused = [*msgs, call(("1", "grep")), result("1", "")]
    assert tool_names_by_call(reused)[5] == "grep" and tool_names_by_call(reused)[2] == "ls"


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet=st.characters(codec="ascii")) | st.text())
def test_letters_count_as_isalpha_or_isspace_count_them(text: str) -> None:
    assert _letters(text) == sum(ch.isalpha() or ch.isspace() for ch in text)


@pytest.mark.parametrize(
    ("text", "letters"),
    [
        ("", 0),
        ("ab c", 4),
        ("a1_\x1c\x1f\x7f", 3),  # \x1c-\x1f are spaces to str.isspace
        ("é a", 3),  # not ASCII: by words
        ("é done.", 6),  # an ASCII word of them
        ("数据\u3000done.🙂\x1cログ", 10),  # an ideographic space, a mixed word, \x1c
        ("{'k': 1}", 2),
    ],
)
def test_letters_table(text: str, letters: int) -> None:
    assert _letters(text) == letters
