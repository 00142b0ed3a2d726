"""Codex CLI and generic readers on synthetic files."""

from __future__ import annotations

import json

from memoir.demo import CodexWriter, jsonl
from memoir.ingest.discover import Format, detect_format
from memoir.ingest.reader import read_bytes
from memoir.model import Author, EventKind, build_exchanges

CODEX_ID = "0199e3a1-7b2c-7d40-9a55-3c1f00d2b001"


def _codex() -> CodexWriter:
    w = CodexWriter(CODEX_ID)
    w.context("<environment_context>\n  <cwd>/home/ann/code/app</cwd>\n</environment_context>")
    w.user("Why does the import fail?")
    w.reasoning("Check the package layout first.")
    w.call("call_1", "shell", {"command": ["ls", "src"]}, "memoir\n")
    w.shell("call_2", ["python", "-c", "import memoir"], "ok")
    w.assistant("The src layout needs an editable install.")
    return w


def test_codex_events_and_pairing() -> None:
    data = _codex().bytes()
    assert detect_format(data) is Format.CODEX
    result = read_bytes(data, Format.CODEX, session_id=CODEX_ID)
    kinds = [e.kind for e in result.events]
    assert kinds == [
        EventKind.HARNESS,
        EventKind.USER_TEXT,
        EventKind.THINKING,
        EventKind.TOOL_CALL,
        EventKind.TOOL_RESULT,
        EventKind.TOOL_CALL,
        EventKind.TOOL_RESULT,
        EventKind.ASSISTANT_TEXT,
    ]
    first = result.events[0]
    assert (first.author, first.payload) == (
        Author.SYSTEM,
        {"role": "user", "harness": "environment_context"},
    )
    results = [e for e in result.events if e.kind is EventKind.TOOL_RESULT]
    assert [(r.tool_name, r.call_id, r.text) for r in results] == [
        ("shell", "call_1", "memoir\n"),
        ("shell", "call_2", "ok"),
    ]
    assert results[0].payload == {"exit_code": 0}
    calls = [e for e in result.events if e.kind is EventKind.TOOL_CALL]
    assert calls[0].payload == {"arguments": '{"command": ["ls", "src"]}'}
    assert calls[1].text == "python -c import memoir" and calls[1].tool_name == "shell"
    assert result.events[-1].payload == {"model": "gpt-5-codex"}
    assert result.state["session_id"] == CODEX_ID
    assert result.state["cwd"] == "/home/ann/code/app"
    assert result.skipped == ()  # event_msg duplicates are known and ignored
    exchanges = build_exchanges(result.events)
    assert len(exchanges) == 1
    assert exchanges[0].assistant_text == "The src layout needs an editable install."


def test_codex_compacted_and_unknown_item() -> None:
    w = _codex()
    w.compacted("Summary of the work so far")
    w.lines.append(
        {
            "timestamp": "2025-10-15T15:00:00Z",
            "type": "response_item",
            "payload": {"type": "ghost_snapshot"},
        }
    )
    w.lines.append({"timestamp": "2025-10-15T15:00:01Z", "type": "mystery", "payload": {}})
    w.user("and now?")
    result = read_bytes(w.bytes(), Format.CODEX, session_id=CODEX_ID)
    assert EventKind.COMPACTION in [e.kind for e in result.events]
    assert [s.reason for s in result.skipped] == ["unknown_type", "unknown_type"]
    assert result.events[-1].text == "and now?"
    assert len(build_exchanges(result.events)) == 2


def _generic_messages() -> list[dict[str, object]]:
    return [
        {"role": "system", "content": "You are helpful."},
        {"role": "user", "content": "Weather in Paris?", "timestamp": "2025-10-01T10:00:00Z"},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {
                    "id": "c1",
                    "type": "function",
                    "function": {"name": "get_weather", "arguments": '{"city": "Paris"}'},
                }
            ],
        },
        {"role": "tool", "tool_call_id": "c1", "content": "18°C, cloudy"},
        {"role": "assistant", "content": [{"type": "text", "text": "18°C and cloudy."}]},
        {"role": "user", "content": "Merci !"},
    ]


def test_generic_jsonl_and_list_agree() -> None:
    messages = _generic_messages()
    as_lines = jsonl(messages)
    as_list = json.dumps(messages).encode()
    assert detect_format(as_lines) is Format.GENERIC_JSONL
    assert detect_format(as_list) is Format.GENERIC_LIST
    a = read_bytes(as_lines, Format.GENERIC_JSONL, session_id="chat")
    b = read_bytes(as_list, Format.GENERIC_LIST, session_id="chat")
    assert [(e.kind, e.text, e.tool_name) for e in a.events] == [
        (e.kind, e.text, e.tool_name) for e in b.events
    ]
    kinds = [e.kind for e in a.events]
    assert kinds == [
        EventKind.META,
        EventKind.USER_TEXT,
        EventKind.TOOL_CALL,
        EventKind.TOOL_RESULT,
        EventKind.ASSISTANT_TEXT,
        EventKind.USER_TEXT,
    ]
    assert a.events[3].tool_name == "get_weather" and a.events[3].author is Author.TOOL
    assert b.offset == len(as_list) - 1 and b.line_count == 6  # up to the closing bracket
    exchanges = build_exchanges(a.events)
    assert [x.tool_names for x in exchanges] == [("get_weather",), ()]


