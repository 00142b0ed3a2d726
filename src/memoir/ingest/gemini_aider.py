"""Gemini CLI chats and Aider chat histories, each read by its own format reader.

Gemini CLI chats (``~/.gemini/tmp/<project>/chats/session-<time>-<id8>.jsonl``; before
JSONL, ``session-*.json``: one document, its metadata and a ``messages`` list of the
same message records, read whole by :func:`memoir.ingest.reader.read_gemini_document`).

One JSON record a line, appended as the chat goes (Gemini CLI's chat recording):

- the first line is the session's metadata: ``sessionId``, ``projectHash``, ``startTime``,
  ``lastUpdated``, ``kind`` (``main`` | ``subagent``), ``directories``. No event;
- a message record has an ``id`` and a ``type``: ``user`` (the prompt: ``content``, and
  ``displayContent`` when what was typed differs from what was sent), ``gemini`` (the
  reply: ``content``, ``thoughts``, ``toolCalls``, ``model``, ``tokens``), or ``info`` /
  ``error`` / ``warning`` (the CLI's own notices → META). ``content`` is a string or a
  list of parts (``{text}``, ``{thought: true, text}``, ``{inlineData}``, ``{fileData}``,
  ``{functionCall}``, ``{functionResponse}``);
- the CLI appends a message again, whole, each time it changes (its tokens arrive, a
  tool call is added or finishes): the reader remembers what it took from each recent
  message id and takes only what is new — a call once, its result once it has one;
- ``{"$set": {...}}`` updates the metadata (``lastUpdated``, ``summary``, ``directories``;
  ``messages`` when the CLI rewrote its history: messages in it the reader has not seen
  are read as any other); ``{"$rewindTo": id}`` marks the user rewinding the chat (a
  META note: what was said before stays archived and searchable).

A tool call (``toolCalls[]``: ``id``, ``name``, ``args``, ``status``, ``result`` — a list
of ``functionResponse`` parts — and ``resultDisplay``) becomes a TOOL_CALL and, once its
status is final (``success`` | ``error`` | ``cancelled``), a TOOL_RESULT with the same
call id. The files a prompt referenced with ``@path`` are pasted after the user's words
under ``--- Content from referenced files ---``: that block is HARNESS
(``referenced_files``), never the user's words.

Aider chat histories (``.aider.chat.history.md`` in the repository Aider ran in).

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

from memoir.ingest.records import (
    SMALL_INPUT,
    EventSink,
    FormatReader,
    RawLine,
    ReadResult,
    compact_json,
    parse_ts,
)
from memoir.model import Author, EventKind, Harness
from memoir.model.harness import HarnessShape
from memoir.store.values import SkippedLine

__all__ = [
    "AIDER_HISTORY",
    "AiderReader",
    "GeminiReader",
    "document_head",
    "is_gemini_record",
    "line_kind",
    "parts_text",
    "read_markdown",
]

MESSAGE_TYPES = frozenset({"user", "gemini", "info", "error", "warning"})
FINAL_STATUSES = frozenset({"success", "error", "cancelled"})
REFERENCED = "--- Content from referenced files ---"
_RECENT = 64  # message ids whose taken parts are remembered between lines and syncs


_FIELD = re.compile(rb'"(sessionId|projectHash|kind)"\s*:\s*"([^"\\]{1,200})"')


def document_head(head: bytes) -> dict[str, str]:
    """``sessionId``, ``projectHash`` and ``kind`` of a chat written as one JSON document
    (Gemini CLI before JSONL), read from its first bytes (pure; the document is parsed
    whole only when it is read)."""
    found: dict[str, str] = {}
    for match in _FIELD.finditer(head[:4096]):
        key = match.group(1).decode()
        found.setdefault(key, match.group(2).decode("utf-8", "replace"))
    return found


def is_gemini_record(obj: dict[str, Any]) -> bool:
    """A line only Gemini CLI writes: its metadata line, a ``$set`` or ``$rewindTo``."""
    if isinstance(obj.get("sessionId"), str) and isinstance(obj.get("projectHash"), str):
        return True
    return isinstance(obj.get("$set"), dict) or isinstance(obj.get("$rewindTo"), str)


def parts_text(content: object) -> tuple[str, list[str]]:
    """(text, non-text parts shown as ``[image]``/``[file]``) of a Gemini ``content``;
    thought parts and function parts are not text (the reader takes them apart)."""
    if isinstance(content, str):
        return content, []
    items = [content] if isinstance(content, dict) else content
    if not isinstance(items, list):
        return "", []
    texts: list[str] = []
    others: list[str] = []
    for part in items:
        if isinstance(part, str):
            texts.append(part)
        elif isinstance(part, dict):
            if isinstance(part.get("text"), str) and not part.get("thought"):
                texts.append(part["text"])
            elif "inlineData" in part:
                mime = str((part.get("inlineData") or {}).get("mimeType", ""))
                others.append("[image]" if mime.startswith("image/") else "[file]")
            elif "fileData" in part:
                others.append("[file]")
    return "".join(texts), others


def _response_text(result: object) -> str:
    """The text of a tool result: its ``functionResponse`` parts' output (or error)."""
    items = [result] if isinstance(result, dict) else result
    if isinstance(result, str):
        return result
    if not isinstance(items, list):
        return ""
    texts: list[str] = []
    for part in items:
        if not isinstance(part, dict):
            continue
        response = part.get("functionResponse")
        if isinstance(response, dict):
            body = response.get("response")
            if isinstance(body, dict):
                value = body.get("output", body.get("error", body.get("content")))
                texts.append(value if isinstance(value, str) else compact_json(body))
            elif body is not None:
                texts.append(compact_json(body))
        elif isinstance(part.get("text"), str):
            texts.append(part["text"])
    return "\n".join(t for t in texts if t)


