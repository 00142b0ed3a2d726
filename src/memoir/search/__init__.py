"""Search over past exchanges: full text (the store's FTS5 / tsvector index), optional
semantic vectors (the ``embeddings`` extra), and hybrid ranking by reciprocal rank fusion.

Entry points: :func:`search` (typed :class:`SearchHit` list; its inputs become one
:class:`SearchRequest`, which :func:`run_search` takes as built), :func:`embed_backlog`
(embedding catch-up), :func:`load_embedder` (the configured :class:`Embedder`;
:class:`HashEmbedder` is the deterministic fake for tests).
"""

from memoir.fusion import rrf
from memoir.search.backfill import BackfillResult, embed_backlog
from memoir.search.dates import parse_when
from memoir.search.embedder import (
    Embedder,
    EmbeddingsUnavailable,
    HashEmbedder,
    load_embedder,
)
from memoir.search.engine import matches_filters, resolve_mode, run_search, search
from memoir.search.hits import MODES, SearchHit, SearchMode
from memoir.search.request import SearchRequest
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
