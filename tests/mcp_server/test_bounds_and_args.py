"""The pure parts: texts and lists cut to the bound, arguments checked one by one."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from memoir.errors import ConfigError
from memoir.mcp.tools import TOOLS, Args, fit_items, json_len, shorten


@given(st.text(max_size=3_000), st.integers(min_value=60, max_value=2_500))
def test_shorten_keeps_start_and_end_within_the_cap(text: str, cap: int) -> None:
    cut, left_out = shorten(text, cap)
    if len(text) <= cap:
        assert (cut, left_out) == (text, 0)
        return
    assert len(cut) <= cap
    assert f"[{left_out:,} characters left out]" in cut
    head, _, rest = cut.partition("\n… [")
    tail = rest.partition("] …\n")[2]
    assert text.startswith(head) and text.endswith(tail)
    assert len(head) + len(tail) + left_out == len(text)


def test_shorten_a_log_keeps_its_error_line() -> None:
    log = "".join(f"line {n} ok\n" for n in range(5_000)) + "error: the build failed\n"
    cut, left_out = shorten(log, 800)
    assert cut.startswith("line 0 ok") and cut.endswith("error: the build failed\n")
    assert left_out == len(log) - len(cut) + len(f"\n… [{left_out:,} characters left out] …\n")


@given(st.lists(st.text(max_size=300), max_size=60), st.integers(min_value=50, max_value=6_000))
def test_fit_items_keeps_the_longest_head_that_fits(items: list[str], cap: int) -> None:
    def build(kept: list[Any], dropped: int) -> dict[str, Any]:
        return {"items": kept, "dropped": dropped}

    out = fit_items(build, items, cap)
    kept = out["items"]
    assert kept == items[: len(kept)] and out["dropped"] == len(items) - len(kept)
    if kept != items:
        assert json_len(out) <= cap
        assert json_len(build(items[: len(kept) + 1], len(items) - len(kept) - 1)) > cap


ARG_CASES = [
    ({"limit": 0}, "limit must be from 1 to 50; got 0"),
    ({"limit": 3.5}, "limit must be a whole number, not float 3.5"),
    ({"limit": True}, "limit must be a whole number, not bool True"),
    ({"limit": [1]}, "limit must be a whole number, not list [1]"),
    ({"limit": "²"}, "limit must be a whole number, not str '²'"),
    ({"limit": "1²"}, "limit must be a whole number, not str '1²'"),
    ({"limit": "①"}, "limit must be a whole number, not str '①'"),
    ({"limit": "٣"}, "limit must be a whole number, not str '٣'"),
    ({"limit": "--3"}, "limit must be a whole number, not str '--3'"),
    ({"limit": "-3"}, "limit must be from 1 to 50; got -3"),
    ({"query": 7}, "query must be a string, not int 7"),
    ({"query": "   "}, "t needs 'query' (a non-empty string)"),
    ({"query": "a" * 2_001}, "query is 2,001 characters long; t takes at most 2,000"),
    ({"flag": "maybe"}, "flag must be true or false, not str 'maybe'"),
    ({"mode": "fuzzy"}, "mode must be one of text, vector; got 'fuzzy'"),
    ({"keys": [1, 2]}, "keys must be a list of strings, not list [1, 2]"),
    ({"keys": ["k"] * 17}, "keys takes at most 16 entries; got 17"),
    ({"other": 1, "zeta": 2}, "t does not take 'other', 'zeta'; it takes: query, limit, flag"),
]


def _read_all(raw: dict[str, Any]) -> None:
    args = Args("t", raw, ("query", "limit", "flag", "mode", "keys"))
    args.text("query", required=True, max_chars=2_000)
    args.integer("limit", default=10, low=1, high=50)
    args.flag("flag", default=False)
    args.choice("mode", ("text", "vector"), default=None)
    args.words("keys")


@pytest.mark.parametrize(("extra", "says"), ARG_CASES)
def test_each_bad_argument_is_one_sentence(extra: dict[str, Any], says: str) -> None:
    raw = {"query": "coupon", **extra}
    if "other" in extra:
        with pytest.raises(ConfigError) as caught:
            Args("t", raw, ("query", "limit", "flag"))
    else:
        with pytest.raises(ConfigError) as caught:
            _read_all(raw)
    assert str(caught.value) == says or str(caught.value).startswith(says)


def test_good_arguments_read_as_typed_values() -> None:
    raw = {"query": " coupon ", "limit": "7", "flag": "true", "keys": "a"}
    args = Args("t", raw, ["query", "limit", "flag", "keys"])
    assert args.text("query") == "coupon"
    assert args.integer("limit", default=10, low=1, high=50) == 7
    assert args.flag("flag", default=False) is True
    assert args.words("keys") == ["a"]
    assert args.integer("missing", default=3, low=1, high=5) == 3
    assert Args("t", {"n": " 12 "}, ["n"]).integer("n", default=None, low=0, high=99) == 12


def test_every_tool_schema_names_the_arguments_its_handler_reads() -> None:
    for tool in TOOLS:
        schema = tool.input_schema()
        assert list(schema["properties"]) == list(tool.arguments)
        assert set(schema.get("required", [])) <= set(tool.arguments)
        with pytest.raises(ConfigError, match="does not take"):
            Args(tool.name, {"surely_not_an_argument": 1}, tool.arguments)
