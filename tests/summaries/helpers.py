"""Test doubles for the summary lifecycle: an in-memory store with just what summaries use,
a stand-in home (settings and a store), the engine's collaborators built from a home as
``Memoir`` builds them, and helpers to lay out an archive the way ``memoir sync`` does."""

from __future__ import annotations

import json
import os
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from memoir.config import Settings
from memoir.ingest.discover import Format
from memoir.ingest.reader import read_bytes
from memoir.llm.port import Model
from memoir.model import Event, Harness, Session
from memoir.model.event import SessionInfo
from memoir.store.db import local_claim
from memoir.store.values import SummaryRow
from memoir.summaries.persist import SummaryUpkeep, open_summary_store
from memoir.summaries.port import SummaryStore
from memoir.summaries.session import ModelSource
from memoir.summaries.summary_pass import PassSettings, SummaryPassReport, run_summary_pass

PROJECT = "-Users-testuser-example-project"
TINY_ID = "67a8478e-78dc-44ab-82ea-f65c8ead85f6"
NOW_MS = int(datetime(2026, 1, 1, tzinfo=UTC).timestamp() * 1000)
HOUR_MS = 3_600_000


class _Sessions:
    def __init__(self, rows: dict[str, Session], log: dict[str, list[Event]]) -> None:
        self.rows, self.log = rows, log

    def get(self, session_id: str) -> Session | None:
        return self.rows.get(session_id)

    def recent(self, *, project: str | None = None, limit: int | None = None) -> list[SessionInfo]:
        out = []
        for sid, session in self.rows.items():
            events = self.log.get(sid, [])
            stamps = [e.timestamp for e in events if e.timestamp is not None]
            out.append(
                SessionInfo(
                    session, 0, len(events), min(stamps, default=None), max(stamps, default=None)
                )
            )
        return out


class _Events:
    def __init__(self, log: dict[str, list[Event]]) -> None:
        self.log = log

    def of(self, session_id: str, *, after: int = 0, upto: int | None = None) -> list[Event]:
        return list(self.log.get(session_id, []))


class _Summaries:
    def __init__(self, rows: dict[str, SummaryRow]) -> None:
        self.rows = rows

    def get(self, session_id: str) -> SummaryRow | None:
        return self.rows.get(session_id)

    def put(self, row: SummaryRow) -> None:
        self.rows[row.session_id] = row

    def all(self) -> list[SummaryRow]:
        return list(self.rows.values())


class _Cache:
    def __init__(self, values: dict[str, str]) -> None:
        self.values = values

    def get(self, key: str) -> str | None:
        return self.values.get(key)

    def put(self, key: str, value: str, ttl_seconds: float) -> None:
        self.values[key] = value


class _Ingest:
    def sources(self) -> dict[str, Any]:
        return {}  # files are indexed whole here: nothing is ever half read


class _Claims:
    def hold(self, name: str, busy: str) -> AbstractContextManager[None]:
        return local_claim(f"{id(self)}:{name}", busy)


@dataclass
class FakeStore:
    """Sessions, events and summary rows in memory (the parts summaries use)."""

    backend: str = "fake"
    read_only: bool = False
    session_rows: dict[str, Session] = field(default_factory=dict)
    event_log: dict[str, list[Event]] = field(default_factory=dict)
    rows: dict[str, SummaryRow] = field(default_factory=dict)
    cached: dict[str, str] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.sessions = _Sessions(self.session_rows, self.event_log)
        self.events = _Events(self.event_log)
        self.summaries = _Summaries(self.rows)
        self.cache = _Cache(self.cached)
        self.ingest = _Ingest()
        self.claims = _Claims()

    def close(self) -> None:
        pass

    # helpers -----------------------------------------------------------------------------
    def index_file(self, path: Path, project: str = PROJECT) -> list[Event]:
        """Index an archived transcript from scratch (what sync's indexing does)."""
        sid = path.name[: -len(".jsonl")]
        result = read_bytes(path.read_bytes(), Format.CLAUDE, path=str(path), session_id=sid)
        self.session_rows[sid] = Session(sid, project, Harness.CLAUDE_CODE)
        self.event_log[sid] = list(result.events)
        return self.event_log[sid]


@dataclass
class FakeMemoir:
    settings: Settings
    store: Any


def make_memoir(home: Path, **overrides: Any) -> FakeMemoir:
    settings = Settings.from_env({"MEMOIR_HOME": str(home)}, sources=(), **overrides)
    return FakeMemoir(settings, FakeStore())


def summaries_of(home: Any) -> SummaryStore:
    """The summary store the settings of ``home`` (a FakeMemoir or a Memoir) pick."""
    return open_summary_store(home.settings, home.store)


def upkeep_of(home: Any) -> SummaryUpkeep:
    """The summaries' upkeep a sync of ``home`` is handed (as ``service.sync_observer``)."""
    return SummaryUpkeep(home.settings.archive_dir, summaries_of(home), home.store)


def run_pass(home: Any, *, model: Model, limit: int, **options: Any) -> SummaryPassReport:
    """The summary pass over ``home`` with ``model`` and no fallback: the collaborators
    ``service.summarize_pending`` hands it."""
    settings = PassSettings.from_settings(home.settings)
    return run_summary_pass(
        home.store, summaries_of(home), settings, ModelSource.of(model), limit=limit, **options
    )


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
