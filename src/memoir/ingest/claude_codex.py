"""Claude Code and Codex CLI transcripts, each read by its own format reader.

Claude Code transcripts (``~/.claude/projects/<project>/<session>.jsonl``).

Record types: ``user`` and ``assistant`` carry ``message.content`` (a string or blocks:
text, thinking, tool_use, tool_result, image); ``summary`` becomes a META event;
``system`` records become META (``compact_boundary`` a COMPACTION marker);
``file-history-snapshot`` and other bookkeeping records carry no conversation and produce
nothing. Decisions:

- text the CLI wrote under the user's role is HARNESS, never the user's words
  (:mod:`memoir.model.harness`): the local-command caveat, command echoes
  (``<command-name>``, ``<local-command-stdout>`` …), ``<system-reminder>`` blocks, hook
  output, ``[Request interrupted by user…]``, image placeholders, a continuation preamble;
  a message holding such a block beside the user's own words is cut in two (or more)
  events, in order: the user's part stays USER_TEXT. HARNESS opens no exchange;
- a ``user`` record with ``isMeta`` is not the user speaking → HARNESS as a whole (shape
  ``meta`` when its text is of no known shape);
- a ``user`` record carrying tool_result blocks is the tool answering: its results become
  TOOL_RESULT events (named after the tool_use they answer), the harness text beside them
  HARNESS and any other text META;
- an ``attachment`` record of a hook (``attachment.type`` ``hook_…``: its additional
  context, its output) is HARNESS; other attachment records are not read (archived);
- ``isCompactSummary`` user records (the CLI's own compaction) are COMPACTION markers;
- one reply spread over several assistant records simply yields consecutive events.

Codex CLI rollouts (``~/.codex/sessions/YYYY/MM/DD/rollout-<ts>-<uuid>.jsonl``).

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

import re
from datetime import datetime
from typing import Any

from memoir.ingest.records import (
    SMALL_INPUT,
    FormatReader,
    bounded,
    compact_json,
    parse_ts,
    stdlib_loads,
)
from memoir.model import Author, EventKind, Harness
from memoir.model.harness import HarnessShape, harness_shape

__all__ = [
    "CLAUDE_IGNORED_TYPES",
    "CLAUDE_TYPES",
    "CODEX_TYPES",
    "ClaudeReader",
    "CodexReader",
    "block_text",
]

CLAUDE_IGNORED_TYPES = frozenset(
    {
        "file-history-snapshot",
        "queue-operation",
        "progress",
        "custom-title",
        "tag",
        "agent-name",
        "last-prompt",
        "pr-link",
    }
)
CLAUDE_TYPES = (
    frozenset({"user", "assistant", "summary", "system", "attachment"}) | CLAUDE_IGNORED_TYPES
)

_COMMAND = re.compile(r"<command-name>\s*(.*?)\s*</command-name>", re.S)


def block_text(content: object) -> str:
    """Plain text of a tool_result's content (a string or a list of blocks)."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts: list[str] = []
        for block in content:
            if isinstance(block, dict):
                kind = block.get("type")
                if kind == "text":
                    parts.append(str(block.get("text", "")))
                elif kind == "image":
                    parts.append("[image]")
                else:
                    parts.append(compact_json(block))
            elif isinstance(block, str):
                parts.append(block)
        return "\n".join(parts)
    if content is None:
        return ""
    return compact_json(content)


def _command_note(text: str, shape: HarnessShape) -> dict[str, Any]:
    """A slash command's echo also names the command (``{"command": "/clear"}``)."""
    if shape is HarnessShape.COMMAND and (match := _COMMAND.search(text)):
        return {"command": match.group(1)}
    return {}


