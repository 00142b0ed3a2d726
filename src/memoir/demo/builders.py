"""Build realistic transcript records (Claude Code, Codex CLI, generic) as plain dicts.

Used to write the demo corpus, by the ingest tests and by the sync benchmark, so all three
speak the formats exactly as ``shared/fixtures/FORMATS.md`` describes them.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from datetime import UTC, datetime, timedelta
from typing import Any

__all__ = [
    "ClaudeWriter",
    "CodexWriter",
    "jsonl",
    "text_block",
    "tool_result_block",
    "tool_use_block",
]


def jsonl(records: Iterable[dict[str, Any]]) -> bytes:
    """Records as JSONL bytes (compact separators, as Claude Code writes them)."""
    return b"".join(
        json.dumps(r, ensure_ascii=False, separators=(",", ":")).encode() + b"\n" for r in records
    )


def text_block(text: str) -> dict[str, Any]:
    return {"type": "text", "text": text}


def tool_use_block(call_id: str, name: str, tool_input: dict[str, Any]) -> dict[str, Any]:
    return {"type": "tool_use", "id": call_id, "name": name, "input": tool_input}


def tool_result_block(call_id: str, content: str, *, is_error: bool = False) -> dict[str, Any]:
    block: dict[str, Any] = {"type": "tool_result", "tool_use_id": call_id, "content": content}
    if is_error:
        block["is_error"] = True
    return block


class _Clock:
    def __init__(self, start: datetime, step_s: float) -> None:
        self.now = start
        self.step = timedelta(seconds=step_s)

    def tick(self) -> str:
        self.now += self.step
        return self.now.isoformat().replace("+00:00", "Z")


class ClaudeWriter:
    """Accumulates the records of one Claude Code session."""

    def __init__(
        self,
        session_id: str,
        *,
        cwd: str = "/home/ann/code/app",
        start: datetime | None = None,
        step_s: float = 20.0,
        sidechain: bool = False,
        model: str = "claude-sonnet-4-5-20250929",
    ) -> None:
        self.session_id = session_id
        self.cwd = cwd
        self.sidechain = sidechain
        self.model = model
        self.clock = _Clock(start or datetime(2025, 10, 14, 9, 0, tzinfo=UTC), step_s)
        self.records: list[dict[str, Any]] = []
        self._parent: str | None = None
        self._n = 0
        self._msg = 0

    def _uuid(self) -> str:
        self._n += 1
        return f"{self.session_id[:8]}-0000-4000-8000-{self._n:012d}"

    def _base(self, kind: str) -> dict[str, Any]:
        uuid = self._uuid()
        record = {
            "parentUuid": self._parent,
            "isSidechain": self.sidechain,
            "userType": "external",
            "cwd": self.cwd,
            "sessionId": self.session_id,
            "version": "2.0.14",
            "gitBranch": "main",
            "type": kind,
            "uuid": uuid,
            "timestamp": self.clock.tick(),
        }
        self._parent = uuid
        return record

    def user(self, content: str | list[dict[str, Any]], **extra: Any) -> ClaudeWriter:
        record = self._base("user")
        record["message"] = {"role": "user", "content": content}
        record.update(extra)
        self.records.append(record)
        return self

    def assistant(self, *blocks: dict[str, Any] | str, split: bool = True) -> ClaudeWriter:
        """One reply; with ``split`` each block is its own record sharing ``message.id``."""
        self._msg += 1
        msg_id = f"msg_{self.session_id[:6]}{self._msg:06d}"
        items = [text_block(b) if isinstance(b, str) else b for b in blocks]
        groups = [[b] for b in items] if split else [items]
        for group in groups:
            record = self._base("assistant")
            record["requestId"] = f"req_{msg_id}"
            record["message"] = {
                "id": msg_id,
                "type": "message",
                "role": "assistant",
                "model": self.model,
                "content": group,
                "stop_reason": None,
                "usage": {"input_tokens": 1200, "output_tokens": 180},
            }
            self.records.append(record)
        return self

    def tool(
        self,
        call_id: str,
        content: str,
        *,
        is_error: bool = False,
        result: dict[str, Any] | None = None,
    ) -> ClaudeWriter:
        """The tool answering; ``result`` is Claude Code's structured ``toolUseResult``."""
        extra = {"toolUseResult": result} if result is not None else {}
        return self.user([tool_result_block(call_id, content, is_error=is_error)], **extra)

    def summary(self, text: str) -> ClaudeWriter:
        self.records.append({"type": "summary", "summary": text, "leafUuid": self._parent})
        return self

    def snapshot(self) -> ClaudeWriter:
        self.records.append(
            {
                "type": "file-history-snapshot",
                "messageId": self._uuid(),
                "snapshot": {"trackedFileBackups": {}, "timestamp": self.clock.tick()},
                "isSnapshotUpdate": False,
            }
        )
        return self

    def bytes(self) -> bytes:
        return jsonl(self.records)


