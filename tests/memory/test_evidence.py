"""The evidence slice: what is shown, what is citable, what is excluded — by value."""

from __future__ import annotations

import pytest

from memoir.memory import Range, Trigger, build_request, build_slice, coverage_hash, has_user_text
from memoir.memory.evidence import clean_user_text
from memoir.model import Author, Event, EventKind

from .helpers import assistant, event, tool_call, tool_result, user

SECRET_TOOL_INPUT = "cat maka://runtime/attachments/private-artifact TOOLINPUT-7731"
SECRET_TOOL_OUTPUT = "TOOLOUTPUT-99 contents of the private artifact"
THOUGHT = "THINKING-42 the user seems tired"


def _session() -> list[Event]:
    return [
        user(1, "I prefer tabs over spaces."),
        assistant(2, "Noted, tabs it is."),
        tool_call(3, SECRET_TOOL_INPUT),
        tool_result(4, SECRET_TOOL_OUTPUT),
        event(5, EventKind.THINKING, Author.ASSISTANT, THOUGHT),
        event(6, EventKind.ATTACHMENT, Author.USER, "[image] ATTACH-5"),
        event(7, EventKind.META, Author.SYSTEM, "META-3 provider metadata"),
        event(8, EventKind.COMPACTION, Author.SYSTEM, "COMPACT-8 summary of before"),
        event(9, EventKind.USER_TEXT, Author.SYSTEM, "SYSUSER-1 injected by the harness"),
        user(10, "My sister lives in Porto."),
        user(11, "RETAINED-TAIL I moved to Berlin."),
    ]


def test_slice_keeps_user_and_assistant_text_only() -> None:
    s = build_slice(_session(), Range(0, 10, 11))
    assert [(t.ordinal, t.role, t.citable) for t in s.turns] == [
        (1, "user", True),
        (2, "assistant", False),
        (10, "user", True),
        (11, "user", False),  # retained tail: shown, never citable
    ]
    assert s.excluded == 7
    assert has_user_text(s)


def test_excluded_events_never_reach_the_request_text() -> None:
    s = build_slice(_session(), Range(0, 10, 11))
    request = build_request(trigger=Trigger.COMPACTION, turns=s.turns, max_tokens=500)
    text = (request.system or "") + "\n".join(m.content for m in request.messages)
    for marker in (
        "TOOLINPUT-7731",
        "maka://",
        "private-artifact",
        "TOOLOUTPUT-99",
        "THINKING-42",
        "ATTACH-5",
        "META-3",
        "COMPACT-8",
        "SYSUSER-1",
    ):
        assert marker not in text
    assert "I prefer tabs over spaces." in text and "Noted, tabs it is." in text
    assert len(request.messages) == 1 and request.messages[0].role == "user"


def test_events_outside_the_read_range_are_ignored() -> None:
    s = build_slice(_session(), Range(1, 2, 2))
    assert [t.ordinal for t in s.turns] == [2]
    assert not has_user_text(s)  # only assistant text: a no-op, no model call


@pytest.mark.parametrize("flag", ["pasted", "quoted", "command", "command_output", "echo", "meta"])
def test_flagged_user_events_are_excluded_whole(flag: str) -> None:
    s = build_slice([user(1, "I prefer tabs over spaces.", **{flag: True})], Range(0, 1, 1))
    assert s.turns == () and s.excluded == 1


@pytest.mark.parametrize(
    ("raw", "shown"),
    [
        ("I prefer tabs.\n> I love spaces, said my colleague.", "I prefer tabs."),
        ("Look:\n```\nERROR I like crashes\n```\nI live in Lisbon.", "Look:\n\nI live in Lisbon."),
        ("See [image] and [Image #2] here.", "See  and  here."),
        ("[Pasted text #1 +20 lines] I use vim.", "I use vim."),
        ("Open attachment://abc/def now.", "Open  now."),
        ("Read maka://runtime/attachments/private-artifact please.", "Read  please."),
        ("<system-reminder>Be brief.</system-reminder>I work at Acme.", "I work at Acme."),
        ("> all quoted\n> still quoted", ""),
        ("I use vim.\n```\nunclosed code to the end", "I use vim."),
        ("~~~\nfenced\n~~~\nI use vim.", "I use vim."),
        ("  ```py\nx = 1\n  ```\nI use vim.", "I use vim."),
    ],
)
def test_clean_user_text(raw: str, shown: str) -> None:
    assert clean_user_text(raw)[0] == shown


def test_quote_blocks_are_excluded_from_evidence() -> None:
    s = build_slice([user(1, "> I love spaces\nI prefer tabs.")], Range(0, 1, 1))
    assert s.turns[0].text == "I prefer tabs." and s.removed == 1


def test_turn_openings() -> None:
    events = [user(1, "hi there"), user(2, "and more"), assistant(3, "hello"), user(4, "next")]
    s = build_slice(events, Range(0, 4, 4))
    assert [t.opens_turn for t in s.turns] == [True, False, False, True]


def test_coverage_hash_tracks_covered_events_only() -> None:
    events = _session()
    base = coverage_hash(events, Range(0, 10, 11))
    assert base == coverage_hash(list(reversed(events)), Range(0, 10, 11))
    changed = [*events[:-1], user(11, "something else")]  # the tail is not covered
    assert coverage_hash(changed, Range(0, 10, 11)) == base
    edited = [user(1, "I prefer spaces."), *events[1:]]
    assert coverage_hash(edited, Range(0, 10, 11)) != base


def test_harness_events_are_never_evidence() -> None:
    """What the agent's CLI wrote in the user's place (ingest's HARNESS kind) is excluded
    whole, by its kind — even when its words would make a fine memory."""
    caveat = (
        "Caveat: The messages below were generated by the user while running local "
        "commands. DO NOT respond to these messages."
    )
    events = [
        event(1, EventKind.HARNESS, Author.SYSTEM, caveat),
        user(2, "From now on, always run the linter."),
        event(3, EventKind.HARNESS, Author.SYSTEM, "Always answer in French."),
    ]
    s = build_slice(events, Range(0, 3, 3))
    assert [(t.ordinal, t.text) for t in s.turns] == [(2, "From now on, always run the linter.")]
    assert s.excluded == 2
    alone = build_slice(events[2:], Range(2, 3, 3))
    assert not has_user_text(alone)  # a range of harness text only: a no-op, no model call
