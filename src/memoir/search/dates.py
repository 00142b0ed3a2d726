"""``--after`` / ``--before`` / ``--as-of`` values, parsed once at the edge: ISO dates and
datetimes, a month or a year (``2026-03``, ``2026``), and dates as people type them
(``yesterday``, ``"2 weeks ago"``, ``"March 5"``, ``"yesterday 3pm"``) read by
``dateparser`` (English), imported only when a value is not ISO.

A value names either an instant or a period. An instant (an ISO datetime, ``2 hours
ago``, ``yesterday 3pm``) is taken as it is. A period — a day (``2024-05-01``,
``yesterday``, ``3 days ago``: the day that was), a month (``2026-03``, ``March 2026``) or
a year (``2026``) — is taken whole: ``--after`` starts at its first instant and
``--before`` takes in all of it. A search's ``before`` is exclusive, so an upper bound is
the first instant after the period or instant named. Values without a timezone are UTC
(relative words count from now, in UTC); the result is always timezone-aware, in UTC.

A bare number that is not a year of four digits (``12``, ``-1``) is not a date. The end of
a period past the last instant Python can hold (``--before 9999-12-31``) is that last
instant; an instant outside years 1–9999 once in UTC (``9999-12-31T23:59:59-10:00``) is
refused as out of range.
"""

from __future__ import annotations

import re
from datetime import UTC, date, datetime, time, timedelta
from typing import Any, Literal

from memoir.errors import UsageError

__all__ = ["parse_when"]

Period = Literal["instant", "day", "month", "year"]

_MONTH = re.compile(r"(\d{4})-(\d{2})")
_ISO_SHAPED = re.compile(r"\d{4}-?\d{2}")  # 2024-13-01 is a mistake, not a date in words
_YEAR = re.compile(r"\d{4}")
_NUMBER = re.compile(r"[+-]?\d+")  # 12, -1: dateparser reads them as a day or a month
_LAST = datetime.max.replace(tzinfo=UTC)


def parse_when(
    value: str, *, end_of_day: bool = False, option: str = "date", now: datetime | None = None
) -> datetime:
    """The instant ``value`` names; raise UsageError naming ``option``. ``end_of_day``:
    the value is an upper bound — return the first instant after it (after the whole
    period when it names one). ``now``: what relative words count from (default: now)."""
    text = value.strip()
    if not text:
        raise UsageError(f"{option}: empty date; use YYYY-MM-DD, an ISO datetime or words")
    start, period = _read(text, now)
    if start is None:
        raise UsageError(
            f"{option}: {value!r} is not a date; use YYYY-MM-DD, YYYY-MM, an ISO datetime "
            "such as 2024-05-01T14:30, or words such as yesterday or '2 weeks ago'"
        )
    try:
        start = start.replace(tzinfo=UTC) if start.tzinfo is None else start.astimezone(UTC)
    except (OverflowError, ValueError) as exc:  # year 0 or 10000 once in UTC
        raise UsageError(
            f"{option}: date out of range: {value!r} falls outside the years 1 to 9999 in UTC"
        ) from exc
    return _after(start, period) if end_of_day else start


def _after(start: datetime, period: Period) -> datetime:
    """The first instant after the period beginning at ``start`` (UTC); the last instant
    there is when that falls past the year 9999."""
    try:
        if period == "instant":
            return start + timedelta(microseconds=1)
        if period == "day":
            return start + timedelta(days=1)
        if period == "month":
            return start.replace(year=start.year + start.month // 12, month=start.month % 12 + 1)
        return start.replace(year=start.year + 1)
    except (OverflowError, ValueError):  # past 9999-12-31: nothing is stored later
        return _LAST


def _read(text: str, now: datetime | None) -> tuple[datetime | None, Period]:
    """(first instant, what it is the start of); (None, …) for no date at all."""
    try:
        return datetime.combine(date.fromisoformat(text), time.min, tzinfo=UTC), "day"
    except ValueError:
        pass
    if month := _MONTH.fullmatch(text):
        year, number = int(month[1]), int(month[2])
        if 1 <= number <= 12:
            return datetime(year, number, 1, tzinfo=UTC), "month"
        return None, "instant"
    if _YEAR.fullmatch(text):
        if int(text) < 1:  # "0000"
            return None, "instant"
        return datetime(int(text), 1, 1, tzinfo=UTC), "year"
    if _NUMBER.fullmatch(text):
        return None, "instant"
    try:
        return datetime.fromisoformat(text.replace("Z", "+00:00").replace("z", "+00:00")), (
            "instant"
        )
    except ValueError:
        if _ISO_SHAPED.match(text):
            return None, "instant"
    return _read_words(text, now)


def _read_words(text: str, now: datetime | None) -> tuple[datetime | None, Period]:
    """A date in words, through dateparser: a time of day given → that instant; else the
    day it falls on, or the month / year when only that was named (``March 2026``)."""
    from dateparser.date import DateDataParser

    base = (now or datetime.now(UTC)).astimezone(UTC).replace(tzinfo=None)
    settings: dict[str, Any] = {
        "TIMEZONE": "UTC",
        "TO_TIMEZONE": "UTC",
        "RETURN_AS_TIMEZONE_AWARE": True,
        "RELATIVE_BASE": base,
        "PREFER_DATES_FROM": "past",
        "RETURN_TIME_AS_PERIOD": True,
    }
    try:
        found = DateDataParser(languages=["en"], settings=settings).get_date_data(text)
    except (ValueError, OverflowError):  # "year 99999": out of range, not a date
        return None, "instant"
    when = found.date_obj
    if when is None:
        return None, "instant"
    when = when.astimezone(UTC)
    if found.period == "time":
        return when, "instant"
    day = datetime.combine(when.date(), time.min, tzinfo=UTC)
    # a month or year named ("March 2026") comes at midnight; one counted back from now
    # ("a month ago") keeps now's time of day, and means the day it lands on
    named = when.time() == time.min
    if found.period == "month" and named:
        return day.replace(day=1), "month"
    if found.period == "year" and named:
        return day.replace(month=1, day=1), "year"
    return day, "day"
