"""The values the store takes and gives: source states, skipped lines, ingest batches,
search filters and hits, summary, checkpoint and trace rows.

Unencodable text never loses a batch.

A transcript decoded with ``surrogateescape`` (or any caller) can hand the store strings
with lone surrogates, which no driver can encode as UTF-8. The fast path writes the batch
as is; on an encoding error the whole transaction is rolled back and written once more
with every string scrubbed (lone surrogates → ``?``, NUL → U+FFFD)."""

from __future__ import annotations

import dataclasses
import json
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from enum import Enum
from typing import Any, Protocol

from memoir.errors import UsageError
from memoir.model import Event, Exchange, Harness, Session
from memoir.model.event import scrub_deep

__all__ = [
    "SEARCH_ROLES",
    "ApiMessage",
    "CheckpointRow",
    "IngestBatch",
    "ItemFilter",
    "SearchFilters",
    "SkippedLine",
    "SourceState",
    "StoredTail",
    "SummaryRow",
    "TextHit",
    "TraceRow",
    "is_encoding_error",
    "scrub_batch",
    "with_scrub_retry",
    "without_surrogates",
]


@dataclass(frozen=True, slots=True)
class SourceState:
    """How far one transcript file has been indexed.

    ``offset`` is the byte offset just past the last complete line parsed; ``size`` the
    file size seen then; ``prefix_hash`` a hash of the first min(offset, 4096) bytes (and
    ``tail_hash`` of the 4096 bytes before ``offset``) used to detect a rewritten file.
    ``parser_state`` is the reader's JSON-serialisable resume state (pending tool call
    names by id, codex session meta, …). ``archive_path`` is the archived copy.
    """

    path: str
    session_id: str
    harness: str
    size: int
    offset: int
    line_count: int
    mtime_ns: int
    prefix_hash: str
    tail_hash: str
    archive_path: str | None = None
    parser_state: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class SkippedLine:
    """A transcript line that was skipped (malformed JSON, invalid UTF-8, oversized,
    binary, unknown record type)."""

    path: str
    line: int
    offset: int
    reason: str  # "malformed_json" | "invalid_utf8" | "oversized" | "binary" | "unknown_type"
    detail: str = ""


@dataclass(frozen=True, slots=True)
class StoredTail:
    """What an append read under its session's lock, before it built its batch: the
    session row as stored and the session's last three exchanges (or all of them, fewer),
    oldest first, each with its row's primary key. The write of the batch then needs no
    read of its own, when they cover what the batch changes (in a pipeline: one wait less)."""

    session: Session
    exchanges: tuple[tuple[int, Exchange], ...]


@dataclass(frozen=True, slots=True)
class IngestBatch:
    """Everything one ingest step writes, committed in one transaction.

    ``reset`` deletes the session's events, exchanges, index rows and embeddings first
    (a rewritten transcript is re-indexed cleanly). ``events`` are new events with
    ordinals continuing the session's last ordinal. ``exchanges`` are the new or grown
    exchanges (upserted by id, their index rows rewritten). ``source`` is the new
    source state (None for API-fed sessions). ``moved_from`` is the path the transcript was
    indexed under before it moved: that source row goes, its skipped lines follow.
    ``expected_offset`` is the source row's offset when the batch was read (0: no row
    yet); when the stored row says otherwise — another process sharing the database
    indexed the file meanwhile — the write raises ``ConcurrentWrite`` and changes
    nothing (None: not checked). ``stored``: what an append read of the session before
    building the batch (:class:`StoredTail`; None: the write reads what it needs).
    """

    session: Session
    events: tuple[Event, ...] = ()
    exchanges: tuple[Exchange, ...] = ()
    source: SourceState | None = None
    skipped: tuple[SkippedLine, ...] = ()
    reset: bool = False
    moved_from: str | None = None
    expected_offset: int | None = None
    stored: StoredTail | None = None


@dataclass(frozen=True, slots=True)
class ApiMessage:
    """One message of an HTTP append as events (their ordinals are placeholders: the
    store numbers them inside its write) with the client's id for it, if any: a message
    whose id is stored already is skipped, so a retried batch stores nothing twice."""

    client_id: str | None
    events: tuple[Event, ...]


SEARCH_ROLES = ("user", "assistant", "tool")  # where a search match may be required to be


_SURROGATE = re.compile("[\ud800-\udfff]")


def without_surrogates(text: str) -> str:
    """``text`` with each lone surrogate (not encodable as UTF-8) replaced by U+FFFD."""
    return _SURROGATE.sub("\ufffd", text)


