"""Value ↔ row conversions shared by both backends (pure).

Timestamps are timezone-aware UTC datetimes in Python. SQLite stores them as fixed-width
ISO-8601 text (``2024-05-01T09:30:00.000000+00:00``) so that text comparison is time
comparison; PostgreSQL stores ``timestamptz``. A naive datetime is taken to be UTC.
JSON values (event payloads, parser state, checkpoint and trace data) are compact JSON text.
NUL characters cannot be stored in PostgreSQL text, so both backends replace them in text
columns with U+FFFD (JSON columns keep them, escaped).

The values of the ``jobs`` table as the store reads and writes them (the jobs engine
turns them into :class:`memoir.jobs.Job`)."""

from __future__ import annotations

import functools
import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, TypeVar

from memoir.errors import ConfigError
from memoir.model import Author, Event, EventKind, Exchange, Harness, Session, SessionFlags
from memoir.model.event import scrub
from memoir.store.values import SkippedLine, SourceState

__all__ = [
    "ACTIVE_STATES",
    "EVENT_COLS",
    "EXCHANGE_COLS",
    "JOB_COLS",
    "SESSION_COLS",
    "SESSION_READ_COLS",
    "SOURCE_COLS",
    "JobRow",
    "TimeEncoder",
    "dumps",
    "event_from_row",
    "event_params",
    "exchange_from_row",
    "exchange_params",
    "exchange_text_from_row",
    "from_iso",
    "job_from_row",
    "loads",
    "prefixed",
    "session_from_row",
    "session_params",
    "skipped_from_row",
    "skipped_params",
    "source_from_row",
    "source_params",
    "stored_time",
    "to_iso",
    "to_utc",
    "value_from_row",
]


try:  # optional speed-up
    import orjson as _orjson
except ImportError:  # pragma: no cover - depends on the environment
    _orjson = None  # type: ignore[assignment]
# datetimes and dataclasses go through ``default=str`` as with the stdlib
_ORJSON_OPTIONS = (
    0 if _orjson is None else _orjson.OPT_PASSTHROUGH_DATETIME | _orjson.OPT_PASSTHROUGH_DATACLASS
)

T = TypeVar("T")


# column lists in the order the *_from_row functions read them
EVENT_COLS = (
    "session_id, ordinal, kind, author, ts, tool_name, call_id, source_offset, "
    "source_line, payload, text, time_inferred"
)
EXCHANGE_COLS = (
    "id, session_id, first_ordinal, last_ordinal, started_at, ended_at, line_start, "
    "line_end, tool_names, user_text, assistant_text, tool_excerpt"
)
SESSION_COLS = (
    "id, project, harness, user_name, source_path, cwd, incognito, archived, subagent, "
    "memory_disabled, created_at, updated_at"
)
"""The session columns every schema since v1 has: what sync writes, what migrations read."""
SESSION_READ_COLS = f"{SESSION_COLS}, name"
"""The session columns a read of the current schema takes: with the client's name (v21)."""
SOURCE_COLS = (
    'path, session_id, harness, size, "offset", line_count, mtime_ns, prefix_hash, '
    "tail_hash, archive_path, parser_state"
)


def prefixed(cols: str, alias: str) -> str:
    """``"a, b"`` → ``"x.a, x.b"``."""
    return ", ".join(f"{alias}.{c.strip()}" for c in cols.split(","))


def to_utc(value: datetime | None) -> datetime | None:
    if value is None or value.tzinfo is UTC:
        return value
    if value.tzinfo is None:
        return value.replace(tzinfo=UTC)
    try:
        return value.astimezone(UTC)
    except (OverflowError, ValueError) as exc:  # 9999-12-31T23:59-10:00 is in the year 10000
        raise ConfigError(
            f"date out of range: {value.isoformat()} falls outside the years 1 to 9999 in UTC"
        ) from exc


def to_iso(value: datetime | None) -> str | None:
    """Fixed-width ISO text that sorts like the instant it names."""
    utc = to_utc(value)
    return None if utc is None else utc.isoformat(timespec="microseconds")


