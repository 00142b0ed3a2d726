"""The full-text index: ranked text matches, the snippets a page quotes, a rebuild. The
query is rendered per backend (FTS5 bm25 in :mod:`memoir.store.sqlite_search`, weighted
tsvector in :mod:`memoir.store.postgres_search`); this part runs it."""

from __future__ import annotations

from typing import Any, Protocol

from memoir.store.db import Db
from memoir.store.values import SearchFilters, TextHit

__all__ = ["IndexPart", "TextEngine"]


class TextEngine(Protocol):
    """What a backend's search module provides (each function takes its driver's
    connection)."""

    def search(
        self, conn: Any, query: str, filters: SearchFilters, limit: int, *, snippets: bool = True
    ) -> list[TextHit]: ...
    def snippets_for(
        self, conn: Any, query: str, filters: SearchFilters, exchange_ids: list[str]
    ) -> dict[str, str]: ...
    def rebuild_index(self, conn: Any) -> int: ...


class IndexPart:
    def __init__(self, db: Db, engine: TextEngine) -> None:
        self._db = db
        self._engine = engine

    def search(
        self, query: str, filters: SearchFilters, limit: int, *, snippets: bool = True
    ) -> list[TextHit]:
        """Exchanges matching ``query`` within ``filters``, best first, at most ``limit``;
        ``snippets=False`` leaves them out (ranking reads none)."""
        with self._db.read() as conn:
            return self._engine.search(conn, query, filters, limit, snippets=snippets)

    def snippets(
        self, query: str, filters: SearchFilters, exchange_ids: list[str]
    ) -> dict[str, str]:
        """The snippets :meth:`search` would give these exchanges, by id."""
        with self._db.read() as conn:
            return self._engine.snippets_for(conn, query, filters, exchange_ids)

    def repair(self) -> int:
        """Rebuild every index row; returns how many were written."""
        with self._db.write() as conn:
            return self._engine.rebuild_index(conn)