@dataclass(frozen=True, slots=True)
class SearchFilters:
    """What a search is restricted to; every field optional."""

    project: str | None = None
    session_id: str | None = None
    harness: str | None = None
    # "user" | "assistant" | "tool": where the words must match; by meaning (vector hits),
    # the exchange must have that part — a vector scores the whole exchange
    role: str | None = None
    after: datetime | None = None
    before: datetime | None = None
    include_subagents: bool = False
    # the sessions of this user only (the HTTP API scopes every search to its caller)
    user: str | None = None

    def __post_init__(self) -> None:
        """A naive datetime is UTC (as stored times are); ``before`` is exclusive and must
        be later than ``after``; a role is one of SEARCH_ROLES; project, session and
        harness are strings (a lone surrogate in one becomes U+FFFD: it matches nothing,
        rather than failing in the database driver)."""
        for name in ("project", "session_id", "harness", "role", "user"):
            value = getattr(self, name)
            if value is not None and not isinstance(value, str):
                raise UsageError(f"{name} must be a string, not {type(value).__name__} {value!r}")
            if value is not None:
                object.__setattr__(self, name, without_surrogates(value))
        harnesses = [h.value for h in Harness]
        if self.harness is not None and self.harness not in harnesses:
            raise UsageError(f"harness must be one of {', '.join(harnesses)}, not {self.harness!r}")
        if not isinstance(self.include_subagents, bool):
            raise UsageError(
                f"include_subagents must be True or False, not {self.include_subagents!r}"
            )
        for name in ("after", "before"):
            value = getattr(self, name)
            if value is not None and not isinstance(value, datetime):
                raise UsageError(
                    f"{name} must be a datetime, not {type(value).__name__} {value!r} "
                    "(memoir.search.parse_when reads ISO text)"
                )
            if value is not None and value.tzinfo is None:
                object.__setattr__(self, name, value.replace(tzinfo=UTC))
        if self.after is not None and self.before is not None and self.after >= self.before:
            raise UsageError(
                f"the date range is empty: after {self.after.isoformat()} is not earlier "
                f"than before {self.before.isoformat()}"
            )
        if self.role is not None and self.role not in SEARCH_ROLES:
            raise UsageError(f"role must be one of {', '.join(SEARCH_ROLES)}, not {self.role!r}")


@dataclass(frozen=True, slots=True)
class TextHit:
    exchange_id: str
    score: float  # higher is better
    snippet: str  # match marked with \x02 … \x03 (rendered by the CLI)


@dataclass(frozen=True, slots=True)
class SummaryRow:
    """The database summary adapter's row (memoir.summaries maps it to SummaryState)."""

    session_id: str
    kind: str  # "missing" | "empty" | "real" | "errored"
    body: str = ""
    covered: int = 0  # events covered (database adapter counts events, not bytes)
    last_exchange: str | None = None
    attempts: int = 0
    last_attempt_ms: int = 0
    resummary_attempts: int | None = None
    resummary_last_attempt_ms: int | None = None
    model: str | None = None
    message: str | None = None
    updated_at: datetime | None = None


@dataclass(frozen=True, slots=True)
class CheckpointRow:
    id: str
    session_id: str
    created_at: datetime
    watermark: int
    memory_boundary: int
    disposition: str
    previous_id: str | None
    data: dict[str, Any]


@dataclass(frozen=True, slots=True)
class TraceRow:
    session_id: str | None
    kind: str
    at: datetime
    data: dict[str, Any]


def is_encoding_error(exc: BaseException) -> bool:
    seen: BaseException | None = exc
    while seen is not None:
        if isinstance(seen, UnicodeError):
            return True
        seen = seen.__cause__ or seen.__context__
    return False


def with_scrub_retry(run: Callable[[IngestBatch], None], batch: IngestBatch) -> None:
    try:
        run(batch)
    except Exception as exc:
        if not is_encoding_error(exc):
            raise
        run(scrub_batch(batch))


def _json(value: Any) -> Any:
    return json.loads(scrub_deep(json.dumps(value, ensure_ascii=False, default=str)))


def _encodes(text: str) -> bool:
    """Whether ``text`` encodes as UTF-8 (no lone surrogate)."""
    if text.isascii():
        return True
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def _clean_text(text: str) -> bool:
    """Whether ``text`` stores as it is: no NUL, no lone surrogate."""
    return "\x00" not in text and _encodes(text)


