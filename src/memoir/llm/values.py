"""Request and completion values of the one model interface. Pure, no I/O."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any, Literal, Protocol

__all__ = [
    "ChatMessage",
    "Completion",
    "ModelRequest",
    "OfflineTask",
    "Purpose",
    "RequestMeta",
    "StopReason",
    "Usage",
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
