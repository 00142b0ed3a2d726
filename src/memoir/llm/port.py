"""The one model interface: request and completion values, the failure tree, the Model port,
and the usage ledger every call is metered into. Pure but for the ledger's sink.

Request and completion values of the one model interface. Pure, no I/O.

Model failures, mapped at the provider boundary into one tree.

::

    memoir.errors.MemoirError
    └── ModelError                 every failed model call; .provider, .model, .request_id
        ├── Truncated              stopped at max_tokens; .partial holds the text. Never
        │                          returned as a success.
        ├── Refused                content policy / Terms-of-Service rejection: a
        │                          refusal stop reason, finish_reason "content_filter",
        │                          or a moderation error body ("was flagged"), whatever
        │                          the HTTP status. The only error that selects a fallback.
        ├── AuthError              never retried, never a reason to switch model
        │   ├── Unauthorized       401 / bad or missing key
        │   ├── Forbidden          403 without a moderation body (permissions)
        │   ├── OutOfCredit        402 / insufficient credit or quota
        │   └── UnknownModel       404: no such model (or no such endpoint: a base URL
        │                          that is wrong) — the setting's problem, not the input's
        ├── RateLimited            429; .retry_after seconds when the provider said so
        ├── Transient              5xx, timeouts, connection errors
        ├── EmptyResponse          success status with no content
        ├── ContextTooLong         the provider rejected the input size
        ├── OutputBudgetRejected   the provider rejected max_tokens (the compaction ladder
        │                          steps down on this)
        └── BadResponse            the provider answered something unparseable

RateLimited and Transient are retried with jittered backoff inside a caller-given budget
(memoir.llm.wiring); everything else surfaces at once. ``usage`` carries the tokens the
provider reported for a failed call when it reported any (a Truncated call was billed).

The narrow interfaces of the model layer: Model, TokenCounter, UsageSink.

The usage ledger: every model call, success or failure, becomes a UsageRecord.

:class:`Metered` wraps a Model and hands one record per call to a
:class:`~memoir.llm.port.UsageSink` (the store's usage part implements it). Wrap it *inside*
the retry loop (``Retrying(Metered(model, store.usage))``) so that each attempt the provider
billed is its own row. A sink that fails is logged and ignored: the ledger never fails a call.

:func:`usage_totals` folds records into totals by day and model for ``memoir usage``.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from datetime import UTC, datetime
from enum import StrEnum
from typing import Any, Literal, Protocol, runtime_checkable

from memoir.errors import MemoirError

__all__ = [
    "AuthError",
    "BadResponse",
    "ChatMessage",
    "Completion",
    "ContextTooLong",
    "EmptyResponse",
    "Forbidden",
    "MemorySink",
    "Metered",
    "Model",
    "ModelError",
    "ModelRequest",
    "OfflineTask",
    "OutOfCredit",
    "OutputBudgetRejected",
    "Purpose",
    "RateLimited",
    "Refused",
    "RequestMeta",
    "StopReason",
    "TokenCounter",
    "Transient",
    "Truncated",
    "Unauthorized",
    "UnknownModel",
    "Usage",
    "UsageRecord",
    "UsageSink",
    "UsageTotal",
    "holding_usage",
    "outcome_of",
    "usage_totals",
]

Role = Literal["system", "user", "assistant", "tool"]


class StopReason(StrEnum):
    END = "end"
    MAX_TOKENS = "max_tokens"
    REFUSAL = "refusal"
    TOOL_USE = "tool_use"


class Purpose(StrEnum):
    """Who is calling; recorded in the usage ledger."""

    SUMMARY = "summary"
    EPISODE = "episode"
    HALF = "half"
    FALLBACK = "fallback"
    MERGE = "merge"
    COMPACTION = "compaction"
    EXTRACTION = "extraction"
    OTHER = "other"


@dataclass(frozen=True, slots=True)
class ChatMessage:
    role: Role
    content: str


@dataclass(frozen=True, slots=True)
class RequestMeta:
    user: str | None = None
    session: str | None = None
    purpose: Purpose = Purpose.OTHER
    job_id: str | None = None
    redacted: int = 0  # secrets replaced in this request before a provider saw it


class OfflineTask(Protocol):
    """An engine's structured input for one call, with the engine's offline strategy.

    A provider model reads the prompt; the offline model reads no prompt and asks the task
    instead: ``answer`` returns the text (its best within ``max_tokens`` as ``count``
    counts it). Tasks are frozen dataclasses, so redaction can reach their text fields.
    """

    def answer(self, max_tokens: int, count: Callable[[str], int]) -> str: ...


@dataclass(frozen=True, slots=True)
class ModelRequest:
    """One call. ``max_tokens`` is the provider output cutoff. ``json`` asks for a JSON
    object response where the provider supports it (the prompt must still ask for it).
    ``task`` is the same call as structured input, for the offline model
    (:class:`OfflineTask`); a provider never sees it."""

    messages: tuple[ChatMessage, ...]
    max_tokens: int
    system: str | None = None
    temperature: float = 0.0
    json: bool = False
    meta: RequestMeta = field(default_factory=RequestMeta)
    task: OfflineTask | None = None


@dataclass(frozen=True, slots=True)
class Usage:
    input_tokens: int = 0
    output_tokens: int = 0


@dataclass(frozen=True, slots=True)
class Completion:
    """A successful call. A completion whose stop reason is MAX_TOKENS or REFUSAL is never
    returned by ``Model.complete``: it raises Truncated / Refused instead."""

    text: str
    stop_reason: StopReason
    usage: Usage
    model: str
    provider: str
    request_id: str | None = None
    latency_ms: float = 0.0
    offline: bool = False
    extra: dict[str, Any] = field(default_factory=dict)


class ModelError(MemoirError):
    """A model call failed. ``retryable`` says whether backoff may help."""

    retryable = False

    def __init__(
        self,
        message: str,
        *,
        provider: str | None = None,
        model: str | None = None,
        request_id: str | None = None,
        status: int | None = None,
        usage: Usage | None = None,
    ) -> None:
        super().__init__(message)
        self.message = message
        self.usage = usage
        self.provider = provider
        self.model = model
        self.request_id = request_id
        self.status = status


class Truncated(ModelError):
    def __init__(self, message: str, *, partial: str = "", **kw: object) -> None:
        super().__init__(message, **kw)  # type: ignore[arg-type]
        self.partial = partial


class Refused(ModelError):
    pass


class AuthError(ModelError):
    pass


class Unauthorized(AuthError):
    pass


class Forbidden(AuthError):
    pass


class OutOfCredit(AuthError):
    pass


class UnknownModel(AuthError):
    pass


class RateLimited(ModelError):
    retryable = True

    def __init__(self, message: str, *, retry_after: float | None = None, **kw: object) -> None:
        super().__init__(message, **kw)  # type: ignore[arg-type]
        self.retry_after = retry_after


class Transient(ModelError):
    retryable = True


class EmptyResponse(ModelError):
    pass


class ContextTooLong(ModelError):
    pass


class OutputBudgetRejected(ModelError):
    pass


class BadResponse(ModelError):
    pass


@runtime_checkable
class Model(Protocol):
    """One model behind one provider.

    ``name`` is ``"<provider>:<model>"`` (``"offline"`` for the embedded default).
    ``complete`` is synchronous and thread-safe (callers run bounded concurrency with
    threads). It returns a Completion with stop reason END or TOOL_USE, or raises a
    :class:`memoir.llm.port.ModelError` subclass. It never returns truncated text.
    """

    name: str

    def complete(self, request: ModelRequest) -> Completion: ...


@runtime_checkable
class TokenCounter(Protocol):
    """Exact token counts for one encoding (e.g. ``cl100k_base``)."""

    encoding: str

    def count(self, text: str) -> int: ...


@dataclass(frozen=True, slots=True)
class UsageRecord:
    """One model call, success or failure, as the ledger stores it."""

    at: datetime
    provider: str
    model: str
    purpose: str
    outcome: str  # "ok" or the ModelError class name ("Truncated", "Refused", …)
    input_tokens: int
    output_tokens: int
    latency_ms: float
    user: str | None = None
    session: str | None = None
    job_id: str | None = None
    request_id: str | None = None
    redacted: int = 0  # secrets replaced in the request before the provider saw it


class UsageSink(Protocol):
    def record(self, record: UsageRecord) -> None: ...


log = logging.getLogger(__name__)


def outcome_of(exc: BaseException | None) -> str:
    """ "ok", the ModelError class name, or "error:<Type>" for anything unexpected."""
    if exc is None:
        return "ok"
    if isinstance(exc, ModelError):
        return type(exc).__name__
    return f"error:{type(exc).__name__}"


class MemorySink:
    """An in-memory UsageSink (tests, or a process without a store)."""

    def __init__(self) -> None:
        self.records: list[UsageRecord] = []
        self._lock = threading.Lock()

    def record(self, record: UsageRecord) -> None:
        with self._lock:
            self.records.append(record)

    def usage_records(self, since: datetime | None = None) -> list[UsageRecord]:
        with self._lock:
            return [r for r in self.records if since is None or r.at >= since]


# Completion.extra key: errors of attempts a provider made and recovered from inside one
# complete() (OpenAI's max_tokens → max_completion_tokens switch); each is billed as a call
FAILED_ATTEMPTS = "failed_attempts"


_HOLD: ContextVar[tuple[UsageSink, list[UsageRecord]] | None] = ContextVar(
    "memoir_usage_hold", default=None
)


@contextmanager
def holding_usage(sink: UsageSink) -> Iterator[list[UsageRecord]]:
    """The records of the calls metered into ``sink`` inside the block, kept in the list
    it yields instead of sent: the caller writes them itself, in a transaction of its own
    once the call is over (memory's runner does, so no model call waits on the ledger)."""
    held: list[UsageRecord] = []
    token = _HOLD.set((sink, held))
    try:
        yield held
    finally:
        _HOLD.reset(token)


class Metered:
    """A Model that records every call of ``inner`` through ``sink`` (see
    :func:`holding_usage`)."""

    def __init__(self, inner: Model, sink: UsageSink, *, clock: type[datetime] = datetime) -> None:
        self.inner = inner
        self.sink = sink
        self.name = inner.name
        self._clock = clock

    def close(self) -> None:
        """Close the wrapped model when it holds connections."""
        close = getattr(self.inner, "close", None)
        if callable(close):
            close()

    def complete(self, request: ModelRequest) -> Completion:
        at = self._clock.now(UTC)
        started = time.monotonic()
        try:
            completion = self.inner.complete(request)
        except BaseException as exc:
            self._record(request, at, started, None, exc)
            raise
        for earlier in completion.extra.pop(FAILED_ATTEMPTS, ()):  # one row per HTTP call
            self._record(request, at, started, None, earlier)
        self._record(request, at, started, completion, None)
        return completion

    def _record(
        self,
        request: ModelRequest,
        at: datetime,
        started: float,
        completion: Completion | None,
        exc: BaseException | None,
    ) -> None:
        provider, _, model = self.name.partition(":")
        usage: Usage | None
        if completion is not None:
            usage, request_id = completion.usage, completion.request_id
            provider, model = completion.provider or provider, completion.model or model
        else:
            usage = getattr(exc, "usage", None)
            request_id = getattr(exc, "request_id", None)
        record = UsageRecord(
            at=at,
            provider=provider,
            model=model or provider,
            purpose=str(request.meta.purpose),
            outcome=outcome_of(exc),
            input_tokens=usage.input_tokens if usage else 0,
            output_tokens=usage.output_tokens if usage else 0,
            latency_ms=(time.monotonic() - started) * 1000.0,
            user=request.meta.user,
            session=request.meta.session,
            job_id=request.meta.job_id,
            request_id=request_id,
            redacted=request.meta.redacted,
        )
        hold = _HOLD.get()
        if hold is not None and hold[0] is self.sink:
            hold[1].append(record)
            return
        try:
            self.sink.record(record)
        except Exception as exc:  # metering never fails the call it meters
            log.warning("usage ledger: could not record a %s call: %s", model, exc)
            log.debug("usage ledger failure", exc_info=True)


@dataclass(frozen=True, slots=True)
class UsageTotal:
    day: str  # YYYY-MM-DD (UTC)
    model: str  # "<provider>:<model>"
    calls: int
    ok: int
    failed: int
    input_tokens: int
    output_tokens: int
    redacted: int = 0


def usage_totals(records: Iterable[UsageRecord]) -> list[UsageTotal]:
    """Totals by (UTC day, model), sorted by day then model."""
    acc: dict[tuple[str, str], list[int]] = {}
    for r in records:
        at = r.at if r.at.tzinfo else r.at.replace(tzinfo=UTC)
        day = at.astimezone(UTC).date().isoformat()
        key = (day, f"{r.provider}:{r.model}" if r.provider != r.model else r.model)
        row = acc.setdefault(key, [0, 0, 0, 0, 0, 0])
        row[0] += 1
        row[1 if r.outcome == "ok" else 2] += 1
        row[3] += r.input_tokens
        row[4] += r.output_tokens
        row[5] += r.redacted
    return [UsageTotal(day, model, *vals) for (day, model), vals in sorted(acc.items())]
