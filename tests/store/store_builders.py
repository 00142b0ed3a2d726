"""Builders for the store suite: sessions, events and ingest batches in a few lines."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from memoir.model import (
    Author,
    Event,
    EventKind,
    Harness,
    Session,
    SessionFlags,
    build_exchanges,
)
from memoir.store import IngestBatch, SourceState, Store
from memoir.store.codec import event_params

__all__ = [
    "T0",
    "apply_before_v16",
    "batch",
    "conversation",
    "ingest",
    "session",
    "source",
]

T0 = datetime(2024, 5, 1, 9, 0, tzinfo=UTC)


def session(
    sid: str = "s1",
    project: str = "proj",
    harness: Harness = Harness.CLAUDE_CODE,
    **flags: bool,
) -> Session:
    return Session(
        id=sid,
        project=project,
        harness=harness,
        source_path=f"/src/{project}/{sid}.jsonl",
        flags=SessionFlags(**flags),
        created_at=T0,
        updated_at=T0,
    )


def conversation(
    sid: str,
    turns: list[tuple[str, str | None, str | None]],
    *,
    start: datetime = T0,
    first_ordinal: int = 1,
) -> list[Event]:
    """Events for (user, assistant, tool name) turns, one minute apart per turn."""
    events: list[Event] = []
    n = first_ordinal
    for i, (user, assistant, tool) in enumerate(turns):
        at = start + timedelta(minutes=i)
        events.append(
            Event(
                sid,
                n,
                EventKind.USER_TEXT,
                Author.USER,
                user,
                timestamp=at,
                source_line=n,
                source_offset=n * 100,
            )
        )
        n += 1
        if tool:
            events.append(
                Event(
                    sid,
                    n,
                    EventKind.TOOL_CALL,
                    Author.ASSISTANT,
                    f"{tool} input",
                    timestamp=at,
                    tool_name=tool,
                    call_id=f"c{n}",
                    payload={"input": {"cmd": "ls"}},
                )
            )
            n += 1
            events.append(
                Event(
                    sid,
                    n,
                    EventKind.TOOL_RESULT,
                    Author.TOOL,
                    f"{tool} output",
                    timestamp=at,
                    tool_name=tool,
                    call_id=f"c{n - 1}",
                )
            )
            n += 1
        if assistant:
            events.append(
                Event(
                    sid,
                    n,
                    EventKind.ASSISTANT_TEXT,
                    Author.ASSISTANT,
                    assistant,
                    timestamp=at + timedelta(seconds=30),
                )
            )
            n += 1
    return events


def source(sid: str = "s1", path: str | None = None, offset: int = 100) -> SourceState:
    return SourceState(
        path=path or f"/src/proj/{sid}.jsonl",
        session_id=sid,
        harness="claude-code",
        size=offset,
        offset=offset,
        line_count=3,
        mtime_ns=123,
        prefix_hash="p",
        tail_hash="t",
        archive_path=f"/archive/proj/{sid}.jsonl",
        parser_state={"pending": {"c1": "Bash"}},
    )


def batch(s: Session, events: list[Event], **kw: object) -> IngestBatch:
    return IngestBatch(
        session=s, events=tuple(events), exchanges=tuple(build_exchanges(events)), **kw
    )  # type: ignore[arg-type]


def ingest(
    store: Store,
    sid: str,
    turns: list[tuple[str, str | None, str | None]],
    *,
    start: datetime = T0,
    **session_kw: object,
) -> None:
    s = session(sid, **session_kw)  # type: ignore[arg-type]
    store.ingest.apply(batch(s, conversation(sid, turns, start=start)))


def apply_before_v16(store: Store, made: IngestBatch) -> None:
    """Write ``made`` into a store at a schema before v16, whose events have no
    ``time_inferred`` column: the batch without its events, then the events as such a
    Memoir wrote them."""
    from dataclasses import replace

    store.ingest.apply(replace(made, events=()))
    with store._db.tx() as tx:  # type: ignore[attr-defined]
        tx.many(
            "INSERT INTO events (session_id, ordinal, kind, author, ts, tool_name, call_id, "
            "source_offset, source_line, payload, text) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            [event_params(e, tx.time)[:11] for e in made.events],
        )
