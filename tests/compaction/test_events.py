"""Memoir events as chat messages: always a valid sequence, positions are ordinals."""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from memoir.compaction import Compactor, messages_from_events, validate_sequence
from memoir.llm import ScriptedModel
from memoir.model import Author, Event, EventKind

from .helpers import GOOD, FakeStore, big_text

KINDS = {
    EventKind.USER_TEXT: Author.USER,
    EventKind.ASSISTANT_TEXT: Author.ASSISTANT,
    EventKind.TOOL_CALL: Author.ASSISTANT,
    EventKind.TOOL_RESULT: Author.TOOL,
    EventKind.THINKING: Author.ASSISTANT,
    EventKind.META: Author.SYSTEM,
}


def ev(ordinal: int, kind: EventKind, text: str = "", call_id: str | None = None) -> Event:
    return Event(
        session_id="s",
        ordinal=ordinal,
        kind=kind,
        author=KINDS[kind],
        text=text,
        tool_name="read_file" if call_id else None,
        call_id=call_id,
        payload={"input": {"path": "a.py"}} if kind == EventKind.TOOL_CALL else {},
    )


def test_a_claude_code_like_turn() -> None:
    events = [
        ev(1, EventKind.META, "summary line"),
        ev(2, EventKind.USER_TEXT, "fix the bug"),
        ev(3, EventKind.THINKING, "hmm"),
        ev(4, EventKind.ASSISTANT_TEXT, "Looking."),
        ev(5, EventKind.TOOL_CALL, call_id="t1"),
        ev(6, EventKind.TOOL_CALL, call_id="t2"),
        ev(7, EventKind.TOOL_RESULT, "contents", call_id="t2"),
        ev(8, EventKind.TOOL_RESULT, "contents", call_id="t1"),
        ev(9, EventKind.ASSISTANT_TEXT, "Fixed."),
        ev(10, EventKind.USER_TEXT, "thanks"),
        ev(11, EventKind.USER_TEXT, "one more thing"),
    ]
    h = messages_from_events(events)
    assert [m["role"] for m in h.messages] == [
        "user",
        "assistant",
        "tool",
        "tool",
        "assistant",
        "user",
    ]
    assert h.positions == [2, 6, 7, 8, 9, 11]
    assert h.messages[1]["content"] == "Looking."
    assert [c["id"] for c in h.messages[1]["tool_calls"]] == ["t1", "t2"]
    assert h.messages[1]["tool_calls"][0]["function"]["arguments"] == '{"path": "a.py"}'
    assert h.messages[-1]["content"] == "thanks\n\none more thing"
    assert validate_sequence(h.messages) == []


def test_interrupted_and_orphaned_tool_events_are_repaired() -> None:
    events = [
        ev(1, EventKind.USER_TEXT, "go"),
        ev(2, EventKind.TOOL_CALL, call_id="never-answered"),
        ev(3, EventKind.USER_TEXT, "stop, do this instead"),
        ev(4, EventKind.TOOL_RESULT, "late", call_id="never-answered"),
        ev(5, EventKind.TOOL_RESULT, "orphan", call_id="unknown"),
        ev(6, EventKind.ASSISTANT_TEXT, "OK."),
    ]
    h = messages_from_events(events)
    assert validate_sequence(h.messages) == []
    assert [m["role"] for m in h.messages] == ["user", "assistant"]
    assert h.messages[0]["content"] == "go\n\nstop, do this instead"


EVENT = st.tuples(
    st.sampled_from(list(KINDS)),
    st.sampled_from(["", "text", "数据"]),
    st.sampled_from([None, "a", "b", "c"]),
)


@settings(max_examples=300, deadline=None)
@given(st.lists(EVENT, max_size=30))
def test_any_event_list_converts_to_a_valid_sequence(raw: list[Any]) -> None:
    events = [ev(i + 1, kind, text, cid) for i, (kind, text, cid) in enumerate(raw)]
    h = messages_from_events(events)
    assert len(h.positions) == len(h.messages)
    assert h.positions == sorted(set(h.positions))
    if h.messages:
        assert validate_sequence(h.messages) == []


def test_compact_events_uses_ordinals_for_the_watermark() -> None:
    events = [ev(1, EventKind.USER_TEXT, "start the migration")]
    o = 1
    for k in range(12):
        events.append(ev(o + 1, EventKind.TOOL_CALL, call_id=f"c{k}"))
        events.append(ev(o + 2, EventKind.THINKING, "..."))
        events.append(ev(o + 3, EventKind.TOOL_RESULT, big_text(2_500, seed=k), call_id=f"c{k}"))
        o += 3
    store = FakeStore()
    res = Compactor(ScriptedModel([GOOD]), store=store).compact_events(events, window=32_000)
    assert res.strategy == "summary" and validate_sequence(res.messages) == []
    row = store.rows[0]
    assert row.session_id == "s"
    covered = next(e for e in events if e.ordinal == row.watermark)
    assert covered.kind == EventKind.TOOL_RESULT  # a unit boundary, as an event ordinal
    assert row.memory_boundary == row.watermark


def test_reused_call_ids_pair_by_occurrence() -> None:
    events = [
        ev(1, EventKind.USER_TEXT, "go"),
        ev(2, EventKind.TOOL_CALL, call_id="t1"),
        ev(3, EventKind.TOOL_RESULT, "first", call_id="t1"),
        ev(4, EventKind.ASSISTANT_TEXT, "again"),
        ev(5, EventKind.TOOL_CALL, call_id="t1"),
        ev(6, EventKind.TOOL_RESULT, "second", call_id="t1"),
    ]
    h = messages_from_events(events)
    assert validate_sequence(h.messages) == []
    assert [m.get("content") for m in h.messages if m["role"] == "tool"] == ["first", "second"]
    assert h.positions == [1, 2, 3, 5, 6]


def test_named_speakers_lead_their_words() -> None:
    """A group chat's speakers survive into the replayed messages (Anthropic's API has no
    ``name`` field, so the name leads the content), consecutive turns joined as before."""
    said = [
        (EventKind.USER_TEXT, "Back from the lake?", "Ana"),
        (EventKind.USER_TEXT, "And the tent?", "Cy"),
        (EventKind.ASSISTANT_TEXT, "Yes. It held.", "Bo"),
        (EventKind.ASSISTANT_TEXT, "Mostly.", None),
    ]
    events = [
        Event("s", n, kind, KINDS[kind], text, payload={"speaker": who} if who else {})
        for n, (kind, text, who) in enumerate(said, start=1)
    ]
    history = messages_from_events(events)
    assert history.messages == [
        {"role": "user", "content": "Ana: Back from the lake?\n\nCy: And the tent?"},
        {"role": "assistant", "content": "Bo: Yes. It held.\n\nMostly."},
    ]
    assert history.positions == [2, 4]
