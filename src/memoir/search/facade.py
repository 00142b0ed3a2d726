"""Wiring for ``Memoir.search``: the configured embedder and the summary reader.

Kept here so ``app.py`` stays a thin front door; everything is passed explicitly to
:func:`memoir.search.engine.search`.
"""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING, Any

from memoir.errors import ConfigError
from memoir.search.embedder import Embedder, load_embedder
from memoir.search.engine import SummaryReader, search
from memoir.search.hits import SearchHit
from memoir.store.values import SearchFilters

if TYPE_CHECKING:
    from memoir.app import Memoir

__all__ = ["default_summary_reader", "search_memoir"]

_UNSET: Any = object()


def default_summary_reader(memoir: Memoir) -> SummaryReader | None:
    """``memoir.summaries.persist.read_summary_body`` bound to this home.

    The summaries package decides where summaries live (archive files or the database) and
    strips their header; search only needs "session id → body".
    """
    try:
        from memoir.summaries.persist import read_summary_body
    except ImportError:  # a partial install without the summaries package
        return None

    def read(session_id: str) -> str | None:
        return read_summary_body(memoir, session_id)

    return read


def search_memoir(
    memoir: Memoir,
    query: str,
    *,
    filters: SearchFilters | None = None,
    mode: str | None = None,
    limit: int = 10,
    embedder: Embedder | None = _UNSET,
    summaries: SummaryReader | None = _UNSET,
) -> list[SearchHit]:
    if embedder is _UNSET:
        embedder = load_embedder(memoir.settings.embedder)
        if embedder is None and mode in ("vector", "hybrid") and memoir.settings.embedder == "none":
            raise ConfigError(
                f"--mode {mode} searches by meaning, which MEMOIR_EMBEDDER=none switches off"
            )
    if summaries is _UNSET:
        summaries = default_summary_reader(memoir)
    if isinstance(filters, SearchFilters) and filters.session_id is not None:
        from memoir.app import resolve_session

        filters = replace(filters, session_id=resolve_session(memoir.store, filters.session_id))
    return search(
        memoir.store,
        query,
        filters=filters,
        mode=mode,
        limit=limit,
        embedder=embedder,
        summaries=summaries,
    )
