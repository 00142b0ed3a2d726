"""What both SQL backends build on: the parts wired over the backend's transactions, and
the health checks. A backend supplies its transactions and what differs (ingest writes,
session deletion, the text engine, the embedding options, claims)."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from memoir.store import health, parts
from memoir.store.db import Db
from memoir.store.memory_sql import ItemText, ItemWriter
from memoir.store.port import Claims
from memoir.store.sql_common import Dialect
from memoir.store.values import IngestBatch

__all__ = ["SqlStore"]


class SqlStore:
    """Parts over one backend's :class:`Db`. ``index_keys`` names the index table and its
    exchange key column (for :mod:`memoir.store.health`). The parts it wires are those
    :class:`memoir.store.port.Store` names."""

    @contextmanager
    def bulk_writes(self) -> Iterator[None]:
        """:meth:`memoir.store.port.Store.bulk_writes`: nothing to change by default."""
        yield

    def _wire(
        self,
        db: Db,
        *,
        apply_batch: Callable[[Any, IngestBatch], None],
        delete_rows: Callable[[Any, str], bool],
        engine: parts.TextEngine,
        embeddings: parts.EmbeddingsPart,
        claims: Claims,
        index_keys: tuple[str, str],
        dialect: Dialect,
        job_locking: parts.JobLocking,
        item_text: ItemText,
    ) -> None:
        self._db = db
        self._index_keys = index_keys
        self.sessions = parts.SessionsPart(db, delete_rows)
        self.events = parts.EventsPart(db)
        self.exchanges = parts.ExchangesPart(db)
        self.ingest = parts.IngestPart(db, apply_batch)
        self.index = parts.IndexPart(db, engine)
        self.embeddings = embeddings
        self.summaries = parts.SummariesPart(db)
        self.checkpoints = parts.CheckpointsPart(db)
        self.traces = parts.TracesPart(db)
        self.usage = parts.UsagePart(db)
        self.cache = parts.CachePart(db)
        writer = ItemWriter(item_text, dialect.row_lock)
        self.memory = parts.MemoryPart(db, writer)
        self.memory_items = parts.MemoryItemsPart(db, item_text, writer)
        self.rescan = parts.RescanPart(db, self.memory_items)
        self.keyed_items = parts.KeyedItemsPart(db, postgres=dialect.row_lock != "")
        self.users = parts.UsersPart(db)
        self.api = parts.ApiPart(db, apply_batch, dialect)
        self.jobs = parts.JobsPart(db, job_locking)
        self.claims = claims

    def stats(self) -> dict[str, int]:
        with self._db.ro() as tx:
            return health.stats(tx, *self._index_keys)

    def integrity_problems(self) -> list[str]:
        with self._db.ro() as tx:
            return health.integrity_problems(tx, *self._index_keys)

    def damaged_sessions(self) -> health.SessionDamage:
        with self._db.ro() as tx:
            return health.damaged_sessions(tx)
