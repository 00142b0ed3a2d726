"""Aider chat histories (``.aider.chat.history.md`` in the repository Aider ran in).

Markdown, appended as the chat goes, one file for every chat held in that repository:

- ``# aider chat started at 2025-03-04 10:15:02`` opens a chat (Aider's local time,
  written without a zone: read as UTC) → a META note, and the time of what follows;
- ``#### `` lines are what the user typed (a multi-line prompt is several ``#### `` lines,
  each but the last ending in two spaces) → USER_TEXT; a prompt that is a command
  (``/add``, ``/run``, ``!ls`` …) is a TOOL_CALL by the user, named after the command;
- ``> `` lines are Aider's own output (files added, edits applied, commits, questions and
  their answers, errors) → a TOOL_RESULT answering the command just before them, else
  HARNESS (``cli_note``): the CLI's words, never the user's;
- every other line is the assistant's reply (blank lines inside it kept) → ASSISTANT_TEXT.

A run of lines of one kind is one event; it is read when the next kind begins or the
read ends (Aider writes each reply whole, so a reply is not cut across syncs; a run
longer than one sync batch, 2 MiB, is two events). The reader is pure:
lines (with their offsets) and state in, events out, like the JSON readers; a line that is
not UTF-8, holds NUL bytes or is over the line limit is skipped and counted.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from datetime import UTC, datetime
from typing import Any

from memoir.ingest.lines import RawLine
from memoir.ingest.records import EventSink, FormatReader, ReadResult
from memoir.model import Author, EventKind, Harness
from memoir.model.harness import HarnessShape
from memoir.store.values import SkippedLine

__all__ = ["AIDER_HISTORY", "AiderReader", "line_kind", "read_markdown"]

AIDER_HISTORY = ".aider.chat.history.md"
_STARTED = re.compile(r"^# aider chat started at (\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2})\s*$")


def line_kind(text: str) -> tuple[str, str]:
    """(kind, body) of one history line: ``start``, ``user``, ``note`` (``> ``), ``blank``
    or ``reply`` (pure)."""
    if _STARTED.match(text):
        return "start", text
    if text.startswith("#### ") or text == "####":
        return "user", text[5:].removesuffix("  ")
    if text.startswith("> ") or text == ">":
        return "note", text[2:].rstrip()
    if not text.strip():
        return "blank", ""
    return "reply", text


class AiderReader(FormatReader):
    """Folds history lines into events; :meth:`flush` emits the run of lines held."""

    harness = Harness.AIDER

    def __init__(self, sink: EventSink, state: dict[str, Any]) -> None:
        super().__init__(sink, state)
        self.kind: str | None = None
        self.lines: list[str] = []
        self.at: tuple[int, int] = (0, 0)  # offset and number of the run's first line

    def handle(self, obj: dict[str, Any]) -> bool:  # pragma: no cover - lines, not records
        return False

    def line(self, text: str, offset: int, number: int) -> None:
        kind, body = line_kind(text)
        if kind == "blank":
            if self.kind == "reply":
                self.lines.append("")
            return
        if kind == "start":
            self.flush()
            when = datetime.fromisoformat(text.rsplit(" at ", 1)[1]).replace(tzinfo=UTC)
            self.state["now"] = when.isoformat()
            self.state.pop("command", None)
            self.note_time(when)
            self.sink.line_offset, self.sink.line_number = offset, number
            self.sink.emit(
                EventKind.META, Author.SYSTEM, text.lstrip("# "), when, payload={"chat": "started"}
            )
            return
        if kind != self.kind:
            self.flush()
            self.kind, self.at = kind, (offset, number)
        self.lines.append(body)

    def flush(self) -> None:
        kind, lines = self.kind, self.lines
        self.kind, self.lines = None, []
        text = "\n".join(lines).strip("\n")
        if kind is None or not text.strip():
            return
        self.sink.line_offset, self.sink.line_number = self.at
        now = self.state.get("now")
        ts = datetime.fromisoformat(now) if isinstance(now, str) else None
        if kind == "user":
            self.state.pop("command", None)
            if text == "<blank>":
                return
            if text.startswith(("/", "!")):
                name = text.split(maxsplit=1)[0]
                call_id = f"aider-{self.at[1]}"
                self.state["command"] = [call_id, name]
                self.tool_event(EventKind.TOOL_CALL, Author.USER, text, ts, name, call_id)
            else:
                self.user_words(text, ts)
        elif kind == "note":
            command = self.state.pop("command", None)
            if isinstance(command, list) and len(command) == 2:
                call_id, name = command
                self.tool_event(EventKind.TOOL_RESULT, Author.TOOL, text, ts, name, call_id)
            else:
                payload = {"harness": HarnessShape.CLI_NOTE.value}
                self.sink.emit(EventKind.HARNESS, Author.SYSTEM, text, ts, payload=payload)
        else:
            self.state.pop("command", None)
            self.sink.emit(EventKind.ASSISTANT_TEXT, Author.ASSISTANT, text, ts)


def _skip(path: str, line: RawLine, reason: str, detail: str) -> SkippedLine:
    return SkippedLine(path, line.number, line.offset, reason, detail)


def read_markdown(
    lines: Iterable[RawLine],
    *,
    path: str,
    session_id: str,
    next_ordinal: int,
    state: dict[str, Any],
    offset: int,
    line_count: int,
    max_bytes: int | None = None,
) -> ReadResult:
    """Read history lines from byte ``offset`` on (the contract of
    :func:`memoir.ingest.reader.read_lines`: with ``max_bytes`` it stops after the line
    that takes it that far past ``offset``, ``more`` set). An unterminated last line
    waits for the next sync."""
    sink = EventSink(session_id, next_ordinal)
    reader = AiderReader(sink, state)
    skipped: list[SkippedLine] = []
    end, count, seen, more = offset, line_count, 0, False
    for line in lines:
        seen += 1
        if not line.terminated:
            break
        if line.oversized:
            skipped.append(_skip(path, line, "oversized", f"{line.size} bytes"))
        elif b"\x00" in line.data:
            skipped.append(_skip(path, line, "binary", "NUL bytes in line"))
        else:
            try:
                text = line.data.decode("utf-8")
            except UnicodeDecodeError as exc:
                skipped.append(_skip(path, line, "invalid_utf8", str(exc)[:200]))
            else:
                reader.line(text.removesuffix("\r"), line.offset, line.number)
        end, count = line.end, line.number
        if max_bytes is not None and end - offset >= max_bytes:
            more = True
            break
    reader.flush()
    final = reader.final_state()
    return ReadResult(tuple(sink.events), tuple(skipped), end, count, final, seen, more)