class CodexWriter:
    """Accumulates the lines of one Codex CLI rollout."""

    def __init__(
        self,
        session_id: str,
        *,
        cwd: str = "/home/ann/code/app",
        start: datetime | None = None,
        model: str = "gpt-5-codex",
    ) -> None:
        self.clock = _Clock(start or datetime(2025, 10, 15, 14, 0, tzinfo=UTC), 15.0)
        self.lines: list[dict[str, Any]] = []
        self._line(
            "session_meta",
            {
                "id": session_id,
                "timestamp": self.clock.now.isoformat(),
                "cwd": cwd,
                "originator": "codex_cli_rs",
                "cli_version": "0.46.0",
                "source": "cli",
                "model_provider": "openai",
                "git": {"branch": "main"},
            },
        )
        self._line(
            "turn_context",
            {"cwd": cwd, "model": model, "approval_policy": "on-request", "summary": "auto"},
        )

    def _line(self, kind: str, payload: dict[str, Any]) -> CodexWriter:
        self.lines.append({"timestamp": self.clock.tick(), "type": kind, "payload": payload})
        return self

    def user(self, text: str) -> CodexWriter:
        item = {
            "type": "message",
            "role": "user",
            "content": [{"type": "input_text", "text": text}],
        }
        self._line("response_item", item)
        return self._line("event_msg", {"type": "user_message", "message": text})

    def context(self, text: str) -> CodexWriter:
        item = {
            "type": "message",
            "role": "user",
            "content": [{"type": "input_text", "text": text}],
        }
        return self._line("response_item", item)

    def assistant(self, text: str) -> CodexWriter:
        item = {
            "type": "message",
            "role": "assistant",
            "content": [{"type": "output_text", "text": text}],
        }
        self._line("response_item", item)
        return self._line("event_msg", {"type": "agent_message", "message": text})

    def reasoning(self, text: str) -> CodexWriter:
        item = {
            "type": "reasoning",
            "summary": [{"type": "summary_text", "text": text}],
            "encrypted_content": "gAAAAB" + "x" * 40,
        }
        return self._line("response_item", item)

    def call(self, call_id: str, name: str, arguments: dict[str, Any], output: str) -> CodexWriter:
        self._line(
            "response_item",
            {
                "type": "function_call",
                "name": name,
                "arguments": json.dumps(arguments),
                "call_id": call_id,
            },
        )
        result = json.dumps({"output": output, "metadata": {"exit_code": 0}})
        return self._line(
            "response_item", {"type": "function_call_output", "call_id": call_id, "output": result}
        )

    def shell(self, call_id: str, command: list[str], output: str) -> CodexWriter:
        self._line(
            "response_item",
            {
                "type": "local_shell_call",
                "call_id": call_id,
                "status": "completed",
                "action": {"type": "exec", "command": command},
            },
        )
        return self._line(
            "response_item",
            {"type": "local_shell_call_output", "call_id": call_id, "output": output},
        )

    def compacted(self, text: str) -> CodexWriter:
        return self._line("compacted", {"message": text})

    def bytes(self) -> bytes:
        return jsonl(self.lines)
