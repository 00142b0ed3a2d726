"""What the client returns and raises: frozen values in the API's own shape, read from its
JSON, and the API's errors as classes of Memoir's exception tree. Pure (no I/O, no httpx).

An error answer (``{"error": {"code", "message"}}``) becomes an :class:`ApiError` that is
also the :mod:`memoir.errors` class the server mapped to that code (:data:`ERRORS`, the
inverse of ``memoir.server.plumbing.STATUS``): ``except NotFound`` catches a 404 from the
service as it catches one from the library::

    MemoirError
    └── ApiError                       any error answer (status, code, request_id)
        ├── ApiUnauthorized  ConfigError   401: no, an unknown or revoked key
        ├── ApiInvalid       UsageError    400, 413, 415, 422 invalid_request
        ├── ApiNotFound      NotFound      404
        ├── ApiBusy          Busy          409 busy
        ├── ApiSummaryFailed SummaryError  409 summary_failed
        │   └── ApiHistoryTooLarge  OversizedHistory  409 history_too_large
        ├── ApiCompactionFailed CompactionError  422 compaction_failed
        ├── ApiUnavailable   StoreError    503, or the service cannot be reached
        └── ApiReadOnly      ReadOnly      503 read_only
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Generic, TypeVar

from memoir.errors import (
    Busy,
    CompactionError,
    ConfigError,
    MemoirError,
    NotFound,
    OversizedHistory,
    ReadOnly,
    StoreError,
    SummaryError,
    UsageError,
)

__all__ = [
    "ERRORS",
    "ApiError",
    "Appended",
    "Compaction",
    "Event",
    "Exchange",
    "Hit",
    "Job",
    "Memory",
    "MemoryContext",
    "Page",
    "Readiness",
    "Remembered",
    "Session",
    "Summary",
    "UsageReport",
    "error_for",
]

T = TypeVar("T")
Json = Mapping[str, Any]


def _dt(value: Any) -> datetime | None:
    return datetime.fromisoformat(value) if isinstance(value, str) else None


@dataclass(frozen=True, slots=True)
class Page(Generic[T]):
    """One page of a list; ``next_cursor`` is None on the last. ``total``, ``projects`` and
    ``harnesses`` are filled for sessions listed with ``order="recent"``."""

    items: tuple[T, ...]
    next_cursor: str | None
    total: int | None = None
    projects: tuple[str, ...] = ()
    harnesses: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class Session:
    """A session. ``id`` is the id it is stored under; ``name`` the id its client chose
    (None for one Memoir named), which every method also takes. ``events`` is set by
    :meth:`Client.session` and the ``recent`` listing; ``exchanges``, ``first_at`` and
    ``last_at`` by the ``recent`` listing only."""

    id: str
    project: str
    harness: str
    incognito: bool
    memory_disabled: bool
    archived: bool
    subagent: bool
    created_at: datetime | None
    updated_at: datetime | None
    events: int | None = None
    exchanges: int | None = None
    first_at: datetime | None = None
    last_at: datetime | None = None
    name: str | None = None

    @classmethod
    def from_json(cls, d: Json) -> Session:
        return cls(
            id=d["id"],
            project=d["project"],
            harness=d["harness"],
            incognito=d["incognito"],
            memory_disabled=d["memory_disabled"],
            archived=d["archived"],
            subagent=d["subagent"],
            created_at=_dt(d.get("created_at")),
            updated_at=_dt(d.get("updated_at")),
            events=d.get("events"),
            exchanges=d.get("exchanges"),
            first_at=_dt(d.get("first_at")),
            last_at=_dt(d.get("last_at")),
            name=d.get("name"),
        )


@dataclass(frozen=True, slots=True)
class Event:
    ordinal: int
    kind: str
    author: str
    text: str
    timestamp: datetime | None
    time_inferred: bool
    tool_name: str | None
    call_id: str | None
    payload: Json

    @classmethod
    def from_json(cls, d: Json) -> Event:
        return cls(
            ordinal=d["ordinal"],
            kind=d["kind"],
            author=d["author"],
            text=d["text"],
            timestamp=_dt(d.get("timestamp")),
            time_inferred=d["time_inferred"],
            tool_name=d.get("tool_name"),
            call_id=d.get("call_id"),
            payload=d.get("payload") or {},
        )


@dataclass(frozen=True, slots=True)
class Exchange:
    id: str
    first_ordinal: int
    last_ordinal: int
    user_text: str
    assistant_text: str
    tool_names: tuple[str, ...]
    started_at: datetime | None
    ended_at: datetime | None

    @classmethod
    def from_json(cls, d: Json) -> Exchange:
        return cls(
            id=d["id"],
            first_ordinal=d["first_ordinal"],
            last_ordinal=d["last_ordinal"],
            user_text=d["user_text"],
            assistant_text=d["assistant_text"],
            tool_names=tuple(d["tool_names"]),
            started_at=_dt(d.get("started_at")),
            ended_at=_dt(d.get("ended_at")),
        )


@dataclass(frozen=True, slots=True)
class Hit:
    """A search hit; ``highlights`` are the ``[start, end)`` spans of matches in
    ``snippet``."""

    session_id: str
    exchange_id: str
    timestamp: datetime | None
    project: str
    score: float
    snippet: str
    highlights: tuple[tuple[int, int], ...]
    summary: str | None

    @classmethod
    def from_json(cls, d: Json) -> Hit:
        return cls(
            session_id=d["session_id"],
            exchange_id=d["exchange_id"],
            timestamp=_dt(d.get("timestamp")),
            project=d["project"],
            score=d["score"],
            snippet=d["snippet"],
            highlights=tuple((int(a), int(b)) for a, b in d.get("highlights", ())),
            summary=d.get("summary"),
        )


@dataclass(frozen=True, slots=True)
class Appended:
    added: int
    skipped: int
    last_ordinal: int


@dataclass(frozen=True, slots=True)
class Job:
    """A background job (a summary regeneration): ``state`` is queued, running, done,
    failed …; ``stalled`` when its worker stopped sending heartbeats."""

    id: str
    kind: str
    session: str | None
    state: str
    phase: str | None
    completed: int | None
    total: int | None
    error: str | None
    attempts: int
    created_at: datetime | None
    finished_at: datetime | None
    stalled: bool

    @classmethod
    def from_json(cls, d: Json) -> Job:
        return cls(
            id=d["id"],
            kind=d["kind"],
            session=d.get("session"),
            state=d["state"],
            phase=d.get("phase"),
            completed=d.get("completed"),
            total=d.get("total"),
            error=d.get("error"),
            attempts=d.get("attempts", 0),
            created_at=_dt(d.get("created_at")),
            finished_at=_dt(d.get("finished_at")),
            stalled=bool(d.get("stalled")),
        )


@dataclass(frozen=True, slots=True)
class Summary:
    """A session's summary (None before one is written) and its latest regeneration job.
    ``coverage``: ``amount``, ``unit`` and ``current`` (the page's "12 of 14")."""

    summary: str | None
    updated_at: datetime | None
    model: str | None
    coverage: Json | None
    job: Job | None

    @classmethod
    def from_json(cls, d: Json) -> Summary:
        job = d.get("job")
        return cls(
            summary=d.get("summary"),
            updated_at=_dt(d.get("updated_at")),
            model=d.get("model"),
            coverage=d.get("coverage"),
            job=Job.from_json(job) if job else None,
        )


@dataclass(frozen=True, slots=True)
class Compaction:
    """The context to send next; ``details``: the rest of the trace (window, cap …)."""

    messages: tuple[Json, ...]
    strategy: str
    tokens_before: int
    tokens_after: int
    removed_count: int
    checkpoint_id: str | None
    details: Json

    @classmethod
    def from_json(cls, d: Json) -> Compaction:
        fixed = ("messages", "strategy", "tokens_before", "tokens_after", "removed_count")
        return cls(
            messages=tuple(d["messages"]),
            strategy=d["strategy"],
            tokens_before=d["tokens_before"],
            tokens_after=d["tokens_after"],
            removed_count=d["removed_count"],
            checkpoint_id=d.get("checkpoint_id"),
            details={k: v for k, v in d.items() if k not in (*fixed, "checkpoint_id")},
        )


@dataclass(frozen=True, slots=True)
class Memory:
    """A long-term memory item; ``score`` when recalled by a query, ``history`` (what it
    superseded) when read alone; ``sources`` quote the exchanges it came from."""

    id: str
    content: str
    kind: str
    scope: str
    project: str | None
    session_id: str | None
    created_at: datetime | None
    valid_until: datetime | None
    superseded_by: str | None
    sources: tuple[Json, ...]
    score: float | None = None
    history: tuple[Memory, ...] = ()

    @classmethod
    def from_json(cls, d: Json) -> Memory:
        return cls(
            id=d["id"],
            content=d["content"],
            kind=d["kind"],
            scope=d["scope"],
            project=d.get("project"),
            session_id=d.get("session_id"),
            created_at=_dt(d.get("created_at")),
            valid_until=_dt(d.get("valid_until")),
            superseded_by=d.get("superseded_by"),
            sources=tuple(d.get("sources", ())),
            score=d.get("score"),
            history=tuple(Memory.from_json(h) for h in d.get("history", ())),
        )


@dataclass(frozen=True, slots=True)
class MemoryContext:
    """The block an agent prepends to its system prompt."""

    text: str
    tokens: int
    items: tuple[str, ...]
    left_out: int


@dataclass(frozen=True, slots=True)
class Remembered:
    settled: bool
    items: tuple[Memory, ...]
    waiting: Any
    error: str | None
    pending: bool


@dataclass(frozen=True, slots=True)
class UsageReport:
    """Model calls for the caller; ``totals``: one row per day and model."""

    totals: tuple[Json, ...]
    calls: int
    failed: int
    input_tokens: int
    output_tokens: int


@dataclass(frozen=True, slots=True)
class Readiness:
    status: str  # ready | degraded
    checks: Json
    degraded: tuple[str, ...]


class ApiError(MemoirError):
    """An error answer of the service: ``status`` (HTTP), ``code`` (stable, e.g.
    ``not_found``), the server's one-line message, and its request id for its log."""

    def __init__(
        self, message: str, *, status: int, code: str, request_id: str | None = None
    ) -> None:
        Exception.__init__(self, message)
        self.status = status
        self.code = code
        self.request_id = request_id
        self.reason = message  # as SummaryError has
        self.fallback_attempted = False


class ApiUnauthorized(ApiError, ConfigError):
    """No key, or an unknown or revoked one: a setting to fix."""


class ApiInvalid(ApiError, UsageError):
    """A parameter or body the service refused; the message names it."""


class ApiNotFound(ApiError, NotFound):
    pass


class ApiBusy(ApiError, Busy):
    pass


class ApiSummaryFailed(ApiError, SummaryError):
    pass


class ApiHistoryTooLarge(ApiSummaryFailed, OversizedHistory):
    pass


class ApiCompactionFailed(ApiError, CompactionError):
    pass


class ApiUnavailable(ApiError, StoreError):
    """The service, its database or its job admission cannot be reached."""


class ApiReadOnly(ApiUnavailable, ReadOnly):
    pass


# the error code the server sends → the class raised (memoir.server.plumbing.STATUS inverted)
ERRORS: dict[str, type[ApiError]] = {
    "unauthorized": ApiUnauthorized,
    "invalid_request": ApiInvalid,
    "bad_request": ApiInvalid,
    "body_too_large": ApiInvalid,
    "unsupported_media_type": ApiInvalid,
    "not_found": ApiNotFound,
    "busy": ApiBusy,
    "summary_failed": ApiSummaryFailed,
    "history_too_large": ApiHistoryTooLarge,
    "compaction_failed": ApiCompactionFailed,
    "store_unavailable": ApiUnavailable,
    "admission_unavailable": ApiUnavailable,
    "not_ready": ApiUnavailable,
    "unavailable": ApiUnavailable,
    "read_only": ApiReadOnly,
}
_BY_STATUS: dict[int, type[ApiError]] = {
    401: ApiUnauthorized,
    404: ApiNotFound,
    400: ApiInvalid,
    413: ApiInvalid,
    415: ApiInvalid,
    422: ApiInvalid,
    503: ApiUnavailable,
}


def error_for(status: int, body: Any, request_id: str | None = None) -> ApiError:
    """The error to raise for an answer of ``status`` with JSON ``body`` (anything, when
    the answer was not the API's error shape). Pure."""
    detail = body.get("error") if isinstance(body, Mapping) else None
    code = detail.get("code") if isinstance(detail, Mapping) else None
    message = detail.get("message") if isinstance(detail, Mapping) else None
    code = code if isinstance(code, str) else f"http_{status}"
    if not isinstance(message, str) or not message:
        message = f"the service answered {status}"
    cls = ERRORS.get(code) or _BY_STATUS.get(status, ApiError)
    return cls(message, status=status, code=code, request_id=request_id)


def strings(value: Sequence[Any]) -> tuple[str, ...]:
    return tuple(str(v) for v in value)