def from_iso(value: str | datetime | None) -> datetime | None:
    if value is None:
        return None
    if isinstance(value, datetime):
        return to_utc(value)
    return to_utc(datetime.fromisoformat(value))


def value_from_row(
    make: Callable[..., T],
    cols: str,
    row: Any,
    *,
    convert: Mapping[str, Callable[[Any], Any]] | None = None,
    rename: Mapping[str, str] | None = None,
) -> T:
    """``make(**fields)`` from a row read as ``SELECT {cols}``: each column's value under its
    name (or ``rename[name]``), through ``convert[name]`` where given — one mapper for the
    side tables whose rows are their values column for column."""
    convert, rename = convert or {}, rename or {}
    fields = {}
    for name, value in zip(_names(cols), row, strict=True):
        fields[rename.get(name, name)] = convert[name](value) if name in convert else value
    return make(**fields)


@functools.lru_cache(maxsize=64)
def _names(cols: str) -> tuple[str, ...]:
    """The column names of ``SELECT {cols}`` (a handful of constant lists, read often)."""
    return tuple(c.strip() for c in cols.split(","))


def stored_time(value: str | datetime | None) -> datetime:
    """A NOT NULL timestamp column read back (as :func:`from_iso`, never None)."""
    parsed = from_iso(value)
    assert parsed is not None
    return parsed


def dumps(value: Any) -> str:
    """Compact JSON text (orjson when installed: payloads are dumped once per event)."""
    if _orjson is not None:
        try:
            return _orjson.dumps(value, default=str, option=_ORJSON_OPTIONS).decode("utf-8")
        except TypeError:  # non-str keys, lone surrogates, …: the stdlib copes
            pass
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"), default=str)


def loads(value: str | bytes | dict[str, Any] | list[Any] | None) -> Any:
    if value is None:
        return {}
    if isinstance(value, dict | list):  # psycopg already decoded json columns
        return value
    return json.loads(value)


def session_from_row(row: Any) -> Session:
    """Row: id, project, harness, user_name, source_path, cwd, incognito, archived,
    subagent, memory_disabled, created_at, updated_at, and name when read (v21)."""
    return Session(
        id=row[0],
        project=row[1],
        harness=Harness(row[2]),
        user=row[3],
        source_path=row[4],
        cwd=row[5],
        flags=SessionFlags(
            incognito=bool(row[6]),
            archived=bool(row[7]),
            subagent=bool(row[8]),
            memory_disabled=bool(row[9]),
        ),
        created_at=from_iso(row[10]),
        updated_at=from_iso(row[11]),
        name=row[12] if len(row) > 12 else None,
    )


def event_from_row(row: Any) -> Event:
    """Row: session_id, ordinal, kind, author, ts, tool_name, call_id, source_offset,
    source_line, payload, text, time_inferred."""
    return Event(
        session_id=row[0],
        ordinal=row[1],
        kind=EventKind(row[2]),
        author=Author(row[3]),
        timestamp=from_iso(row[4]),
        tool_name=row[5],
        call_id=row[6],
        source_offset=row[7],
        source_line=row[8],
        payload=loads(row[9]) if row[9] is not None else {},
        text=row[10],
        time_inferred=bool(row[11]),
    )


def exchange_from_row(row: Any) -> Exchange:
    """Row: id, session_id, first_ordinal, last_ordinal, started_at, ended_at, line_start,
    line_end, tool_names, user_text, assistant_text, tool_excerpt."""
    return Exchange(
        id=row[0],
        session_id=row[1],
        first_ordinal=row[2],
        last_ordinal=row[3],
        started_at=from_iso(row[4]),
        ended_at=from_iso(row[5]),
        line_start=row[6],
        line_end=row[7],
        tool_names=tuple(loads(row[8]) or ()),
        user_text=row[9],
        assistant_text=row[10],
        tool_excerpt=row[11],
    )


def exchange_text_from_row(row: Any) -> Exchange:
    """Row: pk, id, user_text, assistant_text, tool_excerpt — an exchange's own text alone
    (what it is embedded from); the other fields are left empty."""
    return Exchange(
        id=row[1],
        session_id="",
        first_ordinal=0,
        last_ordinal=0,
        user_text=row[2],
        assistant_text=row[3],
        tool_excerpt=row[4],
        tool_names=(),
        started_at=None,
        ended_at=None,
    )


