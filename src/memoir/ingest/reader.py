"""Turn transcript lines into events (pure): bytes from an offset + parser state in,
events, skipped lines, the new offset and the new parser state out.

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
"""

from __future__ import annotations

import io
from collections.abc import Iterable
from typing import Any

from memoir.ingest.aider import read_markdown
from memoir.ingest.claude import ClaudeReader
from memoir.ingest.codex import CodexReader
from memoir.ingest.detect import Format
from memoir.ingest.gemini import GeminiReader
from memoir.ingest.generic import GenericReader
from memoir.ingest.lines import LineReader, RawLine
from memoir.ingest.opencode import OpenCodeReader
from memoir.ingest.records import (
    EventSink,
    FormatReader,
    ReadResult,
    loads,
    loads_lenient,
    stdlib_loads,
)
from memoir.store.values import SkippedLine

__all__ = [
    "ReadResult",
    "first_line_number",
    "read_any",
    "read_bytes",
    "read_gemini_document",
    "read_lines",
    "reader_for",
]

_SNAPSHOT_PREFIX = b'{"type":"file-history-snapshot"'


def reader_for(fmt: Format, sink: EventSink, state: dict[str, Any]) -> FormatReader:
    if fmt is Format.CODEX:
        return CodexReader(sink, state)
    if fmt is Format.CLAUDE:
        return ClaudeReader(sink, state)
    if fmt is Format.GEMINI:
        return GeminiReader(sink, state)
    if fmt is Format.OPENCODE:
        return OpenCodeReader(sink, state)
    return GenericReader(sink, state)


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
