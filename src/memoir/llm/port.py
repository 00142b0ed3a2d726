"""The narrow interfaces of the model layer: Model, TokenCounter, UsageSink."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Protocol, runtime_checkable

from memoir.llm.values import Completion, ModelRequest

__all__ = ["Model", "TokenCounter", "UsageRecord", "UsageSink"]


@runtime_checkable
class Model(Protocol):
    """One model behind one provider.

    ``name`` is ``"<provider>:<model>"`` (``"offline"`` for the embedded default).
    ``complete`` is synchronous and thread-safe (callers run bounded concurrency with
    threads). It returns a Completion with stop reason END or TOOL_USE, or raises a
    :class:`memoir.llm.errors.ModelError` subclass. It never returns truncated text.
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
