"""Named speakers: how a source's participant name is kept and shown (pure)."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from memoir.model import Author, Event, EventKind, build_exchanges, clean_speaker, spoken_text
from memoir.model.event import MAX_SPEAKER_CHARS, speaker_of

T0 = datetime(2026, 1, 1, tzinfo=UTC)


@pytest.mark.parametrize(
    ("raw", "kept"),
    [
        ("Alice", "Alice"),
        ("  planner  ", "planner"),
        ("Mary   Ann", "Mary Ann"),
        ("Bo\x00b\nby", "Bo b by"),
        ("\t\n", None),
        ("", None),
        (None, None),
        (42, None),
        ({"first": "Al"}, None),
        (["Al"], None),
        ("张三", "张三"),
        ("x" * 500, "x" * MAX_SPEAKER_CHARS),
    ],
)
def test_clean_speaker(raw: object, kept: str | None) -> None:
    assert clean_speaker(raw) == kept


def ev(n: int, kind: EventKind, author: Author, text: str, speaker: object = None) -> Event:
    payload = {} if speaker is None else {"speaker": speaker}
    return Event("s", n, kind, author, text, T0, payload=payload)


@pytest.mark.parametrize(
    ("event", "shown", "speaker"),
    [
        (ev(1, EventKind.USER_TEXT, Author.USER, "hi", "Ana"), "Ana: hi", "Ana"),
        (ev(1, EventKind.ASSISTANT_TEXT, Author.ASSISTANT, "yo", "coder"), "coder: yo", "coder"),
        (ev(1, EventKind.USER_TEXT, Author.USER, "hi"), "hi", None),
        # a name that cleans to nothing, or is not a string, shows nothing
        (ev(1, EventKind.USER_TEXT, Author.USER, "hi", " \n "), "hi", None),
        (ev(1, EventKind.USER_TEXT, Author.USER, "hi", ["Ana"]), "hi", None),
        # empty text stays empty: no dangling "Ana: "
        (ev(1, EventKind.USER_TEXT, Author.USER, "", "Ana"), "", "Ana"),
        # only messages have speakers; a tool's payload is not read as one
        (ev(1, EventKind.TOOL_RESULT, Author.TOOL, "out", "Ana"), "out", None),
    ],
)
def test_spoken_text(event: Event, shown: str, speaker: str | None) -> None:
    assert spoken_text(event) == shown
    assert speaker_of(event) == speaker


def test_exchanges_read_name_then_words() -> None:
    events = [
        ev(1, EventKind.USER_TEXT, Author.USER, "Back from the lake?", "Ana"),
        ev(2, EventKind.ASSISTANT_TEXT, Author.ASSISTANT, "Yes, we kayaked.", "Bo"),
        ev(3, EventKind.ASSISTANT_TEXT, Author.ASSISTANT, "No plan yet."),
        ev(4, EventKind.USER_TEXT, Author.USER, "Nice"),
    ]
    first, second = build_exchanges(events)
    assert first.user_text == "Ana: Back from the lake?"
    assert first.assistant_text == "Bo: Yes, we kayaked.\n\nNo plan yet."
    assert second.user_text == "Nice"
    # the events themselves keep the words alone
    assert events[0].text == "Back from the lake?"
