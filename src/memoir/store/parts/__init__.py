"""The store's parts, one per aggregate it holds: each a small class over :class:`Db`
(shared SQL), with what differs by backend handed in by the backend that wires it."""

from memoir.store.parts.api import ApiPart, AppendResult
from memoir.store.parts.cache import CachePart
from memoir.store.parts.checkpoints import CheckpointsPart
from memoir.store.parts.events import EventsPart, ExchangesPart
from memoir.store.parts.index import EmbeddingsPart, IndexPart, TextEngine
from memoir.store.parts.ingest import IngestPart
from memoir.store.parts.jobs import JobLocking, JobsPart
from memoir.store.parts.keyed_items import KeyedItemsPart
from memoir.store.parts.memory import MemoryPart
from memoir.store.parts.memory_items import MemoryItemsPart
from memoir.store.parts.rescan import RescanPart, RescanState
from memoir.store.parts.sessions import SessionsPart
from memoir.store.parts.summaries import SummariesPart
from memoir.store.parts.traces import TracesPart
from memoir.store.parts.usage import UsagePart
from memoir.store.parts.users import UserInfo, UsersPart

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
