"""codec: timestamps stored as text sort like the instants they name."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone

import pytest
from hypothesis import given
from hypothesis import strategies as st

from memoir.model.event import scrub, scrub_deep
from memoir.store.codec import dumps, from_iso, loads, to_iso, to_utc

AWARE = st.datetimes(
    min_value=datetime(1970, 1, 2),
    max_value=datetime(9998, 12, 30),
    timezones=st.sampled_from(
        [UTC, timezone(timedelta(hours=5, minutes=30)), timezone(timedelta(hours=-8))]
    ),
)


@given(AWARE, AWARE)
def test_iso_text_order_is_time_order(a: datetime, b: datetime) -> None:
    ta, tb = to_iso(a), to_iso(b)
    assert ta is not None and tb is not None
    assert (ta < tb) == (a < b) and (ta == tb) == (a == b)


@given(AWARE)
def test_round_trip_is_utc_and_equal(a: datetime) -> None:
    back = from_iso(to_iso(a))
    assert back == a and back is not None and back.utcoffset() == timedelta(0)


def test_naive_is_taken_as_utc() -> None:
    assert to_utc(datetime(2024, 1, 1, 12)) == datetime(2024, 1, 1, 12, tzinfo=UTC)
    assert to_iso(datetime(2024, 1, 1, 12)) == "2024-01-01T12:00:00.000000+00:00"
    assert to_iso(None) is None and from_iso(None) is None


def test_scrub() -> None:
    assert scrub("a\x00b") == "a\ufffdb"
    assert scrub("plain") == "plain"
    assert scrub_deep("x\udcffy\x00") == "x?y\ufffd"


@pytest.mark.parametrize(
    ("value", "text"),
    [
        ({"a": 1, "b": [True, None]}, '{"a":1,"b":[true,null]}'),
        ({"ü": "日本"}, '{"ü":"日本"}'),
        ({1: "int key"}, '{"1":"int key"}'),
        ({"at": datetime(2024, 1, 1, tzinfo=UTC)}, '{"at":"2024-01-01 00:00:00+00:00"}'),
        ({"nul": "a\x00b"}, '{"nul":"a\\u0000b"}'),
    ],
)
def test_dumps_is_compact_and_stable(value: object, text: str) -> None:
    assert dumps(value) == text
    assert isinstance(loads(text), dict)
