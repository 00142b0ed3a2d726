"""Calendar dates written in a search query (pure): "what did Maria donate in December 2023?".

A person who names a date in a query usually wants exchanges from that time, so search can
favour them. This module only *finds* the dates; ranking decides what to do with them.

Recognised forms (case-insensitive; English month names, full or three-letter, plus "Sept";
an optional dot after an abbreviation, ordinal suffix st/nd/rd/th and comma):

* a day: ``31 July, 2023``, ``31st of July 2023``, ``July 31, 2023``, ``Jul. 31st 2023``,
  ``2024-05-01`` (an ISO time part such as ``2024-05-01T14:30`` still means that day);
* a month: ``July 2023``, ``July, 2023``;
* a year: a bare four-digit number 1970–2099 standing as a word of its own.

Deliberately not recognised: a month and day without a year ("July 31") and relative phrases
("yesterday", "last week"). Both need a reference "now", and a pure function has none; a
guessed year would quietly favour the wrong time. Years outside 1970–2099 are not dates here
(nothing Memoir stores comes from before 1970, and "3000 words" is a count), and an impossible
date ("31 February 2023", "2023-13-01") yields nothing at all — neither a day nor, from its
parts, a month or year: the text is claimed but no span is produced. Forms never overlap:
the longest form starting earliest wins, so "31 July 2023" is one day span, not also a month
and a year. Spans are UTC, ``[start, end)``.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

__all__ = ["SLACK", "DateSpan", "query_dates", "span_contains"]

SLACK = timedelta(days=7)

_MONTHS = {
    "jan": 1,
    "feb": 2,
    "mar": 3,
    "apr": 4,
    "may": 5,
    "jun": 6,
    "jul": 7,
    "aug": 8,
    "sep": 9,
    "oct": 10,
    "nov": 11,
    "dec": 12,
}
_FULL = "january february march april may june july august september october november december"
_MONTH = (
    r"(?:" + "|".join(_FULL.split()) + r"|(?:sept|jan|feb|mar|apr|jun|jul|aug|sep|oct|nov|dec)"
    r"(?:\.|\b))"
)
_DAY = r"(?P<{}>[0-9]{{1,2}})(?:st|nd|rd|th)?\b"
_YEAR = r"(?P<{}>[0-9]{{4}})\b"

# One alternation scanned left to right: at each position the first form that fits wins and
# its text is consumed, which is what keeps forms from overlapping. Longer forms come first.
_PATTERN = re.compile(
    "|".join(
        [
            # 31 July 2023, 31st of July, 2023
            r"\b" + _DAY.format("dmy_d") + r"\s+(?:of\s+)?"
            rf"(?P<dmy_m>{_MONTH}),?\s+" + _YEAR.format("dmy_y"),
            # July 31, 2023
            rf"\b(?P<mdy_m>{_MONTH})\s+" + _DAY.format("mdy_d") + r",?\s+" + _YEAR.format("mdy_y"),
            # 2024-05-01, 2024-05-01T14:30:00Z
            r"(?<![\w$€£#/:.\-])(?P<iso_y>[0-9]{4})-(?P<iso_m>[0-9]{2})-(?P<iso_d>[0-9]{2})"
            r"(?:[T ][0-9]{2}:[0-9]{2}(?::[0-9]{2}(?:\.[0-9]+)?)?(?:Z|[+-][0-9]{2}:?[0-9]{2})?)?"
            r"(?![\w\-]|[:.][0-9])",
            # July 2023, July, 2023
            rf"\b(?P<my_m>{_MONTH}),?\s+" + _YEAR.format("my_y"),
            # 2023
            r"(?<![\w$€£#/:.\-])(?P<y_y>19[7-9][0-9]|20[0-9][0-9])(?![\w\-]|[:./][0-9])",
        ]
    ),
    re.IGNORECASE,
)


@dataclass(frozen=True, slots=True)
class DateSpan:
    """A stretch of time named in a query: ``[start, end)`` in UTC, and the words naming it."""

    start: datetime
    end: datetime
    text: str


def query_dates(query: str) -> tuple[DateSpan, ...]:
    """The dates written in ``query``, in order of appearance, each distinct span once."""
    seen: set[tuple[datetime, datetime]] = set()
    out: list[DateSpan] = []
    for _, span in _found(query):
        if (span.start, span.end) not in seen:
            seen.add((span.start, span.end))
            out.append(span)
    return tuple(out)


def span_contains(
    spans: Sequence[DateSpan], when: datetime | None, slack: timedelta = SLACK
) -> bool:
    """Whether ``when`` falls in ``[start - slack, end + slack)`` of any span (naive = UTC)."""
    if when is None:
        return False
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)
    return any(span.start - slack <= when < span.end + slack for span in spans)


def _found(query: str) -> Iterator[tuple[re.Match[str], DateSpan]]:
    """Every valid date match with its span; impossible dates are consumed but skipped."""
    for match in _PATTERN.finditer(query):
        span = _span(match)
        if span is not None:
            yield match, span


def _span(match: re.Match[str]) -> DateSpan | None:
    groups = match.groupdict()
    text = match.group(0)
    if groups["dmy_y"] is not None:
        return _day(groups["dmy_y"], _month(groups["dmy_m"]), groups["dmy_d"], text)
    if groups["mdy_y"] is not None:
        return _day(groups["mdy_y"], _month(groups["mdy_m"]), groups["mdy_d"], text)
    if groups["iso_y"] is not None:
        return _day(groups["iso_y"], int(groups["iso_m"]), groups["iso_d"], text)
    if groups["my_y"] is not None:
        month = _month(groups["my_m"])
        year = int(groups["my_y"])
        if month == 0 or not _year_ok(year):
            return None
        start = datetime(year, month, 1, tzinfo=UTC)
        end = datetime(year + month // 12, month % 12 + 1, 1, tzinfo=UTC)
        return DateSpan(start, end, text)
    year = int(groups["y_y"])
    return DateSpan(datetime(year, 1, 1, tzinfo=UTC), datetime(year + 1, 1, 1, tzinfo=UTC), text)


def _day(year_text: str, month: int, day_text: str, text: str) -> DateSpan | None:
    year = int(year_text)
    if month == 0 or not _year_ok(year):
        return None
    try:
        start = datetime(year, month, int(day_text), tzinfo=UTC)
    except ValueError:
        return None
    return DateSpan(start, start + timedelta(days=1), text)


def _month(name: str) -> int:
    """Month number for a matched name, 0 when unknown (case-insensitive matching can admit
    look-alike characters such as "ſ" that no month name is spelled with)."""
    return _MONTHS.get(name.casefold().rstrip(".")[:3], 0)


def _year_ok(year: int) -> bool:
    return 1970 <= year <= 2099
