"""From transcript lines to events (pure): each format's reader chosen and run — bytes
from an offset + parser state in; events, skipped lines, the new offset and the new
parser state out — and the generic format (OpenAI-style chat messages, from a file or
sent over the HTTP API).

Bad input never stops a read and never costs a good line: a line that is not valid JSON,
not UTF-8, holds NUL bytes, is longer than the line limit, or is a record type the format
does not know becomes a :class:`SkippedLine` (the archive still has its bytes) and reading
goes on with the next line. Invalid UTF-8 is decoded with replacement characters when the
rest of the line is valid JSON, so the conversation is kept; the line is still counted.

The offset only moves past complete lines. An unterminated last line is accepted when it
parses as a JSON object (a writer never leaves a valid object half-written); otherwise it
waits for the next sync.

:func:`read_lines` with ``max_bytes`` stops after the line that takes it that far past its
start (``ReadResult.more``): called again on the same line iterator with the result's
offset, line count and state, it goes on exactly where it stopped — what sync uses to
commit a large transcript in bounded batches.

The generic format: OpenAI-style chat messages, one file per session, either a JSON list
of messages or JSONL with one message a line. A message is
``{role, content, tool_calls?, tool_call_id?, name?, timestamp?}``; ``content`` is a string
or a list of parts (``{type: "text", text}``, image parts). Roles: ``user`` → USER_TEXT
(harness text an agent's CLI or SDK left in it — a ``<system-reminder>``, a command echo —
cut out as HARNESS, :mod:`memoir.model.harness`; this reader also reads what the HTTP
API and MCP append), ``assistant`` → ASSISTANT_TEXT plus one TOOL_CALL per ``tool_calls``
entry, ``tool`` (or ``function``) → TOOL_RESULT named after the call it answers,
``system``/``developer`` → META. A user or assistant message's ``name`` (a person in a
group chat, one agent of several) is kept as its event's speaker, ``payload["speaker"]``.
The session id is the file stem. OpenAI-style messages sent over the HTTP API, as the
events the generic reader makes of them: one :class:`~memoir.store.values.ApiMessage` per
message, carrying the client's id for it. Ordinals are placeholders; the store numbers
the events when it appends them.

A message sent without a ``timestamp`` takes the nearest one of the messages sent with it
(the one before, else the one after), else the time it is stored
(:func:`memoir.model.infer_times`), marked ``time_inferred``. Messages stored by earlier
appends are not consulted: a message is posted when it is said or later, so the time it
arrives is a closer bound than an older message's. A message's ``metadata`` (a JSON
object: what the caller wants back with it, such as an agent framework's own item) is
kept in the payload of its first event, ``payload["metadata"]``, and comes back with it
from ``Memoir.events``.
"""

from __future__ import annotations

import io
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import replace
from datetime import UTC, datetime
from typing import Any

from memoir.errors import ConfigError
from memoir.ingest.claude_codex import ClaudeReader, CodexReader
from memoir.ingest.discover import Format
from memoir.ingest.gemini_aider import GeminiReader, read_markdown
from memoir.ingest.opencode import OpenCodeReader
from memoir.ingest.records import (
    GENERIC_ROLES,
    SMALL_INPUT,
    EventSink,
    FormatReader,
    LineReader,
    RawLine,
    ReadResult,
    compact_json,
    loads,
    loads_lenient,
    parse_ts,
    stdlib_loads,
)
from memoir.model import Author, EventKind, Harness, clean_speaker, infer_times
from memoir.store.values import ApiMessage, SkippedLine

__all__ = [
    "GenericReader",
    "ReadResult",
    "api_messages",
    "first_line_number",
    "read_any",
    "read_bytes",
    "read_gemini_document",
    "read_lines",
    "reader_for",
]

_SNAPSHOT_PREFIX = b'{"type":"file-history-snapshot"'
_READERS: dict[Format, type[FormatReader]] = {
    Format.CODEX: CodexReader,
    Format.CLAUDE: ClaudeReader,
    Format.GEMINI: GeminiReader,
    Format.OPENCODE: OpenCodeReader,
}


