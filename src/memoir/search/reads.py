"""What search reads of the store: the parts it names, and the exchanges and sessions one
search fetches once.

Any :class:`~memoir.store.port.Store` has these parts; a search is handed only what it
reads — the vector matrix its model's embeddings (with, where files are cached beside
the database, that directory and the claim that serializes writing them), the ranking the
full-text index, the exchanges and the sessions.
"""

from __future__ import annotations

from pathlib import Path
from typing import Protocol

from memoir.model import Exchange, Session
from memoir.store.parts import (
    EmbeddingsPart,
    ExchangesPart,
    IndexPart,
    MemoryItemsPart,
    SessionsPart,
)
from memoir.store.port import Claims

__all__ = ["Lookup", "SearchReads", "VectorReads"]


class VectorReads(Protocol):
    """What a model's vector matrix is loaded (and cached) from."""

    cache_dir: Path | None  # where matrix files may be cached (None: nowhere)
    embeddings: EmbeddingsPart
    claims: Claims


class SearchReads(VectorReads, Protocol):
    """What a search reads: the vectors, the full-text index, exchanges and sessions, and
    the memory items exchanges are evidence for."""

    index: IndexPart
    exchanges: ExchangesPart
    sessions: SessionsPart
    memory_items: MemoryItemsPart


class Lookup:
    """Exchanges and sessions fetched once per search."""

    def __init__(self, exchanges: ExchangesPart, sessions: SessionsPart) -> None:
        self._exchange_part = exchanges
        self._session_part = sessions
        self.exchanges: dict[str, Exchange] = {}
        self.sessions: dict[str, Session | None] = {}

    def load(self, ids: list[str]) -> None:
        missing = [i for i in ids if i not in self.exchanges]
        if missing:
            self.exchanges.update(self._exchange_part.many(missing))
        for exchange in (self.exchanges.get(i) for i in ids):
            if exchange is not None and exchange.session_id not in self.sessions:
                self.sessions[exchange.session_id] = self._session_part.get(exchange.session_id)