class GeminiReader(FormatReader):
    harness = Harness.GEMINI_CLI

    def handle(self, obj: dict[str, Any]) -> bool:
        if isinstance(obj.get("$set"), dict):
            changes = obj["$set"]
            self.note_time(parse_ts(changes.get("lastUpdated")))
            messages = changes.get("messages")
            for message in messages if isinstance(messages, list) else []:
                if isinstance(message, dict) and message.get("id") not in self._seen():
                    self._message(message)
            return True
        if isinstance(obj.get("$rewindTo"), str):
            payload = {"rewind_to": obj["$rewindTo"]}
            text = "The user rewound the chat to an earlier message."
            self.sink.emit(EventKind.META, Author.SYSTEM, text, None, payload=payload)
            return True
        if isinstance(obj.get("sessionId"), str) and "type" not in obj:
            self.note("session_id", obj["sessionId"])
            self.note_time(parse_ts(obj.get("startTime")))
            if obj.get("kind") == "subagent":
                self.state["subagent"] = True
            dirs = obj.get("directories")
            if isinstance(dirs, list) and dirs and isinstance(dirs[0], str):
                self.note("cwd", dirs[0])
            messages = obj.get("messages")  # a whole chat written as one document
            for message in messages if isinstance(messages, list) else []:
                if isinstance(message, dict):
                    self._message(message)
            return True
        if isinstance(obj.get("id"), str) and obj.get("type") in MESSAGE_TYPES:
            self._message(obj)
            return True
        if isinstance(obj.get("id"), str):
            return self.unknown(f"message of type {obj.get('type')!r}")
        return False

    def _seen(self) -> dict[str, dict[str, Any]]:
        seen = self.state.get("seen")
        if not isinstance(seen, dict):
            seen = self.state["seen"] = {}
        return seen

    def _taken(self, message_id: str) -> dict[str, Any]:
        """What was taken from message ``message_id`` so far (a recent one's entry)."""
        seen = self._seen()
        entry = seen.pop(message_id, None)
        if not isinstance(entry, dict):
            entry = {"text": False, "thoughts": 0, "calls": [], "results": []}
        seen[message_id] = entry  # the most recent last
        while len(seen) > _RECENT:
            seen.pop(next(iter(seen)))
        return entry

    def _message(self, msg: dict[str, Any]) -> None:
        mtype = msg.get("type")
        ts = parse_ts(msg.get("timestamp"))
        self.note_time(ts)
        taken = self._taken(str(msg.get("id")))
        if mtype == "user":
            if not taken["text"]:
                taken["text"] = True
                self._user(msg, ts)
            return
        if mtype != "gemini":
            text, _ = parts_text(msg.get("content"))
            if text and not taken["text"]:
                taken["text"] = True
                self.sink.emit(EventKind.META, Author.SYSTEM, text, ts, payload={"notice": mtype})
            return
        model = msg.get("model")
        base = {"model": model} if isinstance(model, str) else {}
        thoughts = msg.get("thoughts")
        thoughts = thoughts if isinstance(thoughts, list) else []
        for thought in thoughts[taken["thoughts"] :]:
            if isinstance(thought, dict):
                subject, body = thought.get("subject"), thought.get("description")
                text = "\n".join(str(x) for x in (subject, body) if x)
                when = parse_ts(thought.get("timestamp")) or ts
                self.sink.emit(EventKind.THINKING, Author.ASSISTANT, text, when)
        taken["thoughts"] = max(taken["thoughts"], len(thoughts))
        text, _ = parts_text(msg.get("content"))
        if text.strip() and not taken["text"]:
            taken["text"] = True
            self.sink.emit(EventKind.ASSISTANT_TEXT, Author.ASSISTANT, text, ts, payload=base)
        self._function_parts(msg.get("content"), ts, taken)
        calls = msg.get("toolCalls")
        for call in calls if isinstance(calls, list) else []:
            if isinstance(call, dict) and isinstance(call.get("id"), str):
                self._tool_call(call, ts, taken)

    def _user(self, msg: dict[str, Any], ts: datetime | None) -> None:
        shown = msg.get("displayContent")
        text, others = parts_text(msg.get("content"))
        words = text
        if shown is not None:
            words, _ = parts_text(shown)
        cut = text.find(REFERENCED)
        if cut >= 0:
            if shown is None:
                words = text[:cut].rstrip()
            pasted = text[cut:]
            if words.strip():
                self.user_words(words, ts)
            payload = {"harness": HarnessShape.REFERENCED_FILES.value}
            self.sink.emit(EventKind.HARNESS, Author.SYSTEM, pasted, ts, payload=payload)
        elif words.strip():
            self.user_words(words, ts)
        for shown_part in others:
            self.sink.emit(EventKind.ATTACHMENT, Author.USER, shown_part, ts)
        self._function_parts(msg.get("content"), ts, None)

    def _function_parts(
        self, content: object, ts: datetime | None, taken: dict[str, Any] | None
    ) -> None:
        """``functionCall`` / ``functionResponse`` parts inside a content (paired by id,
        else by name): as the model's history holds them."""
        items = content if isinstance(content, list) else []
        for part in items:
            if not isinstance(part, dict):
                continue
            call = part.get("functionCall")
            if isinstance(call, dict):
                call_id = call.get("id") or call.get("name")
                if taken is not None and call_id in taken["calls"]:
                    continue
                self._emit_call(str(call.get("name", "function")), call_id, call.get("args"), ts)
                if taken is not None:
                    taken["calls"].append(call_id)
            response = part.get("functionResponse")
            if isinstance(response, dict):
                call_id = response.get("id") or response.get("name")
                name = self.tool_for(call_id) or response.get("name")
                text = _response_text([part])
                self.tool_event(
                    EventKind.TOOL_RESULT,
                    Author.TOOL,
                    text,
                    ts,
                    str(name) if name else None,
                    call_id,
                )

    def _emit_call(self, name: str, call_id: object, args: object, ts: datetime | None) -> None:
        self.remember_tool(call_id, name)
        text = compact_json(args if args is not None else {})
        payload = {"input": args} if len(text) <= SMALL_INPUT and isinstance(args, dict) else {}
        self.tool_event(EventKind.TOOL_CALL, Author.ASSISTANT, text, ts, name, call_id, payload)

    def _tool_call(self, call: dict[str, Any], ts: datetime | None, taken: dict[str, Any]) -> None:
        call_id = call["id"]
        name = str(call.get("name", "tool"))
        when = parse_ts(call.get("timestamp")) or ts
        if call_id not in taken["calls"]:
            taken["calls"].append(call_id)
            self._emit_call(name, call_id, call.get("args"), when)
        status = call.get("status")
        if status not in FINAL_STATUSES or call_id in taken["results"]:
            return
        taken["results"].append(call_id)
        text = _response_text(call.get("result"))
        display = call.get("resultDisplay")
        if not text and isinstance(display, str):
            text = display
        payload: dict[str, Any] = {"status": status}
        if status == "error":
            payload["is_error"] = True
        self.tool_for(call_id)
        self.tool_event(EventKind.TOOL_RESULT, Author.TOOL, text, when, name, call_id, payload)


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
