"""Deterministic validation: every bound as a table."""

from __future__ import annotations

from typing import Any

import pytest

from memoir.memory import (
    EvidenceSlice,
    MemoryItem,
    Proposal,
    ProposalStatus,
    ProposedItem,
    Quote,
    Range,
    Trigger,
    build_slice,
    normalize,
    remember_precheck,
    validate_proposal,
)
from memoir.memory.validate import check_item, locate

from .helpers import assistant, item, user

LONG = "a" * 1000  # a user event long enough for the quote-length bounds
TEXT = "I prefer tabs over spaces.  My  sister\nlives in Porto."


def _slice() -> EvidenceSlice:
    events = [
        user(1, TEXT),
        assistant(2, "You prefer tabs, noted. I like spaces myself."),
        user(3, LONG + "b"),
        user(4, "Later: I moved to Berlin last year."),  # retained tail
    ]
    return build_slice(events, Range(0, 3, 4))


S = _slice()


def _check(**kw: Any) -> MemoryItem | str:
    return check_item(item(**kw), S)


def _accepted(result: MemoryItem | str) -> MemoryItem:
    assert not isinstance(result, str), result
    return result


@pytest.mark.parametrize(
    ("quote", "reason"),
    [
        ("I pr", None),  # 4 code points
        ("I p", "quote_too_short"),  # 3
        ("   I p  ", "quote_too_short"),  # whitespace does not count
        ("a" * 1000, None),
        ("a" * 1001, "quote_too_long"),
    ],
)
def test_quote_length_bounds(quote: str, reason: str | None) -> None:
    ordinal = 3 if quote.startswith("a") else 1
    result = _check(quotes=((ordinal, quote),))
    assert (result if isinstance(result, str) else None) == reason


@pytest.mark.parametrize(
    ("n", "reason"), [(0, "no_quotes"), (1, None), (8, None), (9, "too_many_quotes")]
)
def test_quote_count_bounds(n: int, reason: str | None) -> None:
    quotes = tuple((1, "I prefer tabs") for _ in range(n))
    result = _check(quotes=quotes)
    assert (result if isinstance(result, str) else None) == reason
    if reason is None:
        assert len(_accepted(result).quotes) == 1  # duplicates collapse


@pytest.mark.parametrize(
    ("n", "reason"), [(0, "no_keys"), (1, None), (16, None), (17, "too_many_keys")]
)
def test_key_count_bounds(n: int, reason: str | None) -> None:
    result = _check(keys=tuple(f"key{i}" for i in range(n)))
    assert (result if isinstance(result, str) else None) == reason


@pytest.mark.parametrize(
    ("keys", "outcome"),
    [
        (("Tabs", " tabs ", "TABS"), ("tabs",)),
        (("", "tabs"), "blank_key"),
        (("x" * 100,), ("x" * 100,)),
        (("x" * 101,), "key_too_long"),
    ],
)
def test_keys_are_normalized(keys: tuple[str, ...], outcome: object) -> None:
    result = _check(keys=keys)
    assert (result if isinstance(result, str) else result.keys) == outcome


@pytest.mark.parametrize(
    ("content", "reason"),
    [
        ("x" * 2000, None),
        ("x" * 2001, "content_too_long"),
        ("x" * 1999 + "\n\n  y", "content_too_long"),  # collapses to 2001 code points
        ("x" * 1998 + "  \n y", None),  # collapses to 2000
        ("   ", "empty_content"),
        ("e\u0301" * 1500, None),  # NFC: 1500 code points, not 3000
    ],
)
def test_content_bounds(content: str, reason: str | None) -> None:
    result = _check(content=content)
    assert (result if isinstance(result, str) else None) == reason


@pytest.mark.parametrize(
    ("fields", "reason"),
    [
        ({"kind": "fact"}, None),
        ({"kind": "constraint"}, None),
        ({"kind": "opinion"}, "invalid_kind"),
        ({"scope": "project"}, None),
        ({"scope": "team"}, "invalid_scope"),
        ({"temporal": "sometimes"}, "invalid_temporal"),
        ({"temporal": "point", "start": "2024-05-01"}, None),
        ({"temporal": "point", "start": "2024-13-01"}, "invalid_date"),
        ({"temporal": "point", "start": "May 1st"}, "invalid_date"),
        ({"temporal": "point"}, "point_needs_start_only"),
        (
            {"temporal": "interval", "start": "2024-05-01", "end": "2024-04-30"},
            "interval_start_after_end",
        ),
        ({"temporal": "interval", "start": "2024-05-01", "end": "2024-05-01"}, None),
        ({"temporal": "open_ended", "end": "2025-01-01"}, None),
        ({"temporal": "undated", "start": "2024-05-01"}, "undated_with_dates"),
    ],
)
def test_kind_scope_temporal(fields: dict[str, str], reason: str | None) -> None:
    result = _check(**fields)
    assert (result if isinstance(result, str) else None) == reason