def _plain(value: Any) -> bool:
    """Whether ``value`` is JSON as it is (str keys; str, number, bool, None, list, dict)
    whose text all encodes, so the JSON round trip would give it back unchanged (a NUL
    inside JSON text is written as an escape, and comes back)."""
    if value is None or isinstance(value, bool | int | float):
        return True
    if isinstance(value, str):
        return _encodes(value)
    if isinstance(value, list):
        return all(_plain(v) for v in value)
    if isinstance(value, dict):
        return all(isinstance(k, str) and _encodes(k) and _plain(v) for k, v in value.items())
    return False  # a tuple, a date, …: the JSON round trip changes it


def _clean(value: Any) -> Any:
    """Scrub every str field of a frozen dataclass instance (the instance itself when
    nothing in it needs it: the common case, checked without copying)."""
    changes: dict[str, Any] = {}
    for f in dataclasses.fields(value):
        v = getattr(value, f.name)
        if isinstance(v, Enum):
            continue
        if isinstance(v, str):
            if not _clean_text(v):
                changes[f.name] = scrub_deep(v)
        elif isinstance(v, dict):
            if not _plain(v):
                changes[f.name] = _json(v)
        elif (
            isinstance(v, tuple)
            and v
            and all(isinstance(i, str) for i in v)
            and not all(_clean_text(i) for i in v)
        ):
            changes[f.name] = tuple(scrub_deep(i) for i in v)
    return dataclasses.replace(value, **changes) if changes else value


def scrub_batch(batch: IngestBatch) -> IngestBatch:
    session: Session = _clean(batch.session)
    events: tuple[Event, ...] = tuple(_clean(e) for e in batch.events)
    exchanges: tuple[Exchange, ...] = tuple(_clean(x) for x in batch.exchanges)
    source: SourceState | None = None if batch.source is None else _clean(batch.source)
    skipped: tuple[SkippedLine, ...] = tuple(_clean(s) for s in batch.skipped)
    return dataclasses.replace(
        batch,
        session=session,
        events=events,
        exchanges=exchanges,
        source=source,
        skipped=skipped,
    )


class _Times(Protocol):
    def time(self, value: datetime) -> Any:
        """``value`` as the backend stores a time (a transaction's ``Tx.time``)."""
        ...


@dataclass(frozen=True, slots=True)
class ItemFilter:
    """Which items a read returns. ``as_of``: the items valid then (their validity
    interval holds it), superseded or not; else only live ones unless ``history``.
    ``projects``: project-scoped items of these projects, with the global ones."""

    owner: str | None = None
    key_sig: str | None = None
    project: str | None = None
    projects: tuple[str, ...] | None = None
    session_id: str | None = None
    kinds: tuple[str, ...] = ()
    scope: str | None = None
    scope_key: str | None = None
    as_of: datetime | None = None
    history: bool = False
    ids: tuple[str, ...] | None = None

    def sql(self, tx: _Times, alias: str = "i") -> tuple[str, list[Any]]:
        a = f"{alias}."
        clauses: list[str] = []
        params: list[Any] = []
        if self.as_of is not None:
            at = tx.time(self.as_of)
            clauses.append(
                f"COALESCE({a}valid_from, {a}created_at) <= ? AND "
                f"({a}valid_until IS NULL OR {a}valid_until > ?)"
            )
            params += [at, at]
        elif not self.history:
            clauses.append(f"{a}superseded_by IS NULL")
        for column, value in (
            ("owner", self.owner),
            ("key_sig", self.key_sig),
            ("project", self.project),
            ("session_id", self.session_id),
            ("scope", self.scope),
            ("scope_key", self.scope_key),
        ):
            if value is not None:
                clauses.append(f"{a}{column} = ?")
                params.append(value)
        if self.projects is not None:
            marks = ", ".join("?" for _ in self.projects)
            inside = f" OR {a}scope_key IN ({marks})" if self.projects else ""
            clauses.append(f"({a}scope_key = ''{inside})")
            params += list(self.projects)
        if self.kinds:
            clauses.append(f"{a}kind IN ({', '.join('?' for _ in self.kinds)})")
            params += list(self.kinds)
        if self.ids is not None:
            if not self.ids:
                clauses.append("1 = 0")
            else:
                clauses.append(f"{a}id IN ({', '.join('?' for _ in self.ids)})")
                params += list(self.ids)
        return (" AND ".join(clauses) or "1 = 1"), params