def reader_for(fmt: Format, sink: EventSink, state: dict[str, Any]) -> FormatReader:
    """The reader of ``fmt`` (the generic one for a generic list or JSONL)."""
    return _READERS.get(fmt, GenericReader)(sink, state)


def _decode(line: RawLine) -> tuple[Any, SkippedLine | None, str]:
    """(object or None, skip reason if the line is skipped outright, note on a kept line)."""
    data = line.data
    try:
        return loads(data), None, ""
    except ValueError as exc:
        error: ValueError = exc
    try:  # the stdlib parser takes what orjson refuses (lone surrogate escapes)
        return stdlib_loads(data), None, ""
    except ValueError:
        pass
    if b"\x00" in data:
        return None, _skip(line, "binary", "NUL bytes in line"), ""
    try:
        data.decode("utf-8")
    except UnicodeDecodeError as uexc:
        try:
            obj = stdlib_loads(data.decode("utf-8", errors="replace"))
        except ValueError:
            return None, _skip(line, "invalid_utf8", str(uexc)[:200]), ""
        return obj, None, f"invalid UTF-8 replaced: {str(uexc)[:160]}"
    return None, _skip(line, "malformed_json", str(error)[:200]), ""


def _handle(reader: FormatReader, sink: EventSink, obj: dict[str, Any]) -> tuple[str, str] | None:
    """Let the format reader take one record; (reason, detail) when the line is skipped. A
    record of a shape the reader trips over is skipped whole (its partial events undone)."""
    count, ordinal = len(sink.events), sink.next_ordinal
    reader.unknown_detail = None
    try:
        if reader.handle(obj):
            return None
    except Exception as exc:  # a record shape nobody foresaw must not cost the file
        del sink.events[count:]
        sink.next_ordinal = ordinal
        return "malformed_record", f"{type(exc).__name__}: {exc}"[:200]
    if reader.unknown_detail:
        return "unknown_type", reader.unknown_detail
    kind = obj.get("type") if "type" in obj else obj.get("role")
    return "unknown_type", f"record type {kind!r}"[:200]


def _skip(line: RawLine, reason: str, detail: str) -> SkippedLine:
    return SkippedLine(path="", line=line.number, offset=line.offset, reason=reason, detail=detail)


def read_lines(
    lines: Iterable[RawLine],
    fmt: Format,
    *,
    path: str,
    session_id: str,
    next_ordinal: int,
    state: dict[str, Any],
    offset: int,
    line_count: int,
    max_bytes: int | None = None,
) -> ReadResult:
    """Read the lines of ``lines`` from byte ``offset`` on; with ``max_bytes``, stop after
    the line that ends ``max_bytes`` or more past ``offset`` (``more`` in the result: pass
    the same iterator again to read on)."""
    sink = EventSink(session_id, next_ordinal)
    reader = reader_for(fmt, sink, state)
    skipped: list[SkippedLine] = []
    end, count, seen, open_line = offset, line_count, 0, bool(state.get("open_line"))
    more = False
    for line in lines:
        seen += 1
        if line.oversized:
            if not line.terminated:
                break
            skipped.append(_skip(line, "oversized", f"{line.size} bytes"))
        elif not line.data.strip():
            if not line.terminated:
                break
        elif line.data.startswith(_SNAPSHOT_PREFIX):
            if not line.terminated:  # cheap pre-filter: no conversation in snapshots
                break
        else:
            try:  # the fast path; _decode sorts out what went wrong
                obj, skip, note = loads(line.data), None, ""
            except ValueError:
                obj, skip, note = _decode(line)
            if not line.terminated and (skip is not None or not isinstance(obj, dict)):
                break  # a line still being written: wait for the next sync
            if skip is not None:
                skipped.append(skip)
            elif not isinstance(obj, dict):
                skipped.append(_skip(line, "unknown_type", f"not an object: {type(obj).__name__}"))
            else:
                sink.line_offset, sink.line_number = line.offset, line.number
                if note:
                    skipped.append(_skip(line, "invalid_utf8", note))
                problem = _handle(reader, sink, obj)
                if problem is not None:
                    skipped.append(_skip(line, *problem))
        end, count, open_line = line.end, line.number, not line.terminated
        if max_bytes is not None and end - offset >= max_bytes:
            more = True
            break
    skipped = [SkippedLine(path, s.line, s.offset, s.reason, s.detail) for s in skipped]
    final = reader.final_state()
    final.pop("open_line", None)
    if open_line:
        final["open_line"] = True  # the last line had no newline yet: it will come next
    return ReadResult(tuple(sink.events), tuple(skipped), end, count, final, seen, more)


