"""The JSON reader of bodies and cursors, as a table: what it takes, and why it refuses."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from memoir.server.plumbing import depth_over, parse_json, scrubbed

DEPTHS = [
    pytest.param(1, 0, False, id="scalar"),
    pytest.param([], 1, False, id="empty-list-at-1"),
    pytest.param([], 0, True, id="empty-list-over-0"),
    pytest.param({"a": [{"b": 1}]}, 3, False, id="three-at-3"),
    pytest.param({"a": [{"b": 1}]}, 2, True, id="three-over-2"),
    pytest.param([1, [2, [3]], {"x": {}}], 3, False, id="widest-branch-counts"),
]


@pytest.mark.parametrize(("value", "limit", "over"), DEPTHS)
def test_depth_over(value: Any, limit: int, over: bool) -> None:
    assert depth_over(value, limit) is over


def test_depth_of_a_very_deep_value_is_measured_without_recursion() -> None:
    deep: list[Any] = []
    for _ in range(100_000):
        deep = [deep]
    assert depth_over(deep, 64) and not depth_over(deep, 100_001)


READ = [
    pytest.param(b'{"a": 1}', {"a": 1}, id="object"),
    pytest.param('"\\ud800 x"', "? x", id="lone-surrogate-scrubbed"),
    pytest.param(b'{"k\\udfff": "\\u0000"}', {"k?": "\ufffd"}, id="keys-and-nul"),
    pytest.param('"\\ud83d\\ude00"', "\U0001f600", id="a-whole-pair-is-kept"),
    pytest.param("[" * 64 + "]" * 64, None, id="at-the-limit"),
    # more brackets than the limit, but inside strings: the walk decides, and lets it in
    pytest.param(
        json.dumps(["[{" * 40, {"a": "{" * 40}]),
        ["[{" * 40, {"a": "{" * 40}],
        id="brackets-in-strings",
    ),
    # more brackets than the limit, side by side and shallow
    pytest.param(json.dumps([[1]] * 70), [[1]] * 70, id="wide-not-deep"),
]


@pytest.mark.parametrize(("raw", "value"), READ)
def test_parse_json_reads(raw: bytes | str, value: Any) -> None:
    got = parse_json(raw)
    if value is not None:
        assert got == value


REFUSED = [
    pytest.param(b"", "Expecting value", id="empty"),
    pytest.param(b"\xff", "not UTF-8 text (byte 0)", id="not-utf8"),
    pytest.param("\ufeff{}", "BOM", id="bom"),
    pytest.param("[" * 65 + "]" * 65, "nested deeper than 64 levels", id="over-the-limit"),
    pytest.param(
        '["' + "[" * 70 + '", ' + '{"a": ' * 65 + "1" + "}" * 65 + "]",
        "deeper than 64",
        id="deep-and-bracketed-strings",
    ),
    pytest.param("[" * 50_000 + "]" * 50_000, "nested deeper than 64", id="past-recursion"),
    pytest.param("[NaN]", "NaN is not a JSON number", id="nan"),
    pytest.param("-Infinity", "-Infinity is not a JSON number", id="minus-infinity"),
    pytest.param('{"a": 1,}', "line 1, column 9", id="says-where"),
]


@pytest.mark.parametrize(("raw", "says"), REFUSED)
def test_parse_json_refuses(raw: bytes | str, says: str) -> None:
    with pytest.raises(ValueError) as caught:
        parse_json(raw)
    assert says in str(caught.value), str(caught.value)


# parse_json copies a value to scrub it only when its text holds an escape that can make
# an unstorable string (NUL, a lone surrogate); it must answer as scrubbing every value does
def _scrubbing_all(raw: bytes) -> Any:
    return scrubbed(json.loads(raw.decode("utf-8")))


JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(), inner, max_size=4),
    max_leaves=12,
)


@settings(max_examples=300, deadline=None)
@given(JSON, st.booleans())
def test_parse_json_reads_every_value_as_scrubbing_all_of_it_does(
    value: Any, ascii_only: bool
) -> None:
    try:
        raw = json.dumps(value, ensure_ascii=ascii_only).encode("utf-8")
    except UnicodeEncodeError:  # a raw lone surrogate is not UTF-8: escaped, it is
        raw = json.dumps(value).encode("utf-8")
    assert parse_json(raw) == _scrubbing_all(raw)


@pytest.mark.parametrize(
    "raw",
    [b'"a\\u0000b"', b'"\\udc80"', b'{"\\uD800": 1}', b'"\\\\u0000"', b'"\\u00e9 \\u20ac"'],
)
def test_escapes_that_may_be_unstorable_are_scrubbed(raw: bytes) -> None:
    assert parse_json(raw) == _scrubbing_all(raw)
