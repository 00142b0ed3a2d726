"""OpenCode sessions, as :mod:`memoir.ingest.opencode_store` exports them (one JSONL file
per session under ``<home>/sources/opencode/``).

OpenCode keeps its sessions in a database (``opencode.db``; older versions in one JSON
file per session, message and part under ``storage/``), not in a transcript file. The
export writes each session as lines shaped like OpenCode's own ``opencode export``
output, cut into one line per message:

- the first line is the session: ``{"info": {id, projectID, directory, parentID?,
  time: {created}}}`` → the session's cwd, no event (a ``parentID`` makes it a
  subagent's);
- every other line is one finished message: ``{"info": {id, role, time, modelID,
  error?, summary?}, "parts": [...]}``. Parts: ``text`` (the user's or the assistant's
  words; ``synthetic: true`` is text OpenCode wrote itself → HARNESS ``synthetic``),
  ``reasoning`` → THINKING, ``tool`` (``callID``, ``tool``, ``state: {status, input,
  output | error}``) → a TOOL_CALL and, once ``completed`` or ``error``, its TOOL_RESULT
  with the same call id, ``file`` → ATTACHMENT, ``compaction`` → COMPACTION, ``agent`` /
  ``subtask`` / ``retry`` → META; ``step-start``, ``step-finish``, ``snapshot`` and
  ``patch`` are bookkeeping (nothing). An assistant message with ``summary: true`` is
  OpenCode's own compaction summary → COMPACTION; one with an ``error`` adds a META note.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from memoir.ingest.records import SMALL_INPUT, FormatReader, compact_json, parse_ts
from memoir.model import Author, EventKind, Harness
from memoir.model.harness import HarnessShape

__all__ = ["OpenCodeReader", "is_opencode_record"]

_QUIET_PARTS = frozenset({"step-start", "step-finish", "snapshot", "patch"})
_NOTE_PARTS = frozenset({"agent", "subtask", "retry"})


def is_opencode_record(obj: dict[str, Any]) -> bool:
    """An export line: a session (``info`` with ``projectID`` and ``directory``) or a
    message (``info`` with a ``role``, and ``parts``)."""
    info = obj.get("info")
    if not isinstance(info, dict):
        return False
    if "projectID" in info and "directory" in info:
        return True
    return isinstance(info.get("role"), str) and isinstance(obj.get("parts"), list)


def _ms(time: object, key: str) -> datetime | None:
    return parse_ts(time.get(key)) if isinstance(time, dict) else None


class OpenCodeReader(FormatReader):
    harness = Harness.OPENCODE

    def handle(self, obj: dict[str, Any]) -> bool:
        info = obj.get("info")
        if not isinstance(info, dict):
            return False
        if "projectID" in info and "directory" in info:
            self.note("session_id", info.get("id"))
            self.note("cwd", info.get("directory"))
            if info.get("parentID"):
                self.state["subagent"] = True
            self.note_time(_ms(info.get("time"), "created"))
            return True
        role = info.get("role")
        parts = obj.get("parts")
        if not isinstance(parts, list) or role not in ("user", "assistant"):
            return self.unknown(f"message of role {role!r}")
        ts = _ms(info.get("time"), "created")
        self.note_time(ts)
        self.note_time(_ms(info.get("time"), "completed"))
        model = info.get("modelID")
        base = {"model": model} if isinstance(model, str) else {}
        if role == "assistant" and info.get("summary") is True:
            text = "\n\n".join(
                str(p.get("text", ""))
                for p in parts
                if isinstance(p, dict) and p.get("type") == "text"
            )
            self.sink.emit(EventKind.COMPACTION, Author.SYSTEM, text, ts, payload=base)
            return True
        lost = sorted(
            {
                str(p.get("type"))
                for p in parts
                if isinstance(p, dict) and not self._part(p, role, ts, base)
            }
        )
        error = info.get("error")
        if isinstance(error, dict):
            data = error.get("data")
            message = data.get("message") if isinstance(data, dict) else None
            text = str(message or error.get("name") or "error")
            payload = {"error": error.get("name")}
            self.sink.emit(EventKind.META, Author.SYSTEM, text, ts, payload=payload)
        return self.unknown(f"parts of type {', '.join(lost)}") if lost else True

    def _part(
        self, part: dict[str, Any], role: str, ts: datetime | None, base: dict[str, Any]
    ) -> bool:
        ptype = part.get("type")
        when = _ms(part.get("time"), "start") or ts
        if ptype == "text":
            text = str(part.get("text", ""))
            if not text.strip() or part.get("ignored"):
                return True
            if part.get("synthetic"):
                payload = {"harness": HarnessShape.SYNTHETIC.value}
                self.sink.emit(EventKind.HARNESS, Author.SYSTEM, text, ts, payload=payload)
            elif role == "user":
                self.user_words(text, ts)
            else:
                self.sink.emit(EventKind.ASSISTANT_TEXT, Author.ASSISTANT, text, when, payload=base)
            return True
        if ptype == "reasoning":
            self.sink.emit(EventKind.THINKING, Author.ASSISTANT, str(part.get("text", "")), when)
            return True
        if ptype == "tool":
            self._tool(part, ts)
            return True
        if ptype == "file":
            mime = str(part.get("mime", ""))
            shown = "[image]" if mime.startswith("image/") else "[file]"
            name = part.get("filename")
            payload = {"media_type": mime} if mime else {}
            text = f"{shown} {name}" if isinstance(name, str) else shown
            self.sink.emit(EventKind.ATTACHMENT, Author.USER, text, ts, payload=payload)
            return True
        if ptype == "compaction":
            self.sink.emit(
                EventKind.COMPACTION, Author.SYSTEM, "", ts, payload={"auto": part.get("auto")}
            )
            return True
        if ptype in _NOTE_PARTS:
            text = str(part.get("name") or part.get("description") or part.get("prompt") or ptype)
            self.sink.emit(EventKind.META, Author.SYSTEM, text, ts, payload={"part": ptype})
            return True
        return ptype in _QUIET_PARTS

    def _tool(self, part: dict[str, Any], ts: datetime | None) -> None:
        call_id = part.get("callID") or part.get("id")
        name = str(part.get("tool", "tool"))
        state = part.get("state")
        state = state if isinstance(state, dict) else {}
        tool_input = state.get("input")
        text = compact_json(tool_input if tool_input is not None else {})
        payload = (
            {"input": tool_input}
            if isinstance(tool_input, dict) and len(text) <= SMALL_INPUT
            else {}
        )
        started = _ms(state.get("time"), "start") or ts
        self.remember_tool(call_id, name)
        self.tool_event(
            EventKind.TOOL_CALL, Author.ASSISTANT, text, started, name, call_id, payload
        )
        status = state.get("status")
        if status not in ("completed", "error"):
            return
        self.tool_for(call_id)
        ended = _ms(state.get("time"), "end") or started
        extra: dict[str, Any] = {}
        if status == "error":
            output, extra["is_error"] = str(state.get("error", "")), True
        else:
            output = str(state.get("output", ""))
        title = state.get("title")
        if isinstance(title, str) and title:
            extra["title"] = title
        self.tool_event(EventKind.TOOL_RESULT, Author.TOOL, output, ended, name, call_id, extra)
