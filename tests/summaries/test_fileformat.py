"""The summary file format: episodic-memory's on-disk forms, old and new."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from memoir.summaries.state import (
    Coverage,
    Failure,
    SummaryKind,
    SummaryState,
    format_error_sentinel,
    format_summary_file,
    parse_summary_file,
)

LEGACY_ISO_MS = 1780826400000  # 2026-06-07T10:00:00.000Z


@pytest.mark.parametrize(
    ("content", "kind", "body", "coverage", "failure", "message"),
    [
        (None, SummaryKind.MISSING, "", None, None, None),
        ("", SummaryKind.EMPTY, "", None, None, None),
        (
            '__COVERAGE__ {"bytes":8237,"lastExchange":"2025-09-19T17:36:33.487Z","schema":1}\n'
            "About X.",
            SummaryKind.REAL,
            "About X.",
            Coverage(8237, "2025-09-19T17:36:33.487Z", 1),
            None,
            None,
        ),
        (
            '__COVERAGE__ {"bytes":10,"schema":1,"resummary":{"attempts":2,"lastAttempt":99}}\nB',
            SummaryKind.REAL,
            "B",
            Coverage(10, None, 1),
            Failure(2, 99),
            None,
        ),
        (  # an unreadable resummary field is retried, never lost
            '__COVERAGE__ {"bytes":10,"schema":1,"resummary":"x"}\nB',
            SummaryKind.REAL,
            "B",
            Coverage(10),
            Failure(0, 0),
            None,
        ),
        ('__COVERAGE__ {"bytes":5,"schema":1}', SummaryKind.REAL, "", Coverage(5), None, None),
        (
            "A legacy summary.\nSecond line.",
            SummaryKind.LEGACY,
            "A legacy summary.\nSecond line.",
            None,
            None,
            None,
        ),
        # corrupt header JSON → legacy, header stripped (never leaked into the body)
        ("__COVERAGE__ {not json\nKept body", SummaryKind.LEGACY, "Kept body", None, None, None),
        ('__COVERAGE__ {"schema":1}\nNo bytes', SummaryKind.LEGACY, "No bytes", None, None, None),
        (
            '__COVERAGE__ {"bytes":"12"}\nString bytes',
            SummaryKind.LEGACY,
            "String bytes",
            None,
            None,
            None,
        ),
        (
            '__ERRORED__\n{"attempts":2,"lastAttempt":1718040000000}\nboom\n',
            SummaryKind.ERRORED,
            "",
            None,
            Failure(2, 1718040000000),
            "boom",
        ),
        (  # legacy v1.4.2 sentinel: ISO timestamp → attempts 0, lastAttempt from it
            "__ERRORED__\n2026-06-07T10:00:00.000Z\nrate limited\n",
            SummaryKind.ERRORED,
            "",
            None,
            Failure(0, LEGACY_ISO_MS),
            "rate limited",
        ),
        ("__ERRORED__\nwhat is this\nmsg\n", SummaryKind.ERRORED, "", None, Failure(0, 0), "msg"),
        ("__ERRORED__\n{broken json\nmsg\n", SummaryKind.ERRORED, "", None, Failure(0, 0), "msg"),
        ("__ERRORED__\n", SummaryKind.ERRORED, "", None, Failure(0, 0), ""),
        ("__ERRORED__", SummaryKind.ERRORED, "", None, Failure(0, 0), ""),
    ],
)
def test_parse(content, kind, body, coverage, failure, message) -> None:
    state = parse_summary_file(content)
    assert (state.kind, state.body, state.coverage, state.failure) == (
        kind,
        body,
        coverage,
        failure,
    )
    if message is not None:
        assert state.message == message


def test_header_is_byte_compatible_with_episodic_memory() -> None:
    state = SummaryState.real("Body.", 8237, "2025-09-19T17:36:33.487Z")
    assert format_summary_file(state) == (
        '__COVERAGE__ {"bytes":8237,"lastExchange":"2025-09-19T17:36:33.487Z","schema":1}\nBody.'
    )


def test_failed_resummary_adds_field_and_success_drops_it() -> None:
    state = SummaryState.real("Body.", 100).failed_once_more(1718040000000, "boom")
    text = format_summary_file(state)
    assert text.startswith(
        '__COVERAGE__ {"bytes":100,"schema":1,'
        '"resummary":{"attempts":1,"lastAttempt":1718040000000}}\n'
    )
    assert parse_summary_file(text).body == "Body."
    assert "resummary" not in format_summary_file(SummaryState.real("New.", 200))


def test_sentinel_form() -> None:
    assert format_error_sentinel(Failure(2, 1718040000000), "boom") == (
        '__ERRORED__\n{"attempts":2,"lastAttempt":1718040000000}\nboom\n'
    )


def test_legacy_sentinel_is_rewritten_in_the_new_form_on_its_next_failure() -> None:
    old = parse_summary_file("__ERRORED__\n2026-06-07T10:00:00.000Z\nfirst\n")
    again = old.failed_once_more(LEGACY_ISO_MS + 5, "second")
    assert (
        format_summary_file(again)
        == '__ERRORED__\n{"attempts":1,"lastAttempt":1780826400005}\nsecond\n'
    )


def test_empty_and_missing_format() -> None:
    assert format_summary_file(SummaryState.empty()) == ""
    with pytest.raises(ValueError):
        format_summary_file(SummaryState.missing())


_text = st.text(alphabet=st.characters(blacklist_categories=("Cs",)), max_size=200)


@given(
    body=_text,
    amount=st.integers(min_value=0, max_value=2**53),
    last=st.none() | st.text(max_size=40),
    failure=st.none() | st.builds(Failure, st.integers(0, 10**6), st.integers(0, 2**53)),
)
def test_real_round_trip(body: str, amount: int, last: str | None, failure: Failure | None) -> None:
    state = SummaryState(
        SummaryKind.REAL, body=body, coverage=Coverage(amount, last), failure=failure
    )
    assert parse_summary_file(format_summary_file(state)) == state


@given(
    attempts=st.integers(0, 10**6),
    last=st.integers(0, 2**53),
    message=_text.filter(lambda m: not m.endswith("\n")),
)
def test_sentinel_round_trip(attempts: int, last: int, message: str) -> None:
    state = SummaryState.errored(attempts, last, message)
    assert parse_summary_file(format_summary_file(state)) == state


@given(content=_text)
def test_parse_never_raises_and_never_loses_a_body(content: str) -> None:
    state = parse_summary_file(content)
    if state.kind is SummaryKind.LEGACY and not content.startswith("__COVERAGE__ "):
        assert state.body == content
