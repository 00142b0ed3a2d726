"""What every format reader shares: transcript bytes split into complete lines with their byte
offsets, then JSON decoding, timestamps, bounded text, event emission, and the cut of
harness text out of a user-role message.

Split transcript bytes into complete lines with their byte offsets.

Transcripts are append-only JSONL files that an agent may be writing while we read. Only
complete lines (ending in ``\\n``) are handed out as terminated; bytes after the last
newline come out once, at the end, as an unterminated line the caller may accept (a
complete JSON object) or leave for the next sync. A line longer than ``max_line`` bytes is
never held in memory: it is reported as oversized with its size and skipped.

:func:`split_complete_lines` splits bytes held whole (a file's head, for detection);
:class:`LineReader` streams a file in chunks of :data:`CHUNK_BYTES`, cutting each line out
of its chunk only when it is asked for, and hands every chunk read to an optional sink (the
archive copy) so the file is read exactly once. Between two lines it holds one chunk (and
the pieces of a line that began in an earlier one): sync reads a transcript in batches off
one iterator, so that is what a long file's sync holds on top of a short file's
(``docs/benchmarks.md``, peak memory of one sync: splitting a 4 MiB chunk into a list of
lines up front held the chunk three times over between batches, and left the allocator's
heap fragmented with freed 4 MiB blocks).

What every format reader shares: JSON decoding, timestamps, bounded text, event emission,
and the cut of harness text out of a user-role message (:meth:`FormatReader.user_words`).

Tool calls: the event text is the call's input as compact JSON (Claude Code) or its
argument string (Codex, generic), cut at 64 KiB; inputs up to 2 KiB are also kept in the
payload (``input`` as a dict for Claude Code, ``arguments`` as a string otherwise). A
consumer rebuilding a request from a larger call reads the text.

A format reader turns one decoded record (a dict) into zero or more :class:`Event` values
through :class:`EventSink`, which numbers them with the session's next ordinals. Readers keep
what they must remember between syncs (tool names by call id, the session's cwd, …) in a
JSON-serialisable ``state`` dict that is stored as ``SourceState.parser_state``.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, BinaryIO

from memoir.model import Author, Event, EventKind, Harness
from memoir.model.harness import HarnessShape, split_harness
from memoir.store.values import SkippedLine

__all__ = [
    "GENERIC_ROLES",
    "MAX_EVENT_TEXT",
    "MAX_LINE_BYTES",
    "MAX_PENDING_TOOLS",
    "SMALL_INPUT",
    "EventSink",
    "FormatReader",
    "LineReader",
    "RawLine",
    "ReadResult",
    "bounded",
    "compact_json",
    "loads",
    "loads_lenient",
    "parse_ts",
    "split_complete_lines",
    "stdlib_loads",
]

MAX_LINE_BYTES = 16 * 1024 * 1024  # longer lines are skipped as "oversized" (still archived)
CHUNK_BYTES = 1024 * 1024  # bytes read at a time (what a line iterator holds)


@dataclass(slots=True)  # not frozen: built once per line, frozen init costs ~2x
class RawLine:
    """One line: ``offset`` of its first byte, 1-based ``number``, ``data`` without the
    newline (empty when ``oversized``), ``size`` its length without the newline."""

    offset: int
    number: int
    data: bytes
    size: int
    terminated: bool = True
    oversized: bool = False

    @property
    def end(self) -> int:
        """Offset just past this line (and its newline when terminated)."""
        return self.offset + self.size + (1 if self.terminated else 0)


def split_complete_lines(data: bytes, base_offset: int = 0) -> tuple[list[tuple[int, bytes]], int]:
    """Complete lines of ``data`` as (absolute offset, bytes without newline), and the number
    of bytes they consume (everything up to and including the last newline)."""
    last = data.rfind(b"\n")
    if last < 0:
        return [], 0
    out: list[tuple[int, bytes]] = []
    pos = base_offset
    for piece in data[:last].split(b"\n"):
        out.append((pos, piece))
        pos += len(piece) + 1
    return out, last + 1


class LineReader:
    """Stream lines of ``fp`` from byte ``offset`` (line number ``line`` + 1 onwards), reading
    at most ``limit`` bytes in total. ``sink(position, chunk)`` receives every chunk read."""

    def __init__(
        self,
        fp: BinaryIO,
        *,
        offset: int = 0,
        line: int = 0,
        limit: int | None = None,
        max_line: int = MAX_LINE_BYTES,
        chunk: int = CHUNK_BYTES,
        sink: Callable[[int, bytes], None] | None = None,
    ) -> None:
        self._fp = fp
        self._offset = offset
        self._line = line
        self._limit = limit
        self._max_line = max_line
        self._chunk = chunk
        self._sink = sink
        self.bytes_read = 0

    def _read(self, pos: int) -> bytes:
        want = self._chunk
        if self._limit is not None:
            want = min(want, self._limit - self.bytes_read)
            if want <= 0:
                return b""
        data = self._fp.read(want)
        if data:
            self.bytes_read += len(data)
            if self._sink is not None:
                self._sink(pos, data)
        return data

    def __iter__(self) -> Iterator[RawLine]:
        """Lines are cut from one chunk at a time as they are asked for: between two lines
        the iterator holds the chunk being read and, of a line begun in an earlier chunk,
        its pieces so far (never more than ``max_line`` bytes) — not a list of the chunk's
        lines, nor a second copy of it (sync reads a file in batches off one iterator, and
        what it holds between them is what its memory does not give back)."""
        self._fp.seek(self._offset)
        pos = self._offset  # file position of the next line's first byte
        number = self._line
        parts: list[bytes] = []  # pieces of a line begun in earlier chunks
        held = 0  # their total size
        skipping = 0  # > 0 while discarding an oversized line: bytes discarded so far
        max_line = self._max_line
        while True:
            chunk = self._read(pos + held + skipping)
            if not chunk:
                break
            start = 0
            nl = chunk.find(b"\n")
            if nl >= 0 and (skipping or parts):  # the line begun before ends here
                size = skipping + held + nl
                number += 1
                if skipping or size > max_line:
                    yield RawLine(pos, number, b"", size, True, True)
                else:
                    parts.append(chunk[:nl])
                    yield RawLine(pos, number, b"".join(parts), size)
                pos += size + 1
                parts, held, skipping = [], 0, 0
                start = nl + 1
                nl = chunk.find(b"\n", start)
            while nl >= 0:
                number += 1
                size = nl - start
                if size > max_line:
                    yield RawLine(pos, number, b"", size, True, True)
                else:
                    yield RawLine(pos, number, chunk[start:nl], size)
                pos += size + 1
                start = nl + 1
                nl = chunk.find(b"\n", start)
            rest = len(chunk) - start
            if skipping:
                skipping += rest
            elif rest and held + rest > max_line:
                skipping, parts, held = held + rest, [], 0
            elif rest:
                parts.append(chunk[start:] if start else chunk)
                held += rest
            chunk = b""  # not held while the next one is read
        if skipping:
            yield RawLine(pos, number + 1, b"", skipping, False, True)
        elif parts:
            tail = b"".join(parts)
            yield RawLine(pos, number + 1, tail, held, False, False)


# the roles of an OpenAI-style message (the generic format and the HTTP API)
GENERIC_ROLES = frozenset({"user", "assistant", "tool", "function", "system", "developer"})

MAX_EVENT_TEXT = 64 * 1024  # tool input/output text kept per event (the archive keeps all)
SMALL_INPUT = 2048  # tool inputs up to this size are also kept structured in the payload
MAX_PENDING_TOOLS = 512  # unanswered tool calls remembered between syncs


def stdlib_loads(data: bytes | str) -> Any:
    """The standard library's parser, with nesting too deep for it (a ``RecursionError``)
    reported as the ``ValueError`` every other unreadable line raises."""
    try:
        return json.loads(data)
    except RecursionError:
        raise ValueError("JSON nested too deeply") from None


try:  # orjson is optional: several times faster when installed
    import orjson as _orjson

    def loads(data: bytes) -> Any:
        return _orjson.loads(data)

    def _dumps(value: object) -> str:
        try:
            return _orjson.dumps(value).decode()
        except TypeError:  # non-string keys, integers beyond 64 bits, …
            return json.dumps(value, ensure_ascii=False, separators=(",", ":"), default=str)

except ImportError:  # pragma: no cover - depends on the environment

    def loads(data: bytes) -> Any:
        return stdlib_loads(data)

    def _dumps(value: object) -> str:
        return json.dumps(value, ensure_ascii=False, separators=(",", ":"), default=str)


def loads_lenient(data: bytes) -> Any:
    """Like :func:`loads`, but also takes what orjson refuses and the stdlib parser accepts
    (lone surrogate escapes such as ``\\ud83d`` from an emoji cut in half)."""
    try:
        return loads(data)
    except ValueError:
        return stdlib_loads(data)


def parse_ts(value: object) -> datetime | None:
    """An ISO-8601 string or epoch seconds/milliseconds as an aware UTC datetime."""
    if isinstance(value, str) and value:
        try:
            ts = datetime.fromisoformat(value)
            return ts.replace(tzinfo=UTC) if ts.tzinfo is None else ts.astimezone(UTC)
        except (OverflowError, ValueError):  # not a date, or out of range once in UTC
            return None
    if isinstance(value, int | float) and not isinstance(value, bool) and value > 0:
        seconds = value / 1000 if value > 1e11 else value
        try:
            return datetime.fromtimestamp(seconds, UTC)
        except (OverflowError, OSError, ValueError):
            return None
    return None


def bounded(text: str, limit: int = MAX_EVENT_TEXT) -> tuple[str, dict[str, Any]]:
    """``text`` within ``limit`` characters, and a payload note when it was cut: its first
    three quarters and its last quarter, with a line saying how much was left out between
    them — the end of a test run or a build log is where its failure is."""
    if len(text) <= limit:
        return text, {}
    tail = limit // 4
    head = limit - tail
    omitted = len(text) - head - tail
    marker = f"\n… [{omitted:,} characters left out here; the archived transcript has them] …\n"
    return text[:head] + marker + text[-tail:], {"truncated_from": len(text)}


def compact_json(value: object) -> str:
    if isinstance(value, str):
        return value
    try:
        return _dumps(value)
    except (TypeError, ValueError):
        return str(value)


@dataclass(frozen=True, slots=True)
class ReadResult:
    events: tuple[Event, ...]
    skipped: tuple[SkippedLine, ...]
    offset: int  # just past the last line consumed
    line_count: int  # lines consumed so far (the last consumed line's number)
    state: dict[str, Any]
    lines_read: int = 0
    more: bool = False  # stopped at ``max_bytes``: the lines go on past ``offset``


class EventSink:
    """Collects the events of one read, numbering them from ``next_ordinal``."""

    def __init__(self, session_id: str, next_ordinal: int) -> None:
        self.session_id = session_id
        self.next_ordinal = next_ordinal
        self.events: list[Event] = []
        self.line_offset: int | None = None
        self.line_number: int | None = None

    def emit(
        self,
        kind: EventKind,
        author: Author,
        text: str,
        timestamp: datetime | None,
        *,
        tool_name: str | None = None,
        call_id: str | None = None,
        payload: dict[str, Any] | None = None,
    ) -> None:
        self.events.append(
            Event(
                session_id=self.session_id,
                ordinal=self.next_ordinal,
                kind=kind,
                author=author,
                text=text,
                timestamp=timestamp,
                tool_name=tool_name,
                call_id=call_id,
                payload=payload or {},
                source_offset=self.line_offset,
                source_line=self.line_number,
            )
        )
        self.next_ordinal += 1


class FormatReader:
    """Base of the three format readers. ``handle`` returns False for a record type or
    shape it does not know (the line is then counted as skipped with reason
    ``unknown_type``, ``unknown_detail`` saying what was not understood; events it did
    take from the record stay)."""

    harness: Harness = Harness.GENERIC

    def __init__(self, sink: EventSink, state: dict[str, Any]) -> None:
        self.unknown_detail: str | None = None
        self.sink = sink
        self.state: dict[str, Any] = dict(state)
        self.tools: dict[str, str] = dict(state.get("tools", {}))
        self._first: datetime | None = None
        self._last: datetime | None = None

    def handle(self, obj: dict[str, Any]) -> bool:  # pragma: no cover - abstract
        raise NotImplementedError

    def unknown(self, detail: str) -> bool:
        """Mark the current record as (partly) not understood; returns False for ``handle``."""
        self.unknown_detail = detail[:200]
        return False

    def remember_tool(self, call_id: object, name: str) -> None:
        if isinstance(call_id, str) and call_id:
            self.tools[call_id] = name
            if len(self.tools) > MAX_PENDING_TOOLS:
                self.tools.pop(next(iter(self.tools)))

    def tool_for(self, call_id: object) -> str | None:
        if isinstance(call_id, str):
            return self.tools.pop(call_id, None)
        return None

    def note_time(self, ts: datetime | None) -> None:
        if ts is not None:
            if self._first is None and "first_at" not in self.state:
                self._first = ts
            self._last = ts

    def note(self, key: str, value: object) -> None:
        if isinstance(value, str) and value and key not in self.state:
            self.state[key] = value

    def tool_event(
        self,
        kind: EventKind,
        author: Author,
        text: str,
        ts: datetime | None,
        name: str | None,
        call_id: object,
        payload: dict[str, Any] | None = None,
    ) -> None:
        body, note = bounded(text)
        extra = dict(payload or {})
        extra.update(note)
        self.sink.emit(
            kind,
            author,
            body,
            ts,
            tool_name=name,
            call_id=call_id if isinstance(call_id, str) else None,
            payload=extra,
        )

    def user_words(
        self,
        text: str,
        ts: datetime | None,
        payload: dict[str, Any] | None = None,
        *,
        note: Callable[[str, HarnessShape], dict[str, Any]] | None = None,
        spoken: bool = True,
    ) -> None:
        """A user-role message: USER_TEXT (with ``payload``), kept exactly as written when
        none of it is harness text; else cut into its pieces, in order — the user's as
        USER_TEXT, the harness's as HARNESS by the system, payload ``{"harness": shape}``
        and what ``note(piece, shape)`` adds (:mod:`memoir.model.harness`). Not
        ``spoken`` (text beside a tool's answer), the user's pieces are META instead."""
        pieces = split_harness(text)
        if all(p.shape is None for p in pieces):
            self._words(text, ts, payload, spoken)
            return
        for piece in pieces:
            if piece.shape is None:
                self._words(piece.text, ts, payload, spoken)
            else:
                extra = note(piece.text, piece.shape) if note is not None else {}
                said = {"harness": piece.shape.value, **extra}
                self.sink.emit(EventKind.HARNESS, Author.SYSTEM, piece.text, ts, payload=said)

    def _words(
        self, text: str, ts: datetime | None, payload: dict[str, Any] | None, spoken: bool
    ) -> None:
        if spoken:
            self.sink.emit(EventKind.USER_TEXT, Author.USER, text, ts, payload=payload)
        else:
            self.sink.emit(EventKind.META, Author.SYSTEM, text, ts, payload={"meta": True})

    def final_state(self) -> dict[str, Any]:
        out = dict(self.state)
        out["tools"] = dict(self.tools)
        if self._first is not None:
            out["first_at"] = self._first.isoformat()
        if self._last is not None:
            out["last_at"] = self._last.isoformat()
        return out
