"""``--after`` / ``--before`` values: ISO dates or datetimes, parsed once at the edge.

A bare date (``2024-05-01`` or ``20240501``) is a whole day: ``--after 2024-05-01`` starts
at its first instant and ``--before 2024-05-31`` takes in all of that day; a datetime is
included too (``--before 2024-05-31T12:00`` keeps an exchange stamped 12:00). A search's
``before`` is exclusive, so the upper bound is the first instant after the day or instant
named. Values without a timezone are UTC; the result is always timezone-aware.
"""

from __future__ import annotations

from datetime import UTC, date, datetime, time, timedelta

from memoir.errors import ConfigError

__all__ = ["parse_when"]


def parse_when(value: str, *, end_of_day: bool = False, option: str = "date") -> datetime:
    """Parse an ISO date or datetime (``Z`` allowed); raise ConfigError naming ``option``.
    ``end_of_day``: the value is an upper bound — return the first instant after it."""
    text = value.strip()
    if not text:
        raise ConfigError(f"{option}: empty date; use YYYY-MM-DD or an ISO datetime")
    try:
        try:
            day: date | None = date.fromisoformat(text)
        except ValueError:
            day = None
        if day is not None:
            start = datetime.combine(day, time.min, tzinfo=UTC)
            return start + timedelta(days=1) if end_of_day else start
        parsed = datetime.fromisoformat(text.replace("Z", "+00:00").replace("z", "+00:00"))
    except ValueError:
        raise ConfigError(
            f"{option}: {value!r} is not a date; use YYYY-MM-DD or an ISO datetime "
            "such as 2024-05-01T14:30"
        ) from None
    parsed = parsed.replace(tzinfo=UTC) if parsed.tzinfo is None else parsed
    return parsed + timedelta(microseconds=1) if end_of_day else parsed
