"""``--after`` / ``--before`` values: ISO dates or datetimes, parsed once at the edge.

A bare date is a whole day: ``--after 2024-05-01`` starts at its first instant and
``--before 2024-05-31`` ends at its last, so both bounds include the day named. Values
without a timezone are UTC; the result is always timezone-aware.
"""

from __future__ import annotations

from datetime import UTC, date, datetime, time, timedelta

from memoir.errors import ConfigError

__all__ = ["parse_when"]


def parse_when(value: str, *, end_of_day: bool = False, option: str = "date") -> datetime:
    """Parse an ISO date or datetime (``Z`` allowed); raise ConfigError naming ``option``."""
    text = value.strip()
    if not text:
        raise ConfigError(f"{option}: empty date; use YYYY-MM-DD or an ISO datetime")
    try:
        if len(text) == 10 and text[4] == "-" and text[7] == "-":
            day = date.fromisoformat(text)
            start = datetime.combine(day, time.min, tzinfo=UTC)
            return start + timedelta(days=1, microseconds=-1) if end_of_day else start
        parsed = datetime.fromisoformat(text.replace("Z", "+00:00").replace("z", "+00:00"))
    except ValueError:
        raise ConfigError(
            f"{option}: {value!r} is not a date; use YYYY-MM-DD or an ISO datetime "
            "such as 2024-05-01T14:30"
        ) from None
    return parsed.replace(tzinfo=UTC) if parsed.tzinfo is None else parsed
