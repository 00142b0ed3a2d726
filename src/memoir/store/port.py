"""The store port: what every backend offers, as parts named for what they hold.

``store.sessions``, ``store.events``, ``store.exchanges``, ``store.ingest`` (batches,
source states, skipped lines), ``store.index`` (full-text search), ``store.embeddings``,
``store.summaries``, ``store.checkpoints``, ``store.traces``, ``store.usage``,
``store.cache``, ``store.memory`` (the memory lane: cursor, queue, pending failures,
denials, receipts, settlement), ``store.memory_items``, ``store.keyed_items`` (JSON values
under a namespace and a key), ``store.users`` (API users and key hashes), ``store.api``
(sessions fed over HTTP: idempotent appends), ``store.jobs`` (background jobs: queue,
claims, heartbeats, fenced finish), ``store.claims``;
the store itself owns connections and transactions (``close``, ``schema_version``,
``read_only``) and the health checks over all of them.
Both backends behave identically; the same test suite runs against both. Calls are
synchronous and safe from several threads; every write of several rows is one transaction.
"""

from __future__ import annotations

from contextlib import AbstractContextManager
from pathlib import Path
from typing import Protocol

from memoir.store.health import SessionDamage
from memoir.store.parts import (
    ApiPart,
    CachePart,
    CheckpointsPart,
    EmbeddingsPart,
    EventsPart,
    ExchangesPart,
    IndexPart,
    IngestPart,
    JobsPart,
    KeyedItemsPart,
    MemoryItemsPart,
    MemoryPart,
    RescanPart,
    SessionsPart,
    SummariesPart,
    TracesPart,
    UsagePart,
    UsersPart,
)

__all__ = ["Claims", "Store"]


class Claims(Protocol):
    def hold(self, name: str, busy: str) -> AbstractContextManager[None]:
        """Hold the job ``name`` while the block runs: across processes (and, on
        PostgreSQL, replicas); raises ``Busy(busy)`` at once when someone else holds it."""
        ...


class Store(Protocol):
    backend: str  # "sqlite" | "postgres"
    # where derived files may be cached beside the database (None: nowhere)
    cache_dir: Path | None

    sessions: SessionsPart
    events: EventsPart
    exchanges: ExchangesPart
    ingest: IngestPart
    index: IndexPart
    embeddings: EmbeddingsPart
    summaries: SummariesPart
    checkpoints: CheckpointsPart
    traces: TracesPart
    usage: UsagePart
    cache: CachePart
    memory: MemoryPart
    memory_items: MemoryItemsPart
    rescan: RescanPart  # derived text re-scanned with a newer secret detector
    keyed_items: KeyedItemsPart  # JSON values under a namespace and a key (LangGraph's store)
    users: UsersPart
    api: ApiPart
    jobs: JobsPart
    claims: Claims

    @property
    def read_only(self) -> bool:
        """This process can only read the store (a read-only mount or file; a standby or
        a read-only role on PostgreSQL): what writes refuses up front (``ReadOnly``)."""
        ...

    def bulk_writes(self) -> AbstractContextManager[None]:
        """A long run of writes on this thread (a sync of many batches): the backend may
        trade read caching for a memory use that does not grow with the database (SQLite
        reads its pages without memory-mapping them)."""
        ...

    def close(self) -> None: ...
    def schema_version(self) -> int: ...
    def stats(self) -> dict[str, int]: ...
    def integrity_problems(self) -> list[str]: ...
    def damaged_sessions(self) -> SessionDamage:
        """Sessions whose exchanges or events are damaged, by what repairs them."""
        ...
