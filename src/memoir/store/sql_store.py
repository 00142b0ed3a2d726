"""What both SQL backends build on: the parts wired over the backend's transactions, and
the health checks. A backend supplies its transactions and what differs (ingest writes,
session deletion, the text engine, the embedding options, claims)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from memoir.store import health
from memoir.store.db import Db
from memoir.store.parts import (
    ApiPart,
    CachePart,
    CheckpointsPart,
    EmbeddingsPart,
    EventsPart,
    ExchangesPart,
    IndexPart,
    IngestPart,
    JobLocking,
    JobsPart,
    MemoryItemsPart,
    MemoryPart,
    SessionsPart,
    SummariesPart,
    TextEngine,
    TracesPart,
    UsagePart,
    UsersPart,
)
from memoir.store.port import Claims
from memoir.store.sql_common import Dialect
from memoir.store.values import IngestBatch

__all__ = ["SqlStore"]


class SqlStore:
    """Parts over one backend's :class:`Db`. ``index_keys`` names the index table and its
    exchange key column (for :mod:`memoir.store.health`). The parts it wires are those
    :class:`memoir.store.port.Store` names."""

    def _wire(
        self,
        db: Db,
        *,
        apply_batch: Callable[[Any, IngestBatch], None],
        delete_rows: Callable[[Any, str], bool],
        engine: TextEngine,
        embeddings: EmbeddingsPart,
        claims: Claims,
        index_keys: tuple[str, str],
        dialect: Dialect,
        job_locking: JobLocking,
    ) -> None:
        self._db = db
        self._index_keys = index_keys
        self.sessions = SessionsPart(db, delete_rows)
        self.events = EventsPart(db)
        self.exchanges = ExchangesPart(db)
        self.ingest = IngestPart(db, apply_batch)
        self.index = IndexPart(db, engine)
        self.embeddings = embeddings
        self.summaries = SummariesPart(db)
        self.checkpoints = CheckpointsPart(db)
        self.traces = TracesPart(db)
        self.usage = UsagePart(db)
        self.cache = CachePart(db)
        self.memory = MemoryPart(db)
        self.memory_items = MemoryItemsPart(db)
        self.users = UsersPart(db)
        self.api = ApiPart(db, apply_batch, dialect)
        self.jobs = JobsPart(db, job_locking)
        self.claims = claims

    def stats(self) -> dict[str, int]:
        with self._db.ro() as tx:
            return health.stats(tx, *self._index_keys)

    def integrity_problems(self) -> list[str]:
        with self._db.ro() as tx:
            return health.integrity_problems(tx, *self._index_keys)