def first_line_number(line_count: int, state: dict[str, Any]) -> int:
    """Lines before the resume offset, as the line splitter should count them: when the
    last line consumed had no newline, the newline that ends it is still ahead."""
    return line_count - 1 if state.get("open_line") and line_count > 0 else line_count


def read_json_list(
    data: bytes,
    *,
    path: str,
    session_id: str,
    next_ordinal: int,
    state: dict[str, Any],
    skip: int = 0,
) -> ReadResult:
    """A generic JSON-list file, parsed whole (a JSON array cannot be resumed mid-way); its
    first ``skip`` messages, read before, give no events again. The result's ``offset`` is
    the end of the last message, before the closing bracket: the bytes a list that grows
    by appending messages keeps unchanged."""
    sink = EventSink(session_id, next_ordinal)
    reader = GenericReader(sink, state)
    skipped: list[SkippedLine] = []
    try:
        messages = loads(data)
    except ValueError as exc:
        try:
            messages = stdlib_loads(data.decode("utf-8", errors="replace"))
        except ValueError:
            bad = SkippedLine(path, 1, 0, "malformed_json", str(exc)[:200])
            return ReadResult((), (bad,), 0, 0, state)
    if not isinstance(messages, list):
        bad = SkippedLine(path, 1, 0, "unknown_type", "a JSON value that is not a list")
        return ReadResult((), (bad,), len(data), 1, state)
    for index, message in enumerate(messages, start=1):
        if index <= skip:
            continue
        sink.line_offset, sink.line_number = None, index
        if not isinstance(message, dict) or not reader.handle(message):
            skipped.append(SkippedLine(path, index, 0, "unknown_type", f"message {index}"))
    return ReadResult(
        tuple(sink.events),
        tuple(skipped),
        _list_body_end(data),
        len(messages),
        reader.final_state(),
    )


def read_gemini_document(
    data: bytes,
    *,
    path: str,
    session_id: str,
    next_ordinal: int,
    state: dict[str, Any],
    skip: int = 0,
) -> ReadResult:
    """A Gemini CLI chat written as one JSON document (``{sessionId, projectHash, …,
    messages: [...]}``, before Gemini CLI wrote JSONL), parsed whole; its first ``skip``
    messages, read before, give no events again. Gemini CLI rewrote such a file whole on
    every change, so a changed one is read again from its start (sync sees it rewritten)."""
    sink = EventSink(session_id, next_ordinal)
    reader = GeminiReader(sink, state)
    try:
        doc = loads_lenient(data)
    except ValueError as exc:
        bad = SkippedLine(path, 1, 0, "malformed_json", str(exc)[:200])
        return ReadResult((), (bad,), 0, 0, state)
    if not isinstance(doc, dict) or not isinstance(doc.get("messages"), list):
        bad = SkippedLine(path, 1, 0, "unknown_type", "not a Gemini CLI chat document")
        return ReadResult((), (bad,), len(data), 1, state)
    reader.handle({k: v for k, v in doc.items() if k != "messages"})
    skipped: list[SkippedLine] = []
    for index, message in enumerate(doc["messages"], start=1):
        if index <= skip:
            continue
        sink.line_offset, sink.line_number = None, index
        if not isinstance(message, dict) or not reader.handle(message):
            skipped.append(SkippedLine(path, index, 0, "unknown_type", f"message {index}"))
    count = len(doc["messages"])
    return ReadResult(tuple(sink.events), tuple(skipped), len(data), count, reader.final_state())