def test_generic_list_that_is_not_a_list_is_counted() -> None:
    result = read_bytes(b'{"role": "user"', Format.GENERIC_LIST, path="x.json")
    assert [s.reason for s in result.skipped] == ["malformed_json"]


def test_generic_message_names_are_kept_as_speakers() -> None:
    """OpenAI-style ``name`` on user/assistant messages (a group chat, agents of a team)
    becomes the event's speaker; a tool message's ``name`` stays its tool name."""
    messages = [
        {"role": "user", "name": "Ana", "content": "Back from the lake?"},
        {"role": "assistant", "name": " planner\n", "content": "Yes, we kayaked."},
        {"role": "assistant", "name": {"not": "a name"}, "content": "Odd name."},
        {"role": "assistant", "name": "x" * 300, "content": "Long name."},
        {"role": "tool", "name": "lookup", "tool_call_id": "c9", "content": "42"},
        {"role": "user", "content": "No name."},
    ]
    events = read_bytes(jsonl(messages), Format.GENERIC_JSONL, session_id="chat").events
    assert [e.payload.get("speaker") for e in events] == [
        "Ana",
        "planner",
        None,
        "x" * 64,
        None,
        None,
    ]
    assert events[0].text == "Back from the lake?"  # the words alone
    assert events[4].tool_name == "lookup"
    first, _ = build_exchanges(events)
    assert first.user_text == "Ana: Back from the lake?"
    assert first.assistant_text.startswith("planner: Yes, we kayaked.\n\nOdd name.")


def test_generic_media_parts_are_named_attachments() -> None:
    parts = [
        {"type": "text", "text": "what is in these?"},
        {"type": "image_url", "image_url": {"url": "data:image/png;base64,AAAA"}},
        {"type": "input_audio", "input_audio": {"data": "AAAA"}},
        {"type": "file", "file": {"file_id": "f1"}},
        {"type": "mystery"},
    ]
    data = jsonl([{"role": "user", "content": parts}, {"role": "assistant", "content": "ok"}])
    events = read_bytes(data, Format.GENERIC_JSONL, session_id="chat").events
    assert [(e.kind, e.text) for e in events if e.kind is EventKind.ATTACHMENT] == [
        (EventKind.ATTACHMENT, "[image]"),
        (EventKind.ATTACHMENT, "[audio]"),
        (EventKind.ATTACHMENT, "[file]"),
        (EventKind.ATTACHMENT, "[attachment]"),
    ]
    assert events[0].text == "what is in these?"


def test_codex_harness_blocks_beside_the_users_words() -> None:
    w = CodexWriter(CODEX_ID)
    agents = (
        "# AGENTS.md instructions for /home/ann/code/app\n\n<INSTRUCTIONS>\nUse uv.\n"
        "</INSTRUCTIONS>"
    )
    w.context(agents)
    w.context("<user_instructions>\nAlways run ruff.\n</user_instructions>")
    w.user("<environment_context>\n  <cwd>/x</cwd>\n</environment_context>\nWhy is CI red?")
    w.user("<turn_aborted>\nThe user interrupted.\n</turn_aborted>")
    w.assistant("A flaky test.")
    result = read_bytes(w.bytes(), Format.CODEX, session_id=CODEX_ID)
    assert [(e.kind, e.payload.get("harness"), e.text) for e in result.events] == [
        (EventKind.HARNESS, "user_instructions", agents),
        (
            EventKind.HARNESS,
            "user_instructions",
            "<user_instructions>\nAlways run ruff.\n</user_instructions>",
        ),
        (
            EventKind.HARNESS,
            "environment_context",
            "<environment_context>\n  <cwd>/x</cwd>\n</environment_context>",
        ),
        (EventKind.USER_TEXT, None, "Why is CI red?"),
        (
            EventKind.HARNESS,
            "turn_aborted",
            "<turn_aborted>\nThe user interrupted.\n</turn_aborted>",
        ),
        (EventKind.ASSISTANT_TEXT, None, "A flaky test."),
    ]
    exchanges = build_exchanges(result.events)
    assert [x.user_text for x in exchanges] == ["Why is CI red?"]
    assert "The user interrupted." in exchanges[0].tool_excerpt
