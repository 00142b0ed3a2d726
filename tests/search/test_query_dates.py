"""Dates written in search queries: forms, refusals, phrase removal and span membership."""

from __future__ import annotations

from datetime import UTC, date, datetime, timedelta, timezone

import pytest
from hypothesis import given
from hypothesis import strategies as st

from memoir.search.ranking import SLACK, DateSpan, query_dates, span_contains


def utc(y: int, m: int, d: int, hour: int = 0, minute: int = 0) -> datetime:
    return datetime(y, m, d, hour, minute, tzinfo=UTC)


def day(y: int, m: int, d: int, text: str) -> DateSpan:
    start = utc(y, m, d)
    return DateSpan(start, start + timedelta(days=1), text)


def month(y: int, m: int, text: str) -> DateSpan:
    end = utc(y + 1, 1, 1) if m == 12 else utc(y, m + 1, 1)
    return DateSpan(utc(y, m, 1), end, text)


def year(y: int, text: str) -> DateSpan:
    return DateSpan(utc(y, 1, 1), utc(y + 1, 1, 1), text)


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        # day, month, year
        ("31 July, 2023", day(2023, 7, 31, "31 July, 2023")),
        ("31 July 2023", day(2023, 7, 31, "31 July 2023")),
        ("31st of July 2023", day(2023, 7, 31, "31st of July 2023")),
        ("1st Jan 2024", day(2024, 1, 1, "1st Jan 2024")),
        ("2nd Feb. 2024", day(2024, 2, 2, "2nd Feb. 2024")),
        ("3rd of march, 2024", day(2024, 3, 3, "3rd of march, 2024")),
        ("29 February 2024", day(2024, 2, 29, "29 February 2024")),
        ("4TH SEPT 2023", day(2023, 9, 4, "4TH SEPT 2023")),
        ("05 Sep. 2023", day(2023, 9, 5, "05 Sep. 2023")),
        # month, day, year
        ("July 31, 2023", day(2023, 7, 31, "July 31, 2023")),
        ("Jul 31 2023", day(2023, 7, 31, "Jul 31 2023")),
        ("Jul. 31st, 2023", day(2023, 7, 31, "Jul. 31st, 2023")),
        ("december 25th 2023", day(2023, 12, 25, "december 25th 2023")),
        ("Sept 1, 2023", day(2023, 9, 1, "Sept 1, 2023")),
        ("may 3 2023", day(2023, 5, 3, "may 3 2023")),
        # ISO
        ("2024-05-01", day(2024, 5, 1, "2024-05-01")),
        ("2024-05-01T14:30", day(2024, 5, 1, "2024-05-01T14:30")),
        ("2024-05-01T14:30:59Z", day(2024, 5, 1, "2024-05-01T14:30:59Z")),
        ("2024-05-01 23:59:59.5+02:00", day(2024, 5, 1, "2024-05-01 23:59:59.5+02:00")),
        ("1999-12-31", day(1999, 12, 31, "1999-12-31")),
        # month and year
        ("July 2023", month(2023, 7, "July 2023")),
        ("July, 2023", month(2023, 7, "July, 2023")),
        ("Dec 2023", month(2023, 12, "Dec 2023")),
        ("Sept. 2023", month(2023, 9, "Sept. 2023")),
        ("FEBRUARY 2024", month(2024, 2, "FEBRUARY 2024")),
        ("nov, 1999", month(1999, 11, "nov, 1999")),
        # bare year
        ("2023", year(2023, "2023")),
        ("1970", year(1970, "1970")),
        ("2099", year(2099, "2099")),
    ],
)
def test_each_form_alone_is_one_span(query: str, expected: DateSpan) -> None:
    assert query_dates(query) == (expected,)
    assert query_dates(f"what happened on {query}?") == (expected,)


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        (
            "what did Maria donate in December 2023?",
            (month(2023, 12, "December 2023"),),
        ),
        ("what did we decide on 3 June, 2023", (day(2023, 6, 3, "3 June, 2023"),)),
        ("the bug from 2024-05-01", (day(2024, 5, 1, "2024-05-01"),)),
        (
            "between 2022 and March 2023, then 2024-01-02",
            (
                year(2022, "2022"),
                month(2023, 3, "March 2023"),
                day(2024, 1, 2, "2024-01-02"),
            ),
        ),
        # the same span twice is reported once, at its first appearance
        ("2023 or 2023 again", (year(2023, "2023"),)),
        ("July 2023 vs july 2023", (month(2023, 7, "July 2023"),)),
        # a day inside its month and year is still only the day
        (
            "31 July 2023 in July 2023",
            (day(2023, 7, 31, "31 July 2023"), month(2023, 7, "July 2023")),
        ),
        ("in 2019.", (year(2019, "2019"),)),
        ("(2019)", (year(2019, "2019"),)),
    ],
)
def test_dates_in_sentences(query: str, expected: tuple[DateSpan, ...]) -> None:
    assert query_dates(query) == expected


