"""Builders and an in-memory store of just the parts compaction uses."""

from __future__ import annotations

import json
from typing import Any

from memoir.model import Harness, Session, SessionFlags
from memoir.store.values import CheckpointRow, TraceRow

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


class _Checkpoints:
    def __init__(self, rows: list[CheckpointRow]) -> None:
        self.rows = rows

    def put(self, row: CheckpointRow) -> None:
        json.dumps(row.data)  # must be JSON-serialisable, like the real stores require
        self.rows.append(row)

    def of(self, session_id: str) -> list[CheckpointRow]:
        return [r for r in self.rows if r.session_id == session_id]


class _Traces:
    def __init__(self, rows: list[TraceRow]) -> None:
        self.rows = rows

    def record(self, row: TraceRow) -> None:
        json.dumps(row.data)
        self.rows.append(row)

    def find(self, session_id: str | None = None, kind: str | None = None) -> list[TraceRow]:
        return [
            r
            for r in self.rows
            if (session_id is None or r.session_id == session_id)
            and (kind is None or r.kind == kind)
        ]


class _Sessions:
    def __init__(self, flags: SessionFlags | None) -> None:
        self.flags = flags

    def get(self, session_id: str) -> Session | None:
        if self.flags is None:
            return None
        return Session(id=session_id, project="p", harness=Harness.API, flags=self.flags)


class FakeStore:
    """The checkpoints, traces and sessions parts compaction uses, in memory."""

    backend = "fake"
    read_only = False

    def __init__(self, flags: SessionFlags | None = None) -> None:
        self.rows: list[CheckpointRow] = []
        self.trace_rows: list[TraceRow] = []
        self.checkpoints = _Checkpoints(self.rows)
        self.traces = _Traces(self.trace_rows)
        self.sessions = _Sessions(flags)
