"""Embedding catch-up, off the sync's critical path.

``memoir embed`` (or a background step after sync) calls :func:`embed_backlog`: it asks the
store for exchanges that have no vector for this model yet, embeds them in batches and
stores the vectors, one transaction per batch — an interrupted run keeps what it finished
and the next run continues where it stopped.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from memoir.search.embedder import Embedder
from memoir.search.vectors import invalidate
from memoir.store.port import Store

__all__ = ["BackfillResult", "embed_backlog"]

DEFAULT_BATCH = 128


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
    while True:
        want = batch if max_items is None else min(batch, max_items - done)
        if want <= 0:
            complete = not store.embedding_backlog(embedder.name, 1)
            break
        rows = store.embedding_backlog(embedder.name, want)
        if not rows:
            break
        vectors = np.ascontiguousarray(embedder.embed([text for _, text in rows]), np.float32)
        store.put_embeddings(
            embedder.name,
            [(exchange_id, vectors[n].tobytes()) for n, (exchange_id, _) in enumerate(rows)],
            embedder.dim,
        )
        done += len(rows)
        batches += 1
        if progress is not None:
            progress(len(rows))
        if len(rows) < want:
            break
    if done:
        invalidate(store, embedder.name)
    return BackfillResult(embedder.name, done, batches, complete)