def _list_body_end(data: bytes) -> int:
    """Length of ``data`` without its closing bracket and the blanks around it."""
    body = data.rstrip()
    if body.endswith(b"]"):
        body = body[:-1].rstrip()
    return len(body)


def read_bytes(
    data: bytes,
    fmt: Format,
    *,
    path: str = "",
    session_id: str = "s",
    next_ordinal: int = 1,
    state: dict[str, Any] | None = None,
    offset: int = 0,
    line_count: int = 0,
    max_line: int | None = None,
) -> ReadResult:
    """Read ``data[offset:]`` (the pure entry point the tests and the demo use)."""
    if fmt in (Format.GENERIC_LIST, Format.GEMINI_JSON):
        parse = read_json_list if fmt is Format.GENERIC_LIST else read_gemini_document
        return parse(
            data, path=path, session_id=session_id, next_ordinal=next_ordinal, state=state or {}
        )
    kwargs: dict[str, Any] = {"offset": offset, "line": first_line_number(line_count, state or {})}
    if max_line is not None:
        kwargs["max_line"] = max_line
    lines = LineReader(io.BytesIO(data), **kwargs)
    return read_any(
        lines,
        fmt,
        path=path,
        session_id=session_id,
        next_ordinal=next_ordinal,
        state=state or {},
        offset=offset,
        line_count=line_count,
    )


def read_any(
    lines: Iterable[RawLine],
    fmt: Format,
    *,
    path: str,
    session_id: str,
    next_ordinal: int,
    state: dict[str, Any],
    offset: int,
    line_count: int,
    max_bytes: int | None = None,
) -> ReadResult:
    """:func:`read_lines` for the JSON formats, the Markdown reader for an Aider history."""
    if fmt is Format.AIDER:
        return read_markdown(
            lines,
            path=path,
            session_id=session_id,
            next_ordinal=next_ordinal,
            state=state,
            offset=offset,
            line_count=line_count,
            max_bytes=max_bytes,
        )
    return read_lines(
        lines,
        fmt,
        path=path,
        session_id=session_id,
        next_ordinal=next_ordinal,
        state=state,
        offset=offset,
        line_count=line_count,
        max_bytes=max_bytes,
    )


def _parts_text(content: object) -> tuple[str, list[str]]:
    """(text, number of non-text parts) of a message content."""
    if isinstance(content, str):
        return content, []
    if content is None:
        return "", []
    texts: list[str] = []
    others: list[str] = []
    if isinstance(content, list):
        for part in content:
            if isinstance(part, str):
                texts.append(part)
            elif isinstance(part, dict) and part.get("type") in (
                "text",
                "input_text",
                "output_text",
            ):
                texts.append(str(part.get("text", "")))
            else:
                others.append(_attachment(part))
        return "\n\n".join(t for t in texts if t), others
    return compact_json(content), []


def _attachment(part: object) -> str:
    """How a non-text part is shown: ``[image]``, ``[audio]``, ``[file]`` or ``[attachment]``."""
    kind = str(part.get("type", "")) if isinstance(part, dict) else ""
    if "image" in kind:
        return "[image]"
    if "audio" in kind:
        return "[audio]"
    return "[file]" if kind in ("file", "input_file", "document") else "[attachment]"


