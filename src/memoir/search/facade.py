"""A search as a home configures it: the embedder its ``MEMOIR_EMBEDDER`` names, a session
prefix resolved, the summary beside each hit read by the caller's ``summaries``.

What ``Memoir.search`` calls, with what it holds passed explicitly (the store, the
embedder setting, the summary reader), so ``app.py`` stays a thin front door and this
package never sees it; the ranking is :func:`memoir.search.engine.search`.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from memoir.errors import ConfigError, install_hint
from memoir.search.embedder import Embedder, load_embedder
from memoir.search.engine import SummaryReader, search
from memoir.search.hits import SearchHit
from memoir.search.reads import SearchReads
from memoir.search.session_ref import resolve_session
from memoir.store.values import SearchFilters

__all__ = ["search_configured"]


def _no_meaning_search(mode: str, setting: str, stored: list[str]) -> str:
    """Why ``--mode vector|hybrid`` cannot run, and what to do, in one line: semantic
    search switched off, or its extra missing — while this home may well hold vectors
    (``memoir stats`` counts them) that an install elsewhere computed."""
    if setting == "none":
        return f"--mode {mode} searches by meaning, which MEMOIR_EMBEDDER=none switches off"
    held = (
        f"this home holds vectors ({', '.join(stored)}), but this Python cannot embed the "
        "query to compare with them"
        if stored
        else "no embedder is installed"
    )
    return (
        f"--mode {mode} searches by meaning: {held}; install the embeddings extra "
        f"({install_hint('embeddings')}) or search with --mode text"
    )


_UNSET: Any = object()


def search_configured(
    store: SearchReads,
    query: str,
    *,
    embedder_setting: str,
    summaries: SummaryReader | None,
    filters: SearchFilters | None = None,
    mode: str | None = None,
    limit: int = 10,
    embedder: Embedder | None = _UNSET,
) -> list[SearchHit]:
    """:func:`~memoir.search.engine.search` with the embedder ``embedder_setting`` (the
    home's ``MEMOIR_EMBEDDER``) names unless one is given (None: none), and a session
    filter given as a unique prefix resolved to its session."""
    if embedder is _UNSET:
        embedder = load_embedder(embedder_setting)
        if embedder is None and mode in ("vector", "hybrid"):
            raise ConfigError(_no_meaning_search(mode, embedder_setting, store.embeddings.models()))
    if isinstance(filters, SearchFilters) and filters.session_id is not None:
        sid = resolve_session(store.sessions, filters.session_id, user=filters.user)
        filters = replace(filters, session_id=sid)
    return search(
        store,
        query,
        filters=filters,
        mode=mode,
        limit=limit,
        embedder=embedder,
        summaries=summaries,
    )