@pytest.mark.parametrize(
    ("quote", "outcome"),
    [
        ((1, "I prefer tabs over spaces."), "I prefer tabs over spaces."),
        # whitespace collapse both ways: the accepted quote is the event's exact text
        ((1, "My sister lives in Porto."), "My  sister\nlives in Porto."),
        ((1, "spaces. My sister"), "spaces.  My  sister"),
        ((1, "i prefer tabs"), "quote_not_found"),  # case is not normalized
        ((1, "I prefer tabs over tabs"), "quote_not_found"),
        ((2, "I like spaces myself"), "quote_not_user_text"),  # assistant text
        ((4, "I moved to Berlin"), "quote_context_only"),  # the retained tail
        ((9, "I prefer tabs"), "quote_unknown_event"),
        ((3, "I prefer tabs"), "quote_not_found"),  # words of another event
    ],
)
def test_quote_must_be_citable_user_text(quote: tuple[int, str], outcome: str) -> None:
    result = _check(quotes=(quote,))
    got = result if isinstance(result, str) else result.quotes[0].text
    assert got == outcome


def test_nfc_matching_returns_the_exact_event_text() -> None:
    decomposed = "Je pre\u0301fe\u0300re le cafe\u0301 noir."
    s = build_slice([user(1, decomposed)], Range(0, 1, 1))
    composed = normalize(decomposed)
    assert composed != decomposed
    result = check_item(item(quotes=((1, "le caf\u00e9 noir"),)), s)
    assert not isinstance(result, str)
    assert result.quotes[0].text == "le cafe\u0301 noir"
    assert result.quotes[0].text in decomposed


@pytest.mark.parametrize(
    ("quote", "text", "found"),
    [
        ("a b", "x a \t\n b y", "a \t\n b"),
        ("a b", "ab", None),
        ("", "anything", None),
        ("ab", "xaby", "ab"),
    ],
)
def test_locate(quote: str, text: str, found: str | None) -> None:
    assert locate(quote, text) == found


@pytest.mark.parametrize(
    ("content", "event_text", "quote"),
    [
        ("The user's key is AKIAIOSFODNN7EXAMPLE.", "I prefer tabs", "I prefer tabs"),
        (
            "The user stores a database URL.",
            "my db is postgres://bob:hunter2pass@db/x ok",
            "postgres://bob:hunter2pass@db/x",
        ),
    ],
)
def test_secrets_reject_the_item(content: str, event_text: str, quote: str) -> None:
    s = build_slice([user(1, event_text)], Range(0, 1, 1))
    assert check_item(item(content=content, quotes=((1, quote),)), s) == "sensitive_information"


GOOD = item()
BAD = item(quotes=((2, "I like spaces myself"),))  # cites assistant text
TAIL = item(content="The user moved to Berlin.", quotes=((4, "I moved to Berlin"),))


@pytest.mark.parametrize(
    ("trigger", "items", "incidental", "failed", "accepted", "dropped"),
    [
        (Trigger.REMEMBER, (GOOD,), (), False, 1, 0),
        (Trigger.REMEMBER, (GOOD, BAD), (), True, 1, 0),  # a requested item fails the range
        (Trigger.EXTRACT, (BAD,), (), True, 0, 0),
        (Trigger.REMEMBER, (GOOD,), (BAD,), False, 1, 1),  # incidental: dropped, counted
        (Trigger.REMEMBER, (GOOD,), (TAIL,), False, 1, 1),  # incidental citing context only
        (Trigger.COMPACTION, (GOOD, BAD), (), False, 1, 1),  # nothing requested
        (Trigger.INCIDENTAL, (BAD, TAIL), (), False, 0, 2),
        (Trigger.REMEMBER, (GOOD, GOOD), (), False, 1, 1),  # a duplicate never fails
    ],
)
def test_range_fails_only_on_requested_items(
    trigger: Trigger,
    items: tuple[ProposedItem, ...],
    incidental: tuple[ProposedItem, ...],
    failed: bool,
    accepted: int,
    dropped: int,
) -> None:
    status = ProposalStatus.COMPLETE
    v = validate_proposal(Proposal(status, items, incidental), S, trigger)
    assert (v.failed, len(v.accepted), v.dropped) == (failed, accepted, dropped)
    assert (v.failure_reason is not None) is failed


def test_accepted_item_values() -> None:
    v = validate_proposal(Proposal(ProposalStatus.COMPLETE, (GOOD,), (GOOD,)), S, Trigger.REMEMBER)
    (accepted,) = v.accepted
    assert accepted.quotes == (Quote(1, "I prefer tabs"),)
    assert accepted.kind.value == "preference" and not accepted.incidental
    assert [r.reason for r in v.rejected] == ["duplicate_item"]


@pytest.mark.parametrize(
    ("text", "reason"),
    [
        ("Please remember that I prefer tabs.", None),
        ("Remember my AWS key AKIAIOSFODNN7EXAMPLE", "sensitive_information"),
        ("remember: DB_PASSWORD=s3cr3tV4lue", "sensitive_information"),
        ("   ", "no_user_text"),
        (None, "no_user_text"),
    ],
)
def test_remember_precheck(text: str | None, reason: str | None) -> None:
    assert remember_precheck(text) == reason
