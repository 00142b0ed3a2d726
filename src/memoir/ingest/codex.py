"""Codex CLI rollouts (``~/.codex/sessions/YYYY/MM/DD/rollout-<ts>-<uuid>.jsonl``).

Lines are ``{timestamp, type, payload}``. ``session_meta`` gives the session id and cwd
(kept in the reader state, no event); ``turn_context`` the model; ``response_item`` carries
the conversation (messages, reasoning, tool calls and their outputs paired by
``call_id``); ``event_msg`` lines duplicate response items for the UI and are ignored;
``compacted`` is the CLI's own compaction → a COMPACTION event.

Text the CLI put in user-role messages (``<environment_context>``, ``<user_instructions>``,
the AGENTS.md it pastes in, ``<turn_aborted>``, ``<user_shell_command>``, image
placeholders; :mod:`memoir.model.harness`) is HARNESS, not the user speaking; a
message holding such a block beside the user's words is cut in two events, the user's part
USER_TEXT. ``developer``/``system`` messages are META.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from memoir.ingest.records import SMALL_INPUT, FormatReader, compact_json, parse_ts, stdlib_loads
from memoir.model import Author, EventKind, Harness

__all__ = ["CODEX_TYPES", "CodexReader"]

CODEX_TYPES = frozenset({"session_meta", "turn_context", "response_item", "event_msg", "compacted"})


def _content_text(content: object) -> str:
    if isinstance(content, str):
        return content
    parts: list[str] = []
    content = [content] if isinstance(content, dict) else content
    if isinstance(content, list):
        for block in content:
            if isinstance(block, dict):
                btype = block.get("type")
                if btype in ("input_image", "image"):
                    parts.append("[image]")
                elif isinstance(block.get("text"), str):  # input_text, output_text, text, …
                    parts.append(block["text"])
            elif isinstance(block, str):
                parts.append(block)
    return "\n\n".join(p for p in parts if p)


def _output_text(output: object) -> tuple[str, dict[str, Any]]:
    """A tool output: a string, possibly a JSON string ``{"output": …, "metadata": …}``."""
    if isinstance(output, str):
        stripped = output.lstrip()
        if stripped.startswith("{"):
            try:
                decoded = stdlib_loads(output)
            except ValueError:
                return output, {}
            if isinstance(decoded, dict) and "output" in decoded:
                meta = decoded.get("metadata")
                payload = {"exit_code": meta.get("exit_code")} if isinstance(meta, dict) else {}
                return str(decoded.get("output", "")), payload
        return output, {}
    if isinstance(output, dict) and "content" in output:
        return _content_text(output.get("content")), {}
    return compact_json(output), {}


class CodexReader(FormatReader):
    harness = Harness.CODEX

    def handle(self, obj: dict[str, Any]) -> bool:
        kind = obj.get("type")
        payload = obj.get("payload")
        if not isinstance(payload, dict):
            payload = {}
        ts = parse_ts(obj.get("timestamp"))
        if kind == "session_meta":
            self.note("session_id", payload.get("id"))
            self.note("cwd", payload.get("cwd"))
            git = payload.get("git")
            if isinstance(git, dict):
                self.note("git_branch", git.get("branch"))
            self.note_time(parse_ts(payload.get("timestamp")) or ts)
            return True
        if kind == "turn_context":
            model = payload.get("model")
            if isinstance(model, str):
                self.state["model"] = model
            return True
        if kind == "event_msg":
            return True
        if kind == "compacted":
            self.note_time(ts)
            text = str(payload.get("message", ""))
            self.sink.emit(EventKind.COMPACTION, Author.SYSTEM, text, ts)
            return True
        if kind == "response_item":
            self.note_time(ts)
            return self._item(payload, ts)
        return False

    def _item(self, item: dict[str, Any], ts: datetime | None) -> bool:
        itype = item.get("type")
        if itype == "message":
            self._message(item, ts)
        elif itype == "reasoning":
            summary = item.get("summary")
            texts = (
                [str(s.get("text", "")) for s in summary or [] if isinstance(s, dict)]
                if isinstance(summary, list)
                else []
            )
            text = "\n\n".join(t for t in texts if t)
            if not text:
                text = _content_text(item.get("content"))
            self.sink.emit(EventKind.THINKING, Author.ASSISTANT, text, ts)
        elif itype in ("function_call", "custom_tool_call", "local_shell_call") or (
            isinstance(itype, str) and itype.endswith("_call")
        ):
            self._call(item, itype, ts)
        elif isinstance(itype, str) and itype.endswith("_output"):
            call_id = item.get("call_id")
            name = self.tool_for(call_id)
            text, payload = _output_text(item.get("output"))
            self.tool_event(EventKind.TOOL_RESULT, Author.TOOL, text, ts, name, call_id, payload)
        else:
            return False
        return True

    def _message(self, item: dict[str, Any], ts: datetime | None) -> None:
        role = item.get("role")
        text = _content_text(item.get("content"))
        if not text:
            return
        if role == "assistant":
            model = self.state.get("model")
            payload = {"model": model} if isinstance(model, str) else {}
            self.sink.emit(EventKind.ASSISTANT_TEXT, Author.ASSISTANT, text, ts, payload=payload)
        elif role == "user":
            self.user_words(text, ts, note=lambda _text, _shape: {"role": "user"})
        else:
            self.sink.emit(EventKind.META, Author.SYSTEM, text, ts, payload={"role": role})

    def _call(self, item: dict[str, Any], itype: str, ts: datetime | None) -> None:
        call_id = item.get("call_id") or item.get("id")
        payload: dict[str, Any] = {}
        if itype == "local_shell_call":
            name = "shell"
            action = item.get("action")
            command = action.get("command") if isinstance(action, dict) else None
            text = (
                " ".join(map(str, command)) if isinstance(command, list) else compact_json(action)
            )
        elif itype == "function_call":
            name = str(item.get("name", "function"))
            text = str(item.get("arguments", ""))
        elif itype == "custom_tool_call":
            name = str(item.get("name", "tool"))
            text = str(item.get("input", ""))
        else:
            name = str(item.get("name") or itype.removesuffix("_call"))
            rest = {k: v for k, v in item.items() if k not in ("type", "id", "call_id", "status")}
            text = compact_json(rest)
        self.remember_tool(call_id, name)
        if len(text) <= SMALL_INPUT:  # the call's arguments for rebuilding a request
            payload["arguments"] = text
        self.tool_event(EventKind.TOOL_CALL, Author.ASSISTANT, text, ts, name, call_id, payload)
