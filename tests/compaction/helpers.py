"""Builders and an in-memory store of just the methods compaction uses."""

from __future__ import annotations

import json
from typing import Any

from memoir.model import Session, SessionFlags
from memoir.store.port import CheckpointRow, TraceRow

__all__ = ["GOOD", "FakeStore", "assistant", "big_text", "call", "result", "system", "user"]

GOOD = "The user asked for work on the project; the assistant did it and tests pass."


def big_text(tokens_hint: int, seed: int = 0) -> str:
    """Text of roughly ``tokens_hint`` tokens (about 3 tokens per 'wNNN vNNN;' group)."""
    return " ".join(f"w{seed}x{i} v{i % 97};" for i in range(max(1, tokens_hint // 6)))


def system(text: str = "You are a careful coding agent.") -> dict[str, Any]:
    return {"role": "system", "content": text}


def user(text: str) -> dict[str, Any]:
    return {"role": "user", "content": text}


def assistant(text: str) -> dict[str, Any]:
    return {"role": "assistant", "content": text}


def call(*calls: tuple[str, str], text: str | None = None) -> dict[str, Any]:
    """An assistant message calling tools: ``call(("c1", "read_file"), ("c2", "grep"))``."""
    return {
        "role": "assistant",
        "content": text,
        "tool_calls": [
            {"id": cid, "type": "function", "function": {"name": name, "arguments": "{}"}}
            for cid, name in calls
        ],
    }


def result(cid: str, text: str) -> dict[str, Any]:
    return {"role": "tool", "tool_call_id": cid, "content": text}


class FakeStore:
    """put_checkpoint / checkpoints / record_trace / traces / get_session, in memory."""

    backend = "fake"
    read_only = False

    def __init__(self, flags: SessionFlags | None = None) -> None:
        self.rows: list[CheckpointRow] = []
        self.trace_rows: list[TraceRow] = []
        self.flags = flags

    def put_checkpoint(self, row: CheckpointRow) -> None:
        json.dumps(row.data)  # must be JSON-serialisable, like the real stores require
        self.rows.append(row)

    def checkpoints(self, session_id: str) -> list[CheckpointRow]:
        return [r for r in self.rows if r.session_id == session_id]

    def record_trace(self, row: TraceRow) -> None:
        json.dumps(row.data)
        self.trace_rows.append(row)

    def traces(self, session_id: str | None = None, kind: str | None = None) -> list[TraceRow]:
        return [
            r
            for r in self.trace_rows
            if (session_id is None or r.session_id == session_id)
            and (kind is None or r.kind == kind)
        ]

    def get_session(self, session_id: str) -> Session | None:
        if self.flags is None:
            return None
        from memoir.model import Harness

        return Session(id=session_id, project="p", harness=Harness.API, flags=self.flags)
