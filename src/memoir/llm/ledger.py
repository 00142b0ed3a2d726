"""The usage ledger: every model call, success or failure, becomes a UsageRecord.

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
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import UTC, datetime

from memoir.llm.errors import ModelError
from memoir.llm.port import Model, UsageRecord, UsageSink
from memoir.llm.values import Completion, ModelRequest, Usage

__all__ = ["MemorySink", "Metered", "UsageTotal", "outcome_of", "usage_totals"]

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


class Metered:
    """A Model that records every call of ``inner`` through ``sink``."""

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
