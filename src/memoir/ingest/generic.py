"""The generic format: OpenAI-style chat messages, one file per session.

A file is either a JSON list of messages or JSONL with one message a line. A message is
``{role, content, tool_calls?, tool_call_id?, name?, timestamp?}``; ``content`` is a string
or a list of parts (``{type: "text", text}``, image parts). Roles: ``user`` → USER_TEXT
(harness text an agent's CLI or SDK left in it — a ``<system-reminder>``, a command echo —
cut out as HARNESS, :mod:`memoir.model.harness`; this reader also reads what the HTTP
API and MCP append),
``assistant`` → ASSISTANT_TEXT plus one TOOL_CALL per ``tool_calls`` entry, ``tool`` (or
``function``) → TOOL_RESULT named after the call it answers, ``system``/``developer`` →
META. A user or assistant message's ``name`` (a person in a group chat, one agent of
several) is kept as its event's speaker, ``payload["speaker"]``. The session id is the file
stem.
"""

from __future__ import annotations

from typing import Any

from memoir.ingest.records import SMALL_INPUT, FormatReader, compact_json, parse_ts
from memoir.model import Author, EventKind, Harness, clean_speaker

__all__ = ["GENERIC_ROLES", "GenericReader"]

GENERIC_ROLES = frozenset({"user", "assistant", "tool", "function", "system", "developer"})


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