class ClaudeReader(FormatReader):
    harness = Harness.CLAUDE_CODE

    def handle(self, obj: dict[str, Any]) -> bool:
        kind = obj.get("type")
        if kind == "user" or kind == "assistant":
            ts = parse_ts(obj.get("timestamp"))
            self.note_time(ts)
            self.note("cwd", obj.get("cwd"))
            self.note("git_branch", obj.get("gitBranch"))
            message = obj.get("message")
            if isinstance(message, str):  # a bare string: the message's text
                message = {"content": message}
            if message is None:
                return True
            if not isinstance(message, dict):
                return self.unknown(f"{kind} message that is a {type(message).__name__}")
            if obj.get("isSidechain") is True and not self.state.get("subagent"):
                return self._sidechain(kind, message, ts)
            if kind == "user":
                return self._user(obj, message, ts)
            return self._assistant(message, ts)
        if kind == "summary":
            text = str(obj.get("summary", ""))
            payload = {"record": "summary", "leaf_uuid": obj.get("leafUuid")}
            self.sink.emit(EventKind.META, Author.SYSTEM, text, None, payload=payload)
            return True
        if kind == "system":
            ts = parse_ts(obj.get("timestamp"))
            self.note_time(ts)
            subtype = obj.get("subtype")
            text = block_text(obj.get("content"))
            event_kind = EventKind.COMPACTION if subtype == "compact_boundary" else EventKind.META
            payload = {"record": "system", "subtype": subtype}
            self.sink.emit(event_kind, Author.SYSTEM, text, ts, payload=payload)
            return True
        if kind == "attachment":
            return self._attachment(obj)
        return isinstance(kind, str) and kind in CLAUDE_IGNORED_TYPES

    def _attachment(self, obj: dict[str, Any]) -> bool:
        """A hook's output, written (Claude Code 2.1) as a record of its own: HARNESS
        text (the ``rendered`` text the model was given, else the hook's content or
        stdout). Other attachment records stay unknown (their bytes archived)."""
        attachment = obj.get("attachment")
        atype = attachment.get("type") if isinstance(attachment, dict) else None
        if not isinstance(attachment, dict) or not str(atype).startswith("hook_"):
            return self.unknown(f"attachment of type {atype}")
        ts = parse_ts(obj.get("timestamp"))
        self.note_time(ts)
        rendered = obj.get("rendered")
        parts = (
            [r.get("content") for r in rendered if isinstance(r, dict)]
            if isinstance(rendered, list)
            else []
        )
        if not any(isinstance(p, str) and p.strip() for p in parts):
            content = attachment.get("content", attachment.get("stdout"))
            parts = content if isinstance(content, list) else [content]
        text = "\n".join(p for p in parts if isinstance(p, str) and p.strip())
        if not text:
            return True
        body, cut = bounded(text)
        payload: dict[str, Any] = {"harness": HarnessShape.HOOK.value, "attachment": atype}
        if isinstance(hook := attachment.get("hookName"), str):
            payload["hook"] = hook
        self.sink.emit(EventKind.HARNESS, Author.SYSTEM, body, ts, payload=payload | cut)
        return True

    def _sidechain(self, kind: str, message: dict[str, Any], ts: datetime | None) -> bool:
        """A subagent's record written inline in its parent's transcript (older Claude Code
        versions did): kept as a note, never as words of the user or the main assistant."""
        content = message.get("content")
        text = content if isinstance(content, str) else block_text(content)
        if not _blank(text):
            payload = {"sidechain": kind}
            self.sink.emit(EventKind.META, Author.SYSTEM, text, ts, payload=payload)
        return True

    def _user_text(self, text: str, ts: datetime | None, meta: bool, answering: bool) -> None:
        if _blank(text):
            return
        if meta:  # the record says it is not the user: all of it is harness text
            shape = harness_shape(text) or HarnessShape.META
            payload = {"harness": shape.value, **_command_note(text, shape), "meta": True}
            self.sink.emit(EventKind.HARNESS, Author.SYSTEM, text, ts, payload=payload)
            return
        self.user_words(text, ts, note=_command_note, spoken=not answering)

    def _user(self, obj: dict[str, Any], message: dict[str, Any], ts: datetime | None) -> bool:
        content = message.get("content")
        if obj.get("isCompactSummary"):
            text = content if isinstance(content, str) else block_text(content)
            self.sink.emit(EventKind.COMPACTION, Author.SYSTEM, text, ts)
            return True
        meta = bool(obj.get("isMeta"))
        if isinstance(content, str):
            self._user_text(content, ts, meta, answering=False)
            return True
        content = [content] if isinstance(content, dict) else content
        if content is None:
            return True
        if not isinstance(content, list):
            return self.unknown(f"user content that is a {type(content).__name__}")
        blocks = [b for b in content if isinstance(b, dict)]
        answering = any(b.get("type") == "tool_result" for b in blocks)
        texts = [w for b in blocks if (w := _block_words(b, _USER_BLOCKS)) is not None]
        if texts:
            self._user_text("\n\n".join(texts), ts, meta, answering)
        for block in blocks:
            btype = block.get("type")
            if btype == "tool_result":
                call_id = block.get("tool_use_id")
                name = self.tool_for(call_id)
                payload = {"is_error": True} if block.get("is_error") else {}
                text = block_text(block.get("content"))
                self.tool_event(
                    EventKind.TOOL_RESULT, Author.TOOL, text, ts, name, call_id, payload
                )
            elif btype in ("image", "document"):
                source = block.get("source")
                media = source.get("media_type") if isinstance(source, dict) else None
                self.sink.emit(
                    EventKind.ATTACHMENT,
                    Author.USER,
                    f"[{btype}]",
                    ts,
                    payload={"media_type": media} if media else {},
                )
        return _all_known(self, blocks, _USER_BLOCKS)

    def _assistant(self, message: dict[str, Any], ts: datetime | None) -> bool:
        content = message.get("content")
        model = message.get("model")
        base = {"model": model} if isinstance(model, str) else {}
        if isinstance(content, str):
            if content:
                self.sink.emit(
                    EventKind.ASSISTANT_TEXT, Author.ASSISTANT, content, ts, payload=base
                )
            return True
        content = [content] if isinstance(content, dict) else content
        if content is None:
            return True
        if not isinstance(content, list):
            return self.unknown(f"assistant content that is a {type(content).__name__}")
        blocks = [b for b in content if isinstance(b, dict)]
        for block in blocks:
            btype = block.get("type")
            if (text := _block_words(block, _ASSISTANT_BLOCKS)) is not None:
                if text:
                    self.sink.emit(
                        EventKind.ASSISTANT_TEXT, Author.ASSISTANT, text, ts, payload=base
                    )
            elif btype == "thinking":
                self.sink.emit(
                    EventKind.THINKING, Author.ASSISTANT, str(block.get("thinking", "")), ts
                )
            elif btype == "redacted_thinking":
                self.sink.emit(
                    EventKind.THINKING, Author.ASSISTANT, "", ts, payload={"redacted": True}
                )
            elif btype in ("tool_use", "server_tool_use"):
                name = str(block.get("name", "tool"))
                call_id = block.get("id")
                self.remember_tool(call_id, name)
                tool_input = block.get("input")
                text = compact_json(tool_input)
                payload = {"input": tool_input} if len(text) <= SMALL_INPUT else {}
                self.tool_event(
                    EventKind.TOOL_CALL, Author.ASSISTANT, text, ts, name, call_id, payload
                )
            elif "tool_use_id" in block:  # web_search_tool_result and friends
                call_id = block.get("tool_use_id")
                answered = self.tool_for(call_id)
                text = block_text(block.get("content"))
                self.tool_event(EventKind.TOOL_RESULT, Author.TOOL, text, ts, answered, call_id)
        return _all_known(self, blocks, _ASSISTANT_BLOCKS)


_USER_BLOCKS = frozenset({"text", "tool_result", "image", "document"})
_ASSISTANT_BLOCKS = frozenset(
    {"text", "thinking", "redacted_thinking", "tool_use", "server_tool_use"}
)


def _block_words(block: dict[str, Any], known: frozenset[str]) -> str | None:
    """The text of a text block — or of a block of a type the reader does not know that
    still carries a ``text`` string (``input_text``, ``output_text``, …); None otherwise."""
    btype = block.get("type")
    if btype == "text" or (btype not in known and isinstance(block.get("text"), str)):
        return str(block.get("text", ""))
    return None


def _all_known(reader: FormatReader, blocks: list[dict[str, Any]], known: frozenset[str]) -> bool:
    """True when every block was understood; else the line is reported with the types of
    those that were not (their bytes stay in the archive)."""
    lost = sorted(
        {
            str(b.get("type"))
            for b in blocks
            if b.get("type") not in known
            and not isinstance(b.get("text"), str)
            and "tool_use_id" not in b
        }
    )
    return reader.unknown(f"content blocks of type {', '.join(lost)}") if lost else True


def _blank(text: str) -> bool:
    return not text or text.isspace()


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
