"""What a database cannot store is scrubbed before it is written (NUL → U+FFFD, lone
surrogates replaced; payloads through a JSON round trip, which keeps a NUL as an escape),
and what needs nothing is left as it is — the same object, not a copy: an append scrubs
every event it writes."""

from __future__ import annotations

import dataclasses
import json
from datetime import UTC, datetime
from enum import Enum
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from memoir.model import Author, Event, EventKind, Harness, Session
from memoir.model.event import scrub_deep
from memoir.store.values import IngestBatch, scrub_batch

T0 = datetime(2026, 3, 1, tzinfo=UTC)


def _reference(value: Any) -> Any:
    """Every str field scrubbed, every dict through the JSON round trip, always a copy
    (what scrubbing did before it learnt to leave clean values alone)."""
    changes: dict[str, Any] = {}
    for f in dataclasses.fields(value):
        v = getattr(value, f.name)
        if isinstance(v, Enum):
            continue
        if isinstance(v, str):
            changes[f.name] = scrub_deep(v)
        elif isinstance(v, dict):
            text = scrub_deep(json.dumps(v, ensure_ascii=False, default=str))
            changes[f.name] = json.loads(text)
        elif isinstance(v, tuple) and v and all(isinstance(i, str) for i in v):
            changes[f.name] = tuple(scrub_deep(i) for i in v)
    return dataclasses.replace(value, **changes)


def _event(text: str, payload: dict[str, Any] | None = None) -> Event:
    return Event("s", 1, EventKind.USER_TEXT, Author.USER, text, T0, payload=payload or {})


def _scrubbed(event: Event) -> Event:
    session = Session("s", "p", Harness.API)
    (out,) = scrub_batch(IngestBatch(session=session, events=(event,))).events
    return out


@pytest.mark.parametrize(
    ("text", "payload", "text_after", "payload_after", "same"),
    [
        ("plain words", {"model": "x", "n": 3, "ok": True}, None, None, True),
        ("café ☕ 你好", {"input": {"path": "é/ü", "args": [1, 2.5, None]}}, None, None, True),
        ("a\x00b", {}, "a\ufffdb", None, False),
        ("lone \ud800 surrogate", {}, "lone ? surrogate", None, False),
        ("ok", {"out": "x\x00y"}, None, None, True),  # JSON writes it as an escape
        ("ok", {"k\x00": 1}, None, None, True),
        ("ok", {"out": "a\udc80b"}, None, {"out": "a?b"}, False),
        ("ok", {"k\ud800": [1, "x"]}, None, {"k?": [1, "x"]}, False),
        ("ok", {"pair": (1, 2)}, None, {"pair": [1, 2]}, False),  # a tuple: JSON's list
        ("ok", {"when": T0}, None, {"when": str(T0)}, False),  # a date: its text
    ],
)
def test_scrub_table(
    text: str,
    payload: dict[str, Any],
    text_after: str | None,
    payload_after: dict[str, Any] | None,
    same: bool,
) -> None:
    event = _event(text, payload)
    out = _scrubbed(event)
    assert out.text == (text if text_after is None else text_after)
    assert out.payload == (payload if payload_after is None else payload_after)
    assert (out is event) == same
    assert out == _reference(event)


_texts = st.text(alphabet=st.characters(codec=None, blacklist_categories=()), max_size=30)
_json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | _texts,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(_texts, inner, max_size=3),
    max_leaves=8,
)


@given(text=_texts, payload=st.dictionaries(_texts, _json_values, max_size=4))
def test_scrubbing_equals_the_full_round_trip(text: str, payload: dict[str, Any]) -> None:
    event = _event(text, payload)
    assert _scrubbed(event) == _reference(event)