class GenericReader(FormatReader):
    harness = Harness.GENERIC

    def handle(self, obj: dict[str, Any]) -> bool:
        role = obj.get("role")
        if not isinstance(role, str) or role not in GENERIC_ROLES:
            return False
        ts = parse_ts(obj.get("timestamp") or obj.get("created_at"))
        self.note_time(ts)
        text, others = _parts_text(obj.get("content"))
        speaker = clean_speaker(obj.get("name")) if role in ("user", "assistant") else None
        said = {"speaker": speaker} if speaker else None
        if role == "user":
            if text:  # harness text an agent's SDK left in it is cut out (records.py)
                self.user_words(text, ts, payload=said)
            for shown in others:
                self.sink.emit(EventKind.ATTACHMENT, Author.USER, shown, ts)
        elif role == "assistant":
            if text:
                self.sink.emit(EventKind.ASSISTANT_TEXT, Author.ASSISTANT, text, ts, payload=said)
            self._calls(obj.get("tool_calls"), ts)
        elif role in ("tool", "function"):
            call_id = obj.get("tool_call_id")
            name = self.tool_for(call_id) or (str(obj["name"]) if obj.get("name") else None)
            self.tool_event(EventKind.TOOL_RESULT, Author.TOOL, text, ts, name, call_id)
        elif text:
            self.sink.emit(EventKind.META, Author.SYSTEM, text, ts, payload={"role": role})
        return True

    def _calls(self, calls: object, ts: Any) -> None:
        if not isinstance(calls, list):
            return
        for call in calls:
            if not isinstance(call, dict):
                continue
            function = call.get("function")
            function = function if isinstance(function, dict) else {}
            name = str(function.get("name") or call.get("name") or "tool")
            call_id = call.get("id")
            arguments = function.get("arguments", call.get("arguments", ""))
            self.remember_tool(call_id, name)
            text = arguments if isinstance(arguments, str) else compact_json(arguments)
            payload = {"arguments": text} if len(text) <= SMALL_INPUT else {}
            self.tool_event(EventKind.TOOL_CALL, Author.ASSISTANT, text, ts, name, call_id, payload)


def api_messages(
    session_id: str,
    messages: Sequence[Mapping[str, Any]],
    *,
    stored_at: datetime | None = None,
) -> list[ApiMessage]:
    """Each message (``{role, content, …, id?}``) as its events, in order, each with a time
    (``stored_at``, default now, for those with no known neighbour). ``ConfigError``
    naming the first message that is not one: not a mapping, a role the generic reader does
    not know, an ``id`` that is not a non-empty string of at most 200 characters (what the
    HTTP API's schema lets through always passes)."""
    for n, message in enumerate(messages):
        _check(n, message)
    sink = EventSink(session_id, 1)
    reader = GenericReader(sink, {})
    out: list[ApiMessage] = []
    spans: list[tuple[int, int]] = []
    for message in messages:
        start = len(sink.events)
        reader.handle(dict(message))
        spans.append((start, len(sink.events)))
    events = infer_times(sink.events, before=None, fallback=stored_at or datetime.now(UTC))
    for message, (start, end) in zip(messages, spans, strict=True):
        metadata = message.get("metadata")
        if metadata is not None and start < end:  # kept with the message's first event
            first = events[start]
            events[start] = replace(first, payload={**first.payload, "metadata": dict(metadata)})
        client_id = message.get("id")
        out.append(
            ApiMessage(
                client_id=str(client_id) if client_id is not None else None,
                events=tuple(events[start:end]),
            )
        )
    return out


def _check(n: int, message: object) -> None:
    if not isinstance(message, Mapping):
        raise ConfigError(f"message {n} is a {type(message).__name__}, not a {{role, content}} map")
    role = message.get("role")
    if not isinstance(role, str) or role not in GENERIC_ROLES:
        roles = ", ".join(sorted(GENERIC_ROLES))
        raise ConfigError(f"message {n} has role {role!r}; roles: {roles}")
    cid = message.get("id")
    if cid is not None and (not isinstance(cid, str) or not 0 < len(cid) <= 200):
        raise ConfigError(f"message {n}: id must be a string of 1 to 200 characters")
    if not isinstance(message.get("metadata", {}), Mapping):
        raise ConfigError(f"message {n}: metadata must be a JSON object")
