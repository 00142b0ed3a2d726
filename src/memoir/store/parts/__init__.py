"""The store's parts, one per aggregate it holds: each a small class over :class:`Db`
(shared SQL), with what differs by backend handed in by the backend that wires it."""

from memoir.store.parts.events import ApiPart, AppendResult, EventsPart, ExchangesPart
from memoir.store.parts.index import EmbeddingsPart, IndexPart, TextEngine
from memoir.store.parts.jobs import JobLocking, JobsPart, UserInfo, UsersPart
from memoir.store.parts.memory import KeyedItemsPart, MemoryPart
from memoir.store.parts.memory_items import MemoryItemsPart
from memoir.store.parts.sessions import IngestPart, RescanPart, RescanState, SessionsPart
from memoir.store.parts.summaries import (
    CachePart,
    CheckpointsPart,
    SummariesPart,
    TracesPart,
    UsagePart,
)

__all__ = [
    "ApiPart",
    "AppendResult",
    "CachePart",
    "CheckpointsPart",
    "EmbeddingsPart",
    "EventsPart",
    "ExchangesPart",
    "IndexPart",
    "IngestPart",
    "JobLocking",
    "JobsPart",
    "KeyedItemsPart",
    "MemoryItemsPart",
    "MemoryPart",
    "RescanPart",
    "RescanState",
    "SessionsPart",
    "SummariesPart",
    "TextEngine",
    "TracesPart",
    "UsagePart",
    "UserInfo",
    "UsersPart",
]
