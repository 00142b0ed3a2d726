"""Bad input never loses data: each case is skipped (or bounded), counted, and the good
lines before and after it are kept. Reader level here; through sync in test_ingest_sync."""

from __future__ import annotations

import json

import pytest

from memoir.demo import ClaudeWriter
from memoir.ingest.discover import Format
from memoir.ingest.reader import read_bytes
from memoir.model import EventKind

SID = "11111111-2222-4333-8444-555555555555"


def _around(bad: bytes) -> bytes:
    before = ClaudeWriter(SID).user("good line before").bytes()
    after = ClaudeWriter(SID).user("good line after").bytes()
    return before + bad + b"\n" + after


@pytest.mark.parametrize(
    ("bad", "reason"),
    [
        (b'{"type":"user","message":{"role":"user","content":"unterminated', "malformed_json"),
        (b"\xff\xfe not json \xc3", "invalid_utf8"),
        (b"\x00\x00\x00\x00", "binary"),
        (b'{"type":"brand-new-record","x":1}', "unknown_type"),
        (b"[1, 2, 3]", "unknown_type"),
        # deeper than orjson's 1024 levels and the stdlib parser's recursion limit
        (b'{"type":"progress","x":' + b"[" * 1500 + b"]" * 1500 + b"}", "malformed_json"),
        (b'{"type":["user"],"x":1}', "unknown_type"),
    ],
)
def test_bad_line_is_counted_and_neighbours_kept(bad: bytes, reason: str) -> None:
    data = _around(bad)
    result = read_bytes(data, Format.CLAUDE, session_id=SID, path="t.jsonl")
    assert [e.text for e in result.events] == ["good line before", "good line after"]
    assert [(s.reason, s.line, s.path) for s in result.skipped] == [(reason, 2, "t.jsonl")]
    assert result.skipped[0].offset == data.index(bad)
    assert result.offset == len(data)


def test_invalid_utf8_inside_valid_json_is_kept_with_replacement() -> None:
    record = ClaudeWriter(SID).user("café PLACEHOLDER").records[0]
    raw = json.dumps(record, ensure_ascii=False).encode().replace(b"PLACEHOLDER", b"\xff\xfe")
    result = read_bytes(_around(raw), Format.CLAUDE, session_id=SID)
    texts = [e.text for e in result.events]
    assert texts == ["good line before", "café \ufffd\ufffd", "good line after"]
    assert [s.reason for s in result.skipped] == ["invalid_utf8"]


def test_twenty_megabyte_line_is_skipped_as_oversized() -> None:
    huge = ClaudeWriter(SID).user("x" * (20 * 1024 * 1024)).bytes().rstrip(b"\n")
    data = _around(huge)
    result = read_bytes(data, Format.CLAUDE, session_id=SID)
    assert [e.text for e in result.events] == ["good line before", "good line after"]
    assert [(s.reason, s.line) for s in result.skipped] == [("oversized", 2)]
    assert result.skipped[0].detail == f"{len(huge)} bytes"
    assert result.offset == len(data)


def test_partial_last_line_waits_for_the_next_sync() -> None:
    done = ClaudeWriter(SID).user("complete").bytes()
    partial = b'{"type":"user","message":{"role":"user","content":"half'
    result = read_bytes(done + partial, Format.CLAUDE, session_id=SID)
    assert [e.text for e in result.events] == ["complete"]
    assert result.offset == len(done) and result.skipped == ()
    finished = done + partial + b' done"},"sessionId":"s"}\n'
    again = read_bytes(
        finished,
        Format.CLAUDE,
        session_id=SID,
        offset=result.offset,
        line_count=1,
        next_ordinal=2,
        state=result.state,
    )
    assert [(e.ordinal, e.text) for e in again.events] == [(2, "half done")]


def test_unterminated_complete_object_is_accepted() -> None:
    data = ClaudeWriter(SID).user("one").user("two").bytes().rstrip(b"\n")
    result = read_bytes(data, Format.CLAUDE, session_id=SID)
    assert [e.text for e in result.events] == ["one", "two"]
    assert result.offset == len(data)


def test_blank_lines_are_not_skips() -> None:
    data = b"\n\n" + ClaudeWriter(SID).user("x").bytes() + b"   \n"
    result = read_bytes(data, Format.CLAUDE, session_id=SID)
    assert [e.kind for e in result.events] == [EventKind.USER_TEXT]
    assert result.skipped == () and result.line_count == 4


def test_lone_surrogate_escape_is_kept() -> None:
    line = ClaudeWriter(SID).user("emoji cut in half: X").bytes().replace(b"X", b"\\ud83d")
    result = read_bytes(_around(line.rstrip(b"\n")), Format.CLAUDE, session_id=SID)
    assert [e.text for e in result.events] == [
        "good line before",
        "emoji cut in half: \ud83d",
        "good line after",
    ]
    assert result.skipped == ()


