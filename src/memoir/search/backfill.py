"""Embedding catch-up, off the sync's critical path.

``memoir embed`` (or a background step after sync) calls :func:`embed_backlog`: it asks the
store for exchanges that have no vector for this model yet, embeds them in batches and
stores the vectors, one transaction per batch — an interrupted run keeps what it finished
and the next run continues where it stopped.

The text embedded for an exchange is the exchange preceded by the tail of the one before it
in the same session (:func:`context_text`): a turn alone is often too short or too
elliptical to embed well ("Yes, last weekend with my sister"), and the turn before usually
names what it is about. Only the *previous* exchange is used, so appending to a session
never makes a stored vector stale (a changed exchange loses its vector in the store and is
re-embedded). On LoCoMo this lifted hybrid recall@10 from 0.788 to 0.804 (docs/benchmarks.md).

An embedder with token states (:class:`TokenEmbedder`) stores them packed beside each
vector (:func:`memoir.search.late.pack_tokens`), from the same forward pass; for such an
embedder, vectors stored without token states (written before they existed) are redone.
So are vectors embedded from an older recipe of that text (the store hands them out after
the missing ones: :data:`memoir.store.index_doc.EMBED_RECIPE`, which must be raised when
:func:`context_text`, :data:`PREVIOUS_CHARS` or ``embedding_text`` change).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from itertools import pairwise

import numpy as np

from memoir.search.embedder import Embedder, TokenEmbedder
from memoir.search.late import pack_tokens
from memoir.search.vectors import invalidate
from memoir.store.index_doc import embedding_text
from memoir.store.port import Store

__all__ = ["DEFAULT_BATCH", "PREVIOUS_CHARS", "BackfillResult", "context_text", "embed_backlog"]

DEFAULT_BATCH = 128
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
    with_tokens = isinstance(embedder, TokenEmbedder)
    while True:
        want = batch if max_items is None else min(batch, max_items - done)
        if want <= 0:
            complete = not store.embeddings.backlog(embedder.name, 1, with_tokens=with_tokens)
            break
        rows = store.embeddings.backlog(embedder.name, want, with_tokens=with_tokens)
        if not rows:
            break
        texts = _with_context(store, rows)
        blobs: list[bytes | None] | None = None
        if isinstance(embedder, TokenEmbedder):
            pooled, states = embedder.embed_with_tokens(texts)
            blobs = [pack_tokens(s) for s in states]
        else:
            pooled = embedder.embed(texts)
        vectors = np.ascontiguousarray(pooled, np.float32)
        stored = store.embeddings.put(  # a row a sync changed meanwhile is not stored:
            embedder.name,  # it stays in the backlog and the next batch embeds it anew
            [(exchange_id, vectors[n].tobytes()) for n, (exchange_id, _) in enumerate(rows)],
            embedder.dim,
            blobs,
            embedded_from=[text for _, text in rows],
        )
        done += stored
        batches += 1
        if progress is not None:
            progress(stored)
        if len(rows) < want and stored == len(rows):
            break
    if done:
        invalidate(store, embedder.name)
    return BackfillResult(embedder.name, done, batches, complete)


def context_text(text: str, previous: str | None) -> str:
    """What is embedded for an exchange: the tail of the previous exchange's text, then
    its own."""
    if not previous:
        return text
    return f"{previous[-PREVIOUS_CHARS:]}\n\n{text}"


def _with_context(store: Store, rows: list[tuple[str, str]]) -> list[str]:
    """The backlog rows' texts, each led by its session's previous exchange."""
    found = store.exchanges.many([xid for xid, _ in rows])
    previous: dict[str, str] = {}
    for session_id in {ex.session_id for ex in found.values()}:
        for before, exchange in pairwise(store.exchanges.of(session_id)):
            if exchange.id in found:
                previous[exchange.id] = embedding_text(before)
    return [context_text(text, previous.get(xid)) for xid, text in rows]
