"""Test doubles for the summary lifecycle: an in-memory store with just what summaries use,
a stand-in Memoir, and helpers to lay out an archive the way ``memoir sync`` does."""

from __future__ import annotations

import json
import os
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from memoir.config import Settings
from memoir.ingest.detect import Format
from memoir.ingest.reader import read_bytes
from memoir.model import Event, Harness, Session
from memoir.store.claims import local_claim
from memoir.store.port import SessionInfo, SummaryRow

PROJECT = "-Users-testuser-example-project"
TINY_ID = "67a8478e-78dc-44ab-82ea-f65c8ead85f6"
NOW_MS = int(datetime(2026, 1, 1, tzinfo=UTC).timestamp() * 1000)
HOUR_MS = 3_600_000


@dataclass
class FakeStore:
    """Sessions, events and summary rows in memory (the parts summaries use)."""

    backend: str = "fake"
    read_only: bool = False
    sessions: dict[str, Session] = field(default_factory=dict)
    event_log: dict[str, list[Event]] = field(default_factory=dict)
    rows: dict[str, SummaryRow] = field(default_factory=dict)
    cache: dict[str, str] = field(default_factory=dict)

    def close(self) -> None:
        pass

    def claim(self, name: str, busy: str) -> AbstractContextManager[None]:
        return local_claim(f"{id(self)}:{name}", busy)

    def source_states(self) -> dict[str, Any]:
        return {}  # files are indexed whole here: nothing is ever half read

    def get_session(self, session_id: str) -> Session | None:
        return self.sessions.get(session_id)

    def events(self, session_id: str, *, after: int = 0, upto: int | None = None) -> list[Event]:
        return list(self.event_log.get(session_id, []))

    def list_sessions(
        self, *, project: str | None = None, limit: int | None = None
    ) -> list[SessionInfo]:
        out = []
        for sid, session in self.sessions.items():
            events = self.event_log.get(sid, [])
            stamps = [e.timestamp for e in events if e.timestamp is not None]
            out.append(
                SessionInfo(
                    session, 0, len(events), min(stamps, default=None), max(stamps, default=None)
                )
            )
        return out

    def get_summary_row(self, session_id: str) -> SummaryRow | None:
        return self.rows.get(session_id)

    def put_summary_row(self, row: SummaryRow) -> None:
        self.rows[row.session_id] = row

    def summary_rows(self) -> list[SummaryRow]:
        return list(self.rows.values())

    def cache_get(self, key: str) -> str | None:
        return self.cache.get(key)

    def cache_put(self, key: str, value: str, ttl_seconds: float) -> None:
        self.cache[key] = value

    # helpers -----------------------------------------------------------------------------
    def index_file(self, path: Path, project: str = PROJECT) -> list[Event]:
        """Index an archived transcript from scratch (what sync's indexing does)."""
        sid = path.name[: -len(".jsonl")]
        result = read_bytes(path.read_bytes(), Format.CLAUDE, path=str(path), session_id=sid)
        self.sessions[sid] = Session(sid, project, Harness.CLAUDE_CODE)
        self.event_log[sid] = list(result.events)
        return self.event_log[sid]


@dataclass
class FakeMemoir:
    settings: Settings
    store: Any


def make_memoir(home: Path, **overrides: Any) -> FakeMemoir:
    settings = Settings.from_env({"MEMOIR_HOME": str(home)}, sources=(), **overrides)
    return FakeMemoir(settings, FakeStore())


def user_line(sid: str, text: str, at: datetime) -> str:
    return json.dumps(
        {
            "type": "user",
            "sessionId": sid,
            "uuid": f"u-{at.timestamp()}",
            "timestamp": at.isoformat().replace("+00:00", "Z"),
            "message": {"role": "user", "content": text},
        }
    )


def assistant_line(sid: str, text: str, at: datetime) -> str:
    return json.dumps(
        {
            "type": "assistant",
            "sessionId": sid,
            "uuid": f"a-{at.timestamp()}",
            "timestamp": at.isoformat().replace("+00:00", "Z"),
            "message": {"role": "assistant", "content": [{"type": "text", "text": text}]},
        }
    )


def conversation(
    sid: str, exchanges: int, *, start: datetime | None = None, words: int = 40
) -> bytes:
    """A Claude Code transcript with ``exchanges`` user/assistant pairs."""
    start = start or datetime(2025, 9, 19, 10, 0, tzinfo=UTC)
    lines = []
    for i in range(exchanges):
        at = start + timedelta(minutes=2 * i)
        filler = " ".join(f"word{j}" for j in range(words))
        lines.append(user_line(sid, f"Question {i} about the parser: {filler}", at))
        lines.append(
            assistant_line(
                sid, f"Answer {i}: we decided to refactor. {filler}", at + timedelta(seconds=30)
            )
        )
    return ("\n".join(lines) + "\n").encode()


def archive(home: Path, sid: str, data: bytes, project: str = PROJECT) -> Path:
    """Write an archived transcript by temp file + rename (as sync does)."""
    folder = home / "archive" / project
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{sid}.jsonl"
    tmp = folder / f".{sid}.tmp"
    tmp.write_bytes(data)
    os.replace(tmp, path)
    return path


def append(path: Path, data: bytes) -> None:
    """Grow an archived transcript in place (as sync's append of new bytes does)."""
    with open(path, "ab") as handle:
        handle.write(data)


def summary_file(path: Path) -> Path:
    return path.with_name(path.name[: -len(".jsonl")] + "-summary.txt")
