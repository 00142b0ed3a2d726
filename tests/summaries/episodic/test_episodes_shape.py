"""Tolerant parsing of summary objects (tables and hypothesis) and their rendering."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from memoir.summaries.offline import (
    FACT_LISTS,
    SUMMARY_KEYS,
    UnusableAnswer,
    empty_summary,
    parse_summary,
    render_summary,
)


def full(**kw: Any) -> dict[str, Any]:
    out = empty_summary()
    out.update(kw)
    return out


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ('{"narrative": "n"}', full(narrative="n")),
        ('  {"narrative": " n ", "facts": ["a"]}\n', full(narrative="n", facts=["a"])),
        ('{"narrative": "n", "mood": "happy", "extra": [1]}', full(narrative="n")),
        ('{"narrative": "n", "people": "Ada"}', full(narrative="n", people=["Ada"])),
        (
            '{"narrative": "n", "facts": [1, 2.5, true, null, {"x": 1}, ["y"]]}',
            full(narrative="n", facts=["1", "2.5"]),
        ),
        (
            '{"narrative": "n", "facts": ["A  b", "a b", " ", ""]}',
            full(narrative="n", facts=["A b"]),
        ),
        ('{"facts": ["only a fact"]}', full(facts=["only a fact"])),
        ('{"narrative": "n", "keywords": "k"}', full(narrative="n", keywords=["k"])),
        ('```json\n{"narrative": "fenced"}\n```', full(narrative="fenced")),
        (
            'Here you go:\n```\n{"narrative": "bare fence"}\n```\nDone.',
            full(narrative="bare fence"),
        ),
        ('```JSON\n{"narrative": "upper"}```', full(narrative="upper")),
        ('{"narrative": 42}', full(narrative="42")),
    ],
)
def test_tolerant_parsing(text: str, expected: dict[str, Any]) -> None:
    assert parse_summary(text) == expected


@pytest.mark.parametrize(
    "text",
    [
        "",
        "   ",
        "The conversation was about tests.",
        '["narrative"]',
        '{"narrative": "unterminated',
        '{"narrative": ""}',
        '{"narrative": "", "keywords": ["k"]}',
        '{"narrative": {"nested": 1}}',
        "```python\nprint(1)\n```",
        'Sure! {"narrative": "prose around a bare object"}',
        "null",
    ],
)
def test_anything_else_is_a_failed_call(text: str) -> None:
    with pytest.raises(UnusableAnswer):
        parse_summary(text)


items = st.lists(st.text(min_size=1, max_size=30), max_size=4)
objects = st.fixed_dictionaries(
    {"narrative": st.text(min_size=1, max_size=80).filter(lambda s: s.strip())},
    optional={key: items for key in (*FACT_LISTS, "keywords")} | {"unknown": st.integers()},
)


@given(objects, st.booleans())
@example(  # a fenced answer whose JSON holds ``` in a string (found by this property)
    {"narrative": "0", "decisions": [], "unknown": 0, "keywords": [], "state": ["```"]}, True
)
def test_parsed_objects_always_have_exactly_the_summary_keys(
    obj: dict[str, Any], fence: bool
) -> None:
    text = json.dumps(obj, ensure_ascii=False)
    if fence:
        text = f"```json\n{text}\n```"
    parsed = parse_summary(text)
    assert tuple(parsed) == SUMMARY_KEYS
    assert parsed["narrative"] == obj["narrative"].strip()
    for key in (*FACT_LISTS, "keywords"):
        expected = [" ".join(i.split()) for i in obj.get(key, []) if i.split()]
        folded = [i.casefold() for i in parsed[key]]
        assert len(folded) == len(set(folded))
        assert set(folded) == {i.casefold() for i in expected}


@given(st.text(max_size=200))
def test_arbitrary_text_parses_or_fails_cleanly(text: str) -> None:
    try:
        parsed = parse_summary(text)
    except UnusableAnswer:
        return
    assert tuple(parsed) == SUMMARY_KEYS


def test_render_is_readable_and_skips_empty_lists() -> None:
    data = full(
        narrative="We fixed the build.",
        decisions=["use uv"],
        open_threads=["write docs"],
        keywords=["build", "uv"],
    )
    assert render_summary(data) == (
        "We fixed the build.\n\nDecisions:\n- use uv\n\nOpen threads:\n- write docs"
        "\n\nKeywords: build, uv"
    )
    assert render_summary({}) == ""