def test_record_the_reader_trips_over_is_skipped_whole(monkeypatch: pytest.MonkeyPatch) -> None:
    from memoir.ingest.claude_codex import ClaudeReader

    original = ClaudeReader._assistant

    def fragile(self: ClaudeReader, message: dict, ts: object) -> bool:
        handled = original(self, message, ts)  # emits its events first …
        if "boom" in str(message):
            raise KeyError("surprise")  # … then fails: they must be undone
        return handled

    monkeypatch.setattr(ClaudeReader, "_assistant", fragile)
    w = ClaudeWriter(SID).user("q").assistant("boom reply", split=False).assistant("fine")
    result = read_bytes(w.bytes(), Format.CLAUDE, session_id=SID)
    assert [(e.ordinal, e.text) for e in result.events] == [(1, "q"), (2, "fine")]
    assert [(s.reason, s.line) for s in result.skipped] == [("malformed_record", 2)]
    assert "KeyError" in result.skipped[0].detail


@pytest.mark.parametrize(
    ("record", "text"),
    [
        # Responses-style blocks, a lone block, a bare string message: the words are kept
        ({"type": "user", "message": {"content": [{"type": "input_text", "text": "w1"}]}}, "w1"),
        ({"type": "user", "message": {"content": {"text": "w2"}}}, "w2"),
        ({"type": "user", "message": "w3"}, "w3"),
        (
            {"type": "assistant", "message": {"content": [{"type": "output_text", "text": "w4"}]}},
            "w4",
        ),
    ],
)
def test_odd_content_shapes_keep_their_words(record: dict, text: str) -> None:
    result = read_bytes(_around(json.dumps(record).encode()), Format.CLAUDE, session_id=SID)
    assert [e.text for e in result.events] == ["good line before", text, "good line after"]
    assert result.skipped == ()


@pytest.mark.parametrize(
    ("record", "detail"),
    [
        (
            {"type": "user", "message": {"content": [{"type": "hologram", "data": 1}]}},
            "content blocks of type hologram",
        ),
        ({"type": "assistant", "message": {"content": 42}}, "assistant content that is a int"),
        ({"type": "user", "message": [1]}, "user message that is a list"),
    ],
)
def test_content_nobody_understands_is_reported_not_dropped_silently(
    record: dict, detail: str
) -> None:
    result = read_bytes(_around(json.dumps(record).encode()), Format.CLAUDE, session_id=SID)
    assert [e.text for e in result.events] == ["good line before", "good line after"]
    assert [(s.reason, s.line, s.detail) for s in result.skipped] == [("unknown_type", 2, detail)]


def test_a_known_block_beside_an_unknown_one_is_kept_and_the_line_reported() -> None:
    blocks = [{"type": "text", "text": "kept words"}, {"type": "hologram"}]
    record = {"type": "assistant", "message": {"content": blocks}}
    result = read_bytes(_around(json.dumps(record).encode()), Format.CLAUDE, session_id=SID)
    assert [e.text for e in result.events][1] == "kept words"
    assert [(s.reason, s.detail) for s in result.skipped] == [
        ("unknown_type", "content blocks of type hologram")
    ]


def test_a_timestamp_out_of_range_in_utc_costs_only_the_time() -> None:
    record = ClaudeWriter(SID).user("still here").records[0]
    record["timestamp"] = "9999-12-31T23:59:59-05:00"  # past datetime.max once in UTC
    result = read_bytes(_around(json.dumps(record).encode()), Format.CLAUDE, session_id=SID)
    kept = [e for e in result.events if e.text == "still here"]
    assert len(kept) == 1 and kept[0].timestamp is None
    assert result.skipped == ()


def _inline_sidechain() -> bytes:
    def rec(kind: str, content: object, side: bool) -> bytes:
        body = {"type": kind, "isSidechain": side, "message": {"role": kind, "content": content}}
        return json.dumps(body).encode() + b"\n"

    return (
        rec("user", "please investigate the flaky test", False)
        + rec("user", "search the repo for flaky tests", True)
        + rec("assistant", [{"type": "text", "text": "found test_db.py"}], True)
        + rec("assistant", [{"type": "text", "text": "final answer"}], False)
    )


def test_inline_subagent_records_are_notes_not_the_users_words() -> None:
    result = read_bytes(_inline_sidechain(), Format.CLAUDE, session_id=SID)
    spoken = [(e.kind, e.text) for e in result.events if e.kind is not EventKind.META]
    assert spoken == [
        (EventKind.USER_TEXT, "please investigate the flaky test"),
        (EventKind.ASSISTANT_TEXT, "final answer"),
    ]
    notes = [(e.text, e.payload) for e in result.events if e.kind is EventKind.META]
    assert notes == [
        ("search the repo for flaky tests", {"sidechain": "user"}),
        ("found test_db.py", {"sidechain": "assistant"}),
    ]


def test_a_subagent_files_own_records_stay_its_conversation() -> None:
    result = read_bytes(
        _inline_sidechain(), Format.CLAUDE, session_id=SID, state={"subagent": True}
    )
    assert [e.kind for e in result.events].count(EventKind.USER_TEXT) == 2
