"""What a stand-in says of a message: the call, how it ended, a user's first and last lines."""

from __future__ import annotations

import json
from typing import Any

import pytest

from memoir.compaction.standin import (
    StandIns,
    call_brief,
    call_outcome,
    calls_by_result,
    excerpt,
    message_details,
)

from .helpers import assistant, call, result, user


def tool_call(name: str, args: Any) -> dict[str, Any]:
    raw = args if isinstance(args, str) else json.dumps(args)
    return {"id": "c", "type": "function", "function": {"name": name, "arguments": raw}}


@pytest.mark.parametrize(
    ("name", "args", "brief"),
    [
        ("bash", {"command": "pytest -q"}, 'bash command="pytest -q"'),
        ("read_file", {"path": "src/a.py", "limit": 20}, 'read_file path="src/a.py"'),
        ("grep", {"pattern": "TODO", "path": "src"}, 'grep path="src" pattern="TODO"'),
        ("search", {"query": "flaky test"}, 'search query="flaky test"'),
        ("edit", {"old": "a", "new": "b"}, 'edit old="a" new="b"'),  # no key argument
        ("ls", {}, "ls"),
        ("raw", "not json", 'raw "not json"'),
        ("write", {"path": "x.py", "content": "y" * 500}, 'write path="x.py"'),
        ("run", {"cmd": "x " * 200}, 'run cmd="' + ("x " * 59).strip() + ' x…"'),
    ],
)
def test_call_brief_names_what_the_call_touched(name: str, args: Any, brief: str) -> None:
    assert call_brief(tool_call(name, args)) == brief


@pytest.mark.parametrize(
    ("output", "status", "errors"),
    [
        ("12 passed in 0.3s\nexit status 0", "0", ()),
        (
            "E   ModuleNotFoundError: No module named 'x'\nexit status 1",
            "1",
            ("E ModuleNotFoundError: No module named 'x'",),
        ),
        (
            "Traceback (most recent call last):\n  File a.py\nValueError: bad",
            None,
            ("Traceback (most recent call last):", "ValueError: bad"),
        ),
        ("fatal: not a git repository", None, ("fatal: not a git repository",)),
        ("Process exited with code 137", "137", ()),
        ("all good", None, ()),
        ("x" * 400 + " error", None, ()),  # an error line too long to quote whole: none
    ],
)
def test_call_outcome(output: str, status: str | None, errors: tuple[str, ...]) -> None:
    got = call_outcome(output)
    assert (got.exit_status, got.errors) == (status, errors)


def test_outcome_keeps_the_last_two_error_lines_whole() -> None:
    out = "Traceback (most recent call last):\n  File 'a.py', line 3\nKeyError: 'user_id'"
    assert call_outcome(out).errors == ("Traceback (most recent call last):", "KeyError: 'user_id'")


@pytest.mark.parametrize(
    ("line", "shown"),
    [
        ("short line", '"short line"'),
        ("why does " + "the build fail " * 20, None),  # long prose: cut between words
        ('{"rows": [' + "1, " * 100 + "]}", "a line of 312 characters"),  # data: described
    ],
)
def test_excerpt_never_severs_a_value(line: str, shown: str | None) -> None:
    got = excerpt(line)
    if shown is None:
        assert got.startswith('"why does the build fail') and got.endswith('…"')
        assert len(got) <= 170
    else:
        assert got == shown


def test_details_of_each_role() -> None:
    msgs = [
        user("Here is the log:\n" + "line\n" * 50 + "why does it fail?"),
        call(("c1", "bash")),
        result("c1", "E   AssertionError: 1 != 2\nexit status 1"),
        assistant("Reading it now."),
    ]
    msgs[1]["tool_calls"][0]["function"]["arguments"] = json.dumps({"command": "pytest"})
    calls = calls_by_result(msgs)
    assert message_details(msgs[0], None) == (
        '52 lines; it began: "Here is the log:" and ended: "why does it fail?"'
    )
    assert message_details(msgs[1], None) == 'calls: bash command="pytest"'
    assert message_details(msgs[2], calls.get(2)) == (
        'of bash command="pytest"; exit status 1; error: "E AssertionError: 1 != 2"'
    )
    assert message_details(msgs[3], None) == '1 line; it began: "Reading it now."'


def test_a_result_without_error_lines_says_how_it_ended() -> None:
    msgs = [user("go"), call(("c1", "bash")), result("c1", "building…\n14 passed in 1.1s")]
    details = message_details(msgs[2], calls_by_result(msgs)[2])
    assert details == 'last line: "14 passed in 1.1s"'


def test_stand_ins_are_the_same_bytes_every_time_and_name_the_position() -> None:
    msgs = [user("go"), call(("c1", "read_file")), result("c1", "data " * 3_000)]
    msgs[1]["tool_calls"][0]["function"]["arguments"] = json.dumps({"path": "big.csv"})
    first = StandIns(msgs, [7, 8, 9], [1, 2, 3_000]).context(2)
    again = StandIns([dict(m) for m in msgs], [7, 8, 9], [1, 2, 3_000]).context(2)
    assert first == again and first["tool_call_id"] == "c1"
    assert 'read_file result, ~3000 tokens; of read_file path="big.csv"' in first["content"]
    assert "(#9 of the full history)" in first["content"]
    request = StandIns(msgs, [7, 8, 9], [1, 2, 3_000]).request_text(2)
    assert request.startswith("[content omitted from this summary request: read_file result")
    assert "#9" not in request  # the request says nothing of positions
