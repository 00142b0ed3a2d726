"""Search over past exchanges: full text (the store's FTS5 / tsvector index), optional
semantic vectors (the ``embeddings`` extra), and hybrid ranking by reciprocal rank fusion.

Entry points: :func:`search` (typed :class:`SearchHit` list; its inputs become one
:class:`SearchRequest`, which :func:`run_search` takes as built), :func:`embed_backlog`
(embedding catch-up), :func:`load_embedder` (the configured :class:`Embedder`;
:class:`HashEmbedder` is the deterministic fake for tests).

The names are imported from their modules when first used, so importing one module of this
package (the CLI's ``memoir.search.request``) costs no more than that module.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from memoir.fusion import rrf
    from memoir.search.backfill import BackfillResult, embed_backlog
    from memoir.search.embedders import Embedder, EmbeddingsUnavailable, HashEmbedder, load_embedder
    from memoir.search.engine import run_search, search
    from memoir.search.hits import MODES, SearchHit, SearchMode
    from memoir.search.request import SearchRequest, matches_filters, parse_when, resolve_mode
    from memoir.store.values import SearchFilters

__all__ = [
    "MODES",
    "BackfillResult",
    "Embedder",
    "EmbeddingsUnavailable",
    "HashEmbedder",
    "SearchFilters",
    "SearchHit",
    "SearchMode",
    "SearchRequest",
    "embed_backlog",
    "load_embedder",
    "matches_filters",
    "parse_when",
    "resolve_mode",
    "rrf",
    "run_search",
    "search",
]

# each public name: the module it is imported from when first used
_HOME = {
    "rrf": "memoir.fusion",
    "BackfillResult": "memoir.search.backfill",
    "embed_backlog": "memoir.search.backfill",
    **dict.fromkeys(
        ("Embedder", "EmbeddingsUnavailable", "HashEmbedder", "load_embedder"),
        "memoir.search.embedders",
    ),
    **dict.fromkeys(("run_search", "search"), "memoir.search.engine"),
    **dict.fromkeys(("MODES", "SearchHit", "SearchMode"), "memoir.search.hits"),
    **dict.fromkeys(
        ("SearchRequest", "matches_filters", "parse_when", "resolve_mode"), "memoir.search.request"
    ),
    "SearchFilters": "memoir.store.values",
}


def __getattr__(name: str) -> Any:
    home = _HOME.get(name)
    if home is None:
        raise AttributeError(f"module 'memoir.search' has no attribute {name!r}")
    value = getattr(importlib.import_module(home), name)
    globals()[name] = value
    return value
