"""Test corpus shared by the search tests: a few sessions, hostile queries, LoCoMo data."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from memoir.model import (
    Author,
    Event,
    EventKind,
    Harness,
    Session,
    SessionFlags,
    build_exchanges,
)
from memoir.store import IngestBatch, Store

__all__ = ["CONVERSATIONS", "HOSTILE", "T0", "fill", "write_conversation"]

T0 = datetime(2024, 5, 1, 9, 0, tzinfo=UTC)

CONVERSATIONS = [
    # session id, project, harness, day offset, subagent, [(user, assistant, tool)]
    (
        "s-web",
        "web",
        Harness.CLAUDE_CODE,
        0,
        False,
        [
            ("How do I fix the sqlite database lock?", "Use WAL mode and a busy timeout.", "Bash"),
            ("Now the tests pass", "Great, the lock is gone.", None),
            ("Add a dark mode toggle to the settings page", "Added a toggle component.", None),
        ],
    ),
    (
        "s-api",
        "api",
        Harness.CODEX,
        45,
        False,
        [("Deploy the payment service on Friday", "Deployment scheduled for Friday.", None)],
    ),
    (
        "s-sub",
        "web",
        Harness.CLAUDE_CODE,
        1,
        True,
        [("subagent: inspect the sqlite lock file", "The lock file is stale.", None)],
    ),
    (
        "s-cjk",
        "notes",
        Harness.GENERIC,
        60,
        False,
        [("数据库锁的问题怎么解决", "使用 WAL 模式。", None)],
    ),
]


def _events(session_id: str, start: datetime, turns: list[Any]) -> list[Event]:
    events: list[Event] = []
    when = start
    for user, assistant, tool in turns:
        for kind, author, text, name in (
            (EventKind.USER_TEXT, Author.USER, user, None),
            (EventKind.TOOL_CALL, Author.ASSISTANT, f"{tool} sqlite3 db.sqlite", tool),
            (EventKind.ASSISTANT_TEXT, Author.ASSISTANT, assistant, None),
        ):
            if kind is EventKind.TOOL_CALL and tool is None:
                continue
            when += timedelta(minutes=1)
            events.append(
                Event(session_id, len(events) + 1, kind, author, text, when, tool_name=name)
            )
    return events


def fill(store: Store) -> None:
    for sid, project, harness, days, sub, turns in CONVERSATIONS:
        start = T0 + timedelta(days=days)
        session = Session(
            id=sid,
            project=project,
            harness=harness,
            flags=SessionFlags(subagent=sub),
            created_at=start,
            updated_at=start,
        )
        events = _events(sid, start, turns)
        store.apply_ingest(
            IngestBatch(
                session=session, events=tuple(events), exchanges=tuple(build_exchanges(events))
            )
        )


HOSTILE = [
    "",
    "   ",
    '"',
    '""',
    '"unclosed phrase',
    "NEAR(",
    "NEAR(sqlite lock, 3)",
    "*",
    "sqlite*",
    "**",
    "OR",
    "sqlite OR",
    "AND NOT",
    "NOT sqlite",
    "-",
    "-sqlite",
    "'; DROP TABLE exchanges; --",
    "1' OR '1'='1",
    "user:sqlite",
    "{user}: sqlite",
    "^sqlite",
    "(((",
    ")",
    "\x00\x01",
    "%_%",
    "\\",
    "数据库",
    "lock & | ! <-> :*",
    "x" * 5000,
    "sqlite " * 200,
]


def write_conversation(path: Path) -> Path:
    data = {
        "speaker_a": "Ana",
        "speaker_b": "Bo",
        "session_1_date_time": "1:56 pm on 8 May, 2023",
        "session_1": [
            {"speaker": "Bo", "dia_id": "D1:1", "text": "Hi Ana, back from the lake?"},
            {"speaker": "Ana", "dia_id": "D1:2", "text": "Yes! We kayaked all morning."},
            {
                "speaker": "Bo",
                "dia_id": "D1:3",
                "text": "Nice, did you see otters?",
                "blip_caption": "a photo of a kayak on a lake",
            },
            {"speaker": "Ana", "dia_id": "D1:4", "text": "Two otters near the dock."},
        ],
        "session_2_date_time": "9:05 am on 1 June, 2023",
        "session_2": [
            {"speaker": "Ana", "dia_id": "D2:1", "text": "I adopted a puppy named Pixel."},
            {"speaker": "Bo", "dia_id": "D2:2", "text": "Congrats on Pixel!"},
        ],
        "qa": [
            {
                "question": "What did Ana see?",
                "answer": "otters",
                "evidence": ["D1:4"],
                "category": 4,
            },
            {"question": "When?", "answer": "x", "evidence": ["D1:2", "D2:1"], "category": 2},
            {"question": "Adversarial", "evidence": ["D1:2"], "category": 5},
            {
                "question": "Broken",
                "answer": "x",
                "evidence": ["D8:6; D9:17", "D9:99"],
                "category": 1,
            },
        ],
    }
    path.write_text(json.dumps(data), encoding="utf-8")
    return path