def source_from_row(row: Any) -> SourceState:
    """Row: path, session_id, harness, size, offset, line_count, mtime_ns, prefix_hash,
    tail_hash, archive_path, parser_state."""
    return SourceState(
        path=row[0],
        session_id=row[1],
        harness=row[2],
        size=row[3],
        offset=row[4],
        line_count=row[5],
        mtime_ns=row[6],
        prefix_hash=row[7],
        tail_hash=row[8],
        archive_path=row[9],
        parser_state=loads(row[10]) if row[10] is not None else {},
    )


def skipped_from_row(row: Any) -> SkippedLine:
    """Row: path, line, offset, reason, detail."""
    return SkippedLine(path=row[0], line=row[1], offset=row[2], reason=row[3], detail=row[4])


TimeEncoder = Callable[[datetime | None], Any]


def session_params(s: Session, enc: TimeEncoder) -> tuple[Any, ...]:
    f = s.flags
    return (
        s.id,
        scrub(s.project),
        str(s.harness),
        scrub(s.user),
        s.source_path,
        s.cwd,
        f.incognito,
        f.archived,
        f.subagent,
        f.memory_disabled,
        enc(s.created_at),
        enc(s.updated_at),
    )


def event_params(e: Event, enc: TimeEncoder) -> tuple[Any, ...]:
    return (
        e.session_id,
        e.ordinal,
        str(e.kind),
        str(e.author),
        enc(e.timestamp),
        e.tool_name,
        e.call_id,
        e.source_offset,
        e.source_line,
        dumps(e.payload) if e.payload else None,
        scrub(e.text),
        e.time_inferred,
    )


def exchange_params(x: Exchange, enc: TimeEncoder) -> tuple[Any, ...]:
    return (
        x.id,
        x.session_id,
        x.first_ordinal,
        x.last_ordinal,
        enc(x.started_at),
        enc(x.ended_at),
        x.line_start,
        x.line_end,
        dumps(list(x.tool_names)),
        scrub(x.user_text),
        scrub(x.assistant_text),
        scrub(x.tool_excerpt),
    )


def source_params(s: SourceState) -> tuple[Any, ...]:
    return (
        s.path,
        s.session_id,
        s.harness,
        s.size,
        s.offset,
        s.line_count,
        s.mtime_ns,
        s.prefix_hash,
        s.tail_hash,
        s.archive_path,
        dumps(s.parser_state),
    )


def skipped_params(s: SkippedLine) -> tuple[Any, ...]:
    return (s.path, s.line, s.offset, scrub(s.reason), scrub(s.detail))


ACTIVE_STATES = ("queued", "running")

JOB_COLS = (
    "id, kind, user_name, session_id, state, phase, completed, total, error, created_at, "
    "started_at, finished_at, heartbeat_at, claimed_by, claimed_at, source_hash, attempts, data"
)


@dataclass(frozen=True, slots=True)
class JobRow:
    id: str
    kind: str
    user: str
    session_id: str
    state: str  # queued | running | completed | failed
    created_at: datetime
    phase: str = ""
    completed: int = 0
    total: int = 0
    error: str = ""
    started_at: datetime | None = None
    finished_at: datetime | None = None
    heartbeat_at: datetime | None = None
    claimed_by: str | None = None
    claimed_at: datetime | None = None
    source_hash: str | None = None
    attempts: int = 0
    data: dict[str, Any] = field(default_factory=dict)


def job_from_row(r: Any) -> JobRow:
    """A row selected as :data:`JOB_COLS`."""
    convert: dict[str, Callable[[Any], Any]] = {
        "phase": lambda v: v or "",
        "error": lambda v: v or "",
        "created_at": stored_time,
        "data": lambda v: loads(v) or {},
        **dict.fromkeys(("completed", "total", "attempts"), lambda v: int(v or 0)),
        **dict.fromkeys(("started_at", "finished_at", "heartbeat_at", "claimed_at"), from_iso),
    }
    return value_from_row(JobRow, JOB_COLS, r, convert=convert, rename={"user_name": "user"})
