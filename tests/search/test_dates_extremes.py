"""Dates at the ends of what Python can hold, and bare numbers: never an internal error.
The end of a period past the year 9999 is the last instant; an instant outside the years
1–9999 once in UTC is refused as out of range; ``12`` or ``-1`` is not a date."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone

import pytest

from memoir.errors import ConfigError
from memoir.search.request import parse_when
from memoir.store.codec import to_iso, to_utc

LAST = datetime.max.replace(tzinfo=UTC)
NOW = datetime(2026, 12, 2, 14, 30, tzinfo=UTC)


@pytest.mark.parametrize(
    ("value", "end", "expected"),
    [
        ("9999-12-31", True, LAST),
        ("9999-12-31", False, datetime(9999, 12, 31, tzinfo=UTC)),
        ("9999-12", True, LAST),
        ("9999-12", False, datetime(9999, 12, 1, tzinfo=UTC)),
        ("9999", True, LAST),
        ("in 9999", True, LAST),
        ("9999-12-31T23:59:59.999999Z", True, LAST),
        ("9999-12-31T23:59:59+00:00", True, datetime(9999, 12, 31, 23, 59, 59, 1, tzinfo=UTC)),
        ("0001-01-01", False, datetime(1, 1, 1, tzinfo=UTC)),
        ("0001-01-01T00:00:00-01:00", False, datetime(1, 1, 1, 1, tzinfo=UTC)),
        ("2024-05-01T14:30+02:00", True, datetime(2024, 5, 1, 12, 30, 0, 1, tzinfo=UTC)),
        ("2026", False, datetime(2026, 1, 1, tzinfo=UTC)),
    ],
)
def test_the_end_of_a_period_past_9999_is_the_last_instant(
    value: str, end: bool, expected: datetime
) -> None:
    got = parse_when(value, end_of_day=end, now=NOW)
    assert got == expected and got.tzinfo is UTC
    assert to_iso(got)  # and the store takes it


@pytest.mark.parametrize(
    ("value", "end"),
    [
        ("9999-12-31T23:59:59-10:00", False),
        ("9999-12-31T23:59:59-10:00", True),
        ("0001-01-01T00:00:00+14:00", False),
        ("0001-01-01T00:00:00+14:00", True),
    ],
)
def test_an_instant_outside_the_years_1_to_9999_in_utc_is_out_of_range(
    value: str, end: bool
) -> None:
    with pytest.raises(ConfigError, match=r"^--before: date out of range: ") as raised:
        parse_when(value, end_of_day=end, option="--before")
    assert "\n" not in str(raised.value)


@pytest.mark.parametrize("value", ["12", "-1", "1", "0", "+3", "123", "12345", "0000", " 7 "])
def test_a_bare_number_that_is_not_a_year_is_not_a_date(value: str) -> None:
    with pytest.raises(ConfigError, match=r"^--as-of: .* is not a date"):
        parse_when(value, option="--as-of", now=NOW)


@pytest.mark.parametrize(
    "value",
    [
        datetime(9999, 12, 31, 23, 59, tzinfo=timezone(timedelta(hours=-10))),
        datetime(1, 1, 1, tzinfo=timezone(timedelta(hours=14))),
    ],
)
def test_the_store_refuses_an_instant_it_cannot_hold_in_utc(value: datetime) -> None:
    with pytest.raises(ConfigError, match="date out of range"):
        to_utc(value)
