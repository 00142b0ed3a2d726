"""Search over past exchanges: full text (the store's FTS5 / tsvector index), optional
semantic vectors (the ``embeddings`` extra), and hybrid ranking by reciprocal rank fusion;
and the embedding that feeds the vectors, on write and as a catch-up, defined here.

Entry points: :func:`search` (typed :class:`SearchHit` list; its inputs become one
:class:`SearchRequest`, which :func:`run_search` takes as built), :func:`embed_backlog`
(embedding catch-up), :func:`load_embedder` (the configured :class:`Embedder`;
:class:`HashEmbedder` is the deterministic fake for tests). The other names are imported
from their modules when first used, and the embedding's vector modules when it runs, so
importing one module of this package (the CLI's ``memoir.search.request``) costs no more
than that module.

Embedding. A write (sync, append) calls :func:`embed_written` for the sessions it stored:
their newest exchanges without a vector are embedded at once, at most :data:`WRITE_MAX`.
``memoir embed`` (or a background step after sync) calls :func:`embed_backlog`: it asks
the store for exchanges that have no vector for this model yet, embeds them in batches and
stores the vectors, one transaction per batch — an interrupted run keeps what it finished
and the next run continues where it stopped. Memory stays flat in the corpus's size: one
batch of texts, vectors and token states at a time, and each text's context read by a
probe for its previous exchange.

The text embedded for an exchange is the exchange preceded by the tail of the one before
it in the same session (:func:`embedded_context`): a turn alone is often too short or too
elliptical to embed well ("Yes, last weekend with my sister"), and the turn before usually
names what it is about. Only the *previous* exchange is used, so appending to a session
never makes a stored vector stale (a changed exchange loses its vector in the store and is
re-embedded). On LoCoMo this lifted hybrid recall@10 from 0.788 to 0.804
(docs/benchmarks.md).

An embedder with token states (:class:`TokenEmbedder`) stores them packed beside each
vector (:func:`memoir.search.ranking.pack_tokens`), from the same forward pass; for such an
embedder, vectors stored without token states (written before they existed) are redone.
So are vectors embedded from an older recipe of that text (the store hands them out after
the missing ones: :data:`memoir.store.index_doc.EMBED_RECIPE`, which must be raised when
:func:`embedded_context`, :data:`PREVIOUS_CHARS` or ``embedding_text`` change).
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from memoir.fusion import rrf
    from memoir.search.embedders import Embedder, EmbeddingsUnavailable, HashEmbedder, load_embedder
    from memoir.search.engine import run_search, search
    from memoir.search.hits import MODES, SearchHit, SearchMode
    from memoir.search.request import SearchRequest, matches_filters, parse_when, resolve_mode
    from memoir.store.port import Store
    from memoir.store.values import SearchFilters

__all__ = [
    "DEFAULT_BATCH",
    "MODES",
    "PREVIOUS_CHARS",
    "WRITE_MAX",
    "BackfillResult",
    "Embedder",
    "EmbeddingsUnavailable",
    "HashEmbedder",
    "SearchFilters",
    "SearchHit",
    "SearchMode",
    "SearchRequest",
    "embed_backlog",
    "embed_written",
    "embedded_context",
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


# embedding: on write, and the catch-up ------------------------------------------------


DEFAULT_BATCH = 128

# most exchanges one write embeds (a first sync of a large archive embeds its latest
# turns; `memoir embed` the rest): ~5 s of MiniLM on one core
WRITE_MAX = 256

# how much of the previous exchange leads an exchange's embedded text: its end (the reply
# this exchange answers), short enough to leave most of MiniLM's 256-token window to the
# exchange itself
PREVIOUS_CHARS = 400


@dataclass(frozen=True, slots=True)
class BackfillResult:
    model: str
    embedded: int
    batches: int
    complete: bool  # False when stopped by ``max_items`` with work left


def embed_backlog(
    store: Store,
    embedder: Embedder,
    *,
    batch: int = DEFAULT_BATCH,
    max_items: int | None = None,
    progress: Callable[[int], None] | None = None,
) -> BackfillResult:
    """Embed every exchange that has no vector for ``embedder.name`` yet."""
    done = batches = 0
    complete = True
    from memoir.search.embedders import TokenEmbedder  # the vector modules load on use

    with_tokens = isinstance(embedder, TokenEmbedder)
    while True:
        want = batch if max_items is None else min(batch, max_items - done)
        if want <= 0:
            complete = not store.embeddings.backlog(embedder.name, 1, with_tokens=with_tokens)
            break
        rows = store.embeddings.backlog(embedder.name, want, with_tokens=with_tokens)
        if not rows:
            break
        stored = _embed_rows(store, embedder, rows)
        done += stored
        batches += 1
        if progress is not None:
            progress(stored)
        if len(rows) < want and stored == len(rows):
            break
    # no cache to drop: the generation moved, and a replica patches from the change log
    return BackfillResult(embedder.name, done, batches, complete)


def embed_written(
    store: Store,
    embedder: Embedder,
    session_ids: Sequence[str],
    *,
    max_items: int | None = None,
    batch: int = DEFAULT_BATCH,
) -> int:
    """Embedding on write: embed what a write just stored in ``session_ids`` (each
    session's latest exchanges without a vector first), at most ``max_items`` (default
    :data:`WRITE_MAX`), in batches;
    returns how many were stored. What is left over waits for :func:`embed_backlog`."""
    if max_items is None:
        max_items = WRITE_MAX
    if max_items <= 0 or not session_ids:
        return 0
    from memoir.search.embedders import TokenEmbedder  # the vector modules load on use

    with_tokens = isinstance(embedder, TokenEmbedder)
    rows = store.embeddings.missing_in(
        embedder.name, session_ids, max_items, with_tokens=with_tokens
    )
    done = 0
    for start in range(0, len(rows), batch):
        done += _embed_rows(store, embedder, rows[start : start + batch])
    return done


def _embed_rows(store: Store, embedder: Embedder, rows: list[tuple[str, str]]) -> int:
    """Embed ``rows`` (exchange id, its text), each led by its previous exchange, and store
    the vectors (with token states when the embedder has them); how many were stored."""
    import numpy as np

    from memoir.search.embedders import TokenEmbedder
    from memoir.search.ranking import pack_tokens

    texts = _with_context(store, rows)
    blobs: list[bytes | None] | None = None
    if isinstance(embedder, TokenEmbedder):
        pooled, states = embedder.embed_with_tokens(texts)
        blobs = [pack_tokens(s) for s in states]
    else:
        pooled = embedder.embed(texts)
    vectors = np.ascontiguousarray(pooled, np.float32)
    return store.embeddings.put(  # a row a sync changed meanwhile is not stored:
        embedder.name,  # it stays in the backlog and the next batch embeds it anew
        [(exchange_id, vectors[n].tobytes()) for n, (exchange_id, _) in enumerate(rows)],
        embedder.dim,
        blobs,
        embedded_from=[text for _, text in rows],
    )


def embedded_context(text: str, previous: str | None) -> str:
    """What is embedded for an exchange: the tail of the previous exchange's text, then
    its own."""
    if not previous:
        return text
    return f"{previous[-PREVIOUS_CHARS:]}\n\n{text}"


def _with_context(store: Store, rows: list[tuple[str, str]]) -> list[str]:
    """The rows' texts, each led by its session's previous exchange (read per row, not
    per session: a batch costs the same in a session of ten exchanges or ten thousand)."""
    previous = store.embeddings.previous_texts([xid for xid, _ in rows])
    return [embedded_context(text, previous.get(xid)) for xid, text in rows]
