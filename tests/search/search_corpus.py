"""Test corpus shared by the search tests: a few sessions and hostile queries."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
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

__all__ = ["CONVERSATIONS", "HOSTILE", "T0", "fill"]

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
        store.ingest.apply(
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
