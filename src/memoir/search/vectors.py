"""Brute-force cosine search over the stored embeddings, cached in memory per process.

Rows are unit length, so cosine is one matrix-vector product. At 1M × 384 float32 the
matrix is 1.5 GB and a query takes ~80 ms on this project's 2-core machine (see
docs/benchmarks.md), fine for an archive; an ANN index is not worth its complexity below
that. The matrix is loaded once per (store, model) and reloaded when embeddings are added
by this process (:func:`invalidate`) or after ``max_age_s``.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass

import numpy as np

from memoir.store.port import Store

__all__ = ["VectorMatrix", "invalidate", "matrix_for", "top_k"]


@dataclass(frozen=True, slots=True)
class VectorMatrix:
    ids: tuple[str, ...]
    matrix: np.ndarray  # (n, dim) float32, unit rows
    dim: int
    loaded_at: float

    @property
    def size(self) -> int:
        return len(self.ids)

    def rows_of(self, ids: list[str]) -> list[int]:
        """Row numbers of the given exchange ids (those that have a vector)."""
        index = _row_index(self)
        return [index[i] for i in ids if i in index]


_cache: dict[tuple[int, str], VectorMatrix] = {}
_rows: dict[int, dict[str, int]] = {}


def _row_index(vectors: VectorMatrix) -> dict[str, int]:
    key = id(vectors)
    with _lock:
        index = _rows.get(key)
        if index is None:
            _rows.clear()  # one live matrix index at a time is enough
            index = _rows[key] = {xid: n for n, xid in enumerate(vectors.ids)}
        return index


_lock = threading.Lock()


def invalidate(store: Store | None = None, model: str | None = None) -> None:
    """Forget cached matrices (all, or those of one store and/or model)."""
    with _lock:
        for key in list(_cache):
            if (store is None or key[0] == id(store)) and (model is None or key[1] == model):
                del _cache[key]


def matrix_for(store: Store, model: str, *, max_age_s: float = 300.0) -> VectorMatrix:
    key = (id(store), model)
    with _lock:
        cached = _cache.get(key)
        if cached is not None and time.monotonic() - cached.loaded_at < max_age_s:
            return cached
    ids, blob, dim = store.load_embeddings(model)
    if ids and dim > 0:
        matrix = np.frombuffer(blob, dtype=np.float32).reshape(len(ids), dim)
    else:
        matrix = np.zeros((0, max(dim, 1)), dtype=np.float32)
    loaded = VectorMatrix(tuple(ids), matrix, dim, time.monotonic())
    with _lock:
        _cache[key] = loaded
    return loaded


def top_k(matrix: np.ndarray, query: np.ndarray, k: int) -> list[tuple[int, float]]:
    """Row indexes of the ``k`` highest dot products with ``query``, best first."""
    n = matrix.shape[0]
    if n == 0 or k <= 0:
        return []
    scores = matrix @ query.astype(np.float32, copy=False)
    part = np.argpartition(-scores, k - 1)[:k] if k < n else np.arange(n)
    order = part[np.lexsort((part, -scores[part]))]
    return [(int(i), float(scores[i])) for i in order]