@pytest.mark.parametrize(
    "query",
    [
        "",
        "what did we talk about",
        # month and day without a year: no reference "now" to supply one
        "July 31",
        "31st of July",
        "on Jul 4th",
        # relative phrases
        "yesterday",
        "last week",
        "two days ago",
        # impossible dates yield nothing, not even a month or year from their parts
        "31 February 2023",
        "February 30, 2023",
        "29 Feb 2023",
        "2023-13-01",
        "2023-02-30",
        "2023-00-10",
        "0 July 2023",
        # numbers that are not years
        "3000 words",
        "port 5432",
        "1969",
        "2100",
        "12345",
        "v2023",
        "2023x",
        "#2023",
        "$2000",
        "1.2023",
        "2023.5",
        "10:2023",
        "a/2023/b",
        "2023-05",
        "2024-05-01-extra",
        "2024-5-1",
        # out-of-range years in full forms
        "20 July 1969",
        "July 1969",
        "2100-01-01",
        # month words that are not followed by a year
        "march on",
        "marching on 31",
    ],
)
def test_no_span(query: str) -> None:
    assert query_dates(query) == ()


SPANS = (day(2024, 5, 1, "2024-05-01"),)


@pytest.mark.parametrize(
    ("when", "slack", "expected"),
    [
        (utc(2024, 5, 1, 12), timedelta(0), True),  # inside
        (utc(2024, 5, 1), timedelta(0), True),  # exactly at start
        (utc(2024, 5, 2), timedelta(0), False),  # exactly at end: exclusive
        (utc(2024, 4, 30, 23, 59), timedelta(0), False),  # just before start
        (utc(2024, 4, 24), SLACK, True),  # start - slack, inclusive
        (utc(2024, 4, 23, 23, 59), SLACK, False),  # beyond slack before
        (utc(2024, 5, 8, 23, 59), SLACK, True),  # within slack after
        (utc(2024, 5, 9), SLACK, False),  # end + slack: exclusive
        (utc(2024, 6, 1), SLACK, False),  # far beyond
        (datetime(2024, 5, 1, 12), timedelta(0), True),  # naive is UTC
        (datetime(2024, 5, 2), timedelta(0), False),  # naive at end
        (datetime(2024, 5, 1, 23, 30, tzinfo=timezone(timedelta(hours=2))), timedelta(0), True),
        (datetime(2024, 5, 2, 1, 30, tzinfo=timezone(timedelta(hours=2))), timedelta(0), True),
        (datetime(2024, 5, 2, 2, 30, tzinfo=timezone(timedelta(hours=2))), timedelta(0), False),
        (None, SLACK, False),
    ],
)
def test_span_contains(when: datetime | None, slack: timedelta, expected: bool) -> None:
    assert span_contains(SPANS, when, slack) is expected


def test_span_contains_default_slack_and_many_spans() -> None:
    assert timedelta(days=7) == SLACK
    assert span_contains(SPANS, utc(2024, 5, 8)) is True
    assert span_contains(SPANS, utc(2024, 5, 9)) is False
    assert span_contains((), utc(2024, 5, 1)) is False
    spans = query_dates("2019 or March 2023")
    assert span_contains(spans, utc(2019, 6, 1), timedelta(0)) is True
    assert span_contains(spans, utc(2023, 3, 31, 23), timedelta(0)) is True
    assert span_contains(spans, utc(2021, 6, 1), timedelta(0)) is False


MONTH_NAMES = [
    ("January", "Jan"),
    ("February", "Feb"),
    ("March", "Mar"),
    ("April", "Apr"),
    ("May", "May"),
    ("June", "Jun"),
    ("July", "Jul"),
    ("August", "Aug"),
    ("September", "Sep"),
    ("October", "Oct"),
    ("November", "Nov"),
    ("December", "Dec"),
]


@given(
    st.dates(min_value=date(1970, 1, 1), max_value=date(2099, 12, 31)),
    st.sampled_from(["{d} {M} {y}", "{d}th of {m} {y}", "{M} {d}, {y}", "{y:04}-{mo:02}-{d:02}"]),
    st.booleans(),
)
def test_every_real_day_round_trips(when: date, form: str, upper: bool) -> None:
    full, abbr = MONTH_NAMES[when.month - 1]
    dotted = abbr if abbr == "May" else abbr + "."
    text = form.format(d=when.day, M=full, m=dotted, y=when.year, mo=when.month)
    text = text.upper() if upper else text
    start = datetime(when.year, when.month, when.day, tzinfo=UTC)
    assert query_dates(f"did we {text} x") == (DateSpan(start, start + timedelta(days=1), text),)


DATEISH = st.lists(
    st.sampled_from(
        ["31", "1st", "of", "July", "Sept.", "may", ",", " ", "2023", "1969", "-", "05", "T14:30"]
    ).map(lambda s: s + " ")
    | st.text(max_size=6),
    max_size=12,
).map("".join)


@given(st.one_of(st.text(), DATEISH))
def test_any_text_is_safe(query: str) -> None:
    spans = query_dates(query)
    for span in spans:
        assert span.start < span.end
        assert span.start.tzinfo is not None and span.end.tzinfo is not None
        assert span.start.utcoffset() == timedelta(0)
        assert span.text in query
    assert len({(s.start, s.end) for s in spans}) == len(spans)
    assert span_contains(spans, None) is False
