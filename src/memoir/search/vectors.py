"""Brute-force cosine search over the stored embeddings, cached in memory per process.

Rows are unit length, so cosine is one matrix-vector product. Up to 200k rows every query
is an exact scan; above, a projected first pass picks a shortlist that is rescored exactly
(:mod:`memoir.search.coarse`), which keeps 1M × 384 well under the full scan's ~120 ms on
this project's 2-core machine (see docs/benchmarks.md) without an ANN index and its
upkeep. The matrix is loaded once per (store, model) and kept while the store's embedding
generation for the model (raised by every write to its vectors, whichever process makes
it) stays the same; a large one is also cached as a memory-mapped file beside an SQLite
database (:mod:`memoir.search.matrix_file`), so the next process does not read it again.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING

from memoir.search.coarse import COARSE_MIN, CoarseIndex, build_coarse
from memoir.search.matrix_file import read_coarse, read_matrix, write_coarse
from memoir.search.matrix_load import patched, read_whole, write_files
from memoir.search.reads import VectorReads

if TYPE_CHECKING:
    import numpy as np

__all__ = [
    "VectorMatrix",
    "invalidate",
    "matrix_for",
    "nearest",
    "prepare_files",
    "time_mask",
    "top_k",
]

# a mask keeping at most this many rows is scanned exactly on a copy of those rows
SMALL_SUBSET = 50_000


@dataclass(frozen=True, slots=True)
class VectorMatrix:
    ids: tuple[str, ...]
    matrix: np.ndarray  # (n, dim) float32, unit rows
    dim: int
    generation: int  # the store's embedding generation for the model when read

    @property
    def size(self) -> int:
        return len(self.ids)

    def rows_of(self, ids: list[str]) -> list[int]:
        """Row numbers of the given exchange ids (those that have a vector)."""
        index = _row_index(self)
        return [index[i] for i in ids if i in index]

    def without(self, ids: list[str]) -> set[str]:
        """Those of ``ids`` that have no vector here."""
        index = _row_index(self)
        return {i for i in ids if i not in index}

    def session_mask(self, session_ids: list[str]) -> np.ndarray:
        """A boolean per row: does its exchange belong to one of ``session_ids``? (An
        exchange id is its session id, ``:``, an ordinal.)"""
        import numpy as np

        codes, index = _session_codes(self)
        wanted = np.zeros(len(index) + 1, dtype=bool)  # the last code: no session known
        for sid in session_ids:
            code = index.get(sid)
            if code is not None:
                wanted[code] = True
        return wanted[codes]


_cache: dict[tuple[int, str], VectorMatrix] = {}
_coarse: dict[int, CoarseIndex] = {}
_rows: dict[int, dict[str, int]] = {}
_sessions: dict[int, tuple[np.ndarray, dict[str, int]]] = {}
_times: dict[int, np.ndarray] = {}


def _row_index(vectors: VectorMatrix) -> dict[str, int]:
    key = id(vectors)
    with _lock:
        index = _rows.get(key)
        if index is None:
            _rows.clear()  # one live matrix index at a time is enough
            index = _rows[key] = {xid: n for n, xid in enumerate(vectors.ids)}
        return index


def _session_codes(vectors: VectorMatrix) -> tuple[np.ndarray, dict[str, int]]:
    """Per row, a small integer naming its session; and session id → that integer."""
    import numpy as np

    key = id(vectors)
    with _lock:
        found = _sessions.get(key)
    if found is None:
        index: dict[str, int] = {}
        codes = np.fromiter(
            (index.setdefault(xid.rpartition(":")[0], len(index)) for xid in vectors.ids),
            dtype=np.int32,
            count=vectors.size,
        )
        found = (codes, index)
        with _lock:
            _sessions.clear()  # one live matrix at a time, as for the row index
            _sessions[key] = found
    return found


_lock = threading.Lock()


def invalidate(store: VectorReads | None = None, model: str | None = None) -> None:
    """Forget cached matrices (all, or those of one store and/or model)."""
    with _lock:
        for key in list(_cache):
            if (store is None or key[0] == id(store)) and (model is None or key[1] == model):
                _forget(_cache.pop(key))


def _forget(vectors: VectorMatrix) -> None:
    """Drop what was derived from ``vectors`` (call with ``_lock`` held)."""
    for derived in (_coarse, _rows, _sessions, _times):
        derived.pop(id(vectors), None)


def matrix_for(store: VectorReads, model: str) -> VectorMatrix:
    """``model``'s vectors in ``store``: from this process's memory while its generation is
    current, else from the cached file of that generation, else an older cached file
    patched with the logged changes, else from the store (:mod:`memoir.search.matrix_load`)."""
    key = (id(store), model)
    generation = store.embeddings.generation(model)
    with _lock:
        cached = _cache.get(key)
    if cached is not None and cached.generation == generation:
        return cached
    directory = store.cache_dir
    found = read_matrix(directory, model, generation) if directory is not None else None
    patch = None
    if found is not None:
        ids, matrix = found
        loaded = VectorMatrix(ids, matrix, int(matrix.shape[1]), generation)
    else:
        patch = patched(store, model, directory) if directory is not None else None
        whole = patch or read_whole(store, model, generation, directory)
        loaded = VectorMatrix(whole.ids, whole.matrix, int(whole.matrix.shape[1]), generation)
    coarse = None
    if patch is not None and patch.coarse is not None:
        coarse = CoarseIndex(*patch.coarse)
    elif loaded.size >= COARSE_MIN:
        coarse = _coarse_for(directory, model, loaded)
    with _lock:
        if cached is not None:
            _forget(cached)
        _cache[key] = loaded
        if coarse is not None:
            _coarse.clear()
            _coarse[id(loaded)] = coarse
    return loaded


def _coarse_for(directory: Path | None, model: str, vectors: VectorMatrix) -> CoarseIndex:
    """The matrix's coarse index: from its cached files when there are some, else built
    (and cached beside the matrix)."""
    if directory is not None:
        found = read_coarse(directory, model, vectors.generation, vectors.size)
        if found is not None:
            return CoarseIndex(*found)
    coarse = build_coarse(vectors.matrix)
    if directory is not None:
        write_coarse(directory, model, vectors.generation, coarse.basis, coarse.projected)
    return coarse


def prepare_files(store: VectorReads, model: str) -> bool:
    """Write the model's cached matrix files now (after ``memoir embed``), so the next
    search process reads them instead of the database — a page of vectors at a time, so
    the embedding process never holds the whole matrix; False when this store keeps none."""
    if store.cache_dir is None:
        return False
    write_files(store, model, store.cache_dir)
    return True


def time_mask(
    store: VectorReads,
    model: str,
    vectors: VectorMatrix,
    after: datetime | None,
    before: datetime | None,
) -> np.ndarray:
    """A boolean per row: did its exchange happen in ``[after, before)``? Rows with no time
    are left out (as the date filter leaves them out). The times are read from the store
    once per loaded matrix."""
    import numpy as np

    key = id(vectors)
    with _lock:
        seconds = _times.get(key)
    if seconds is None:
        index = _row_index(vectors)
        seconds = np.full(vectors.size, np.nan)
        for xid, when in store.embeddings.times(model):
            row = index.get(xid)
            if row is not None and when is not None:
                seconds[row] = when.timestamp()
        with _lock:
            _times.clear()  # one live matrix at a time
            _times[key] = seconds
    keep = ~np.isnan(seconds)
    if after is not None:
        keep &= seconds >= after.timestamp()
    if before is not None:
        keep &= seconds < before.timestamp()
    return keep


def nearest(
    vectors: VectorMatrix, query: np.ndarray, k: int, mask: np.ndarray | None = None
) -> list[tuple[int, float]]:
    """The ``k`` rows nearest ``query`` (among those ``mask`` keeps), best first: exact
    below ``COARSE_MIN`` rows or ``SMALL_SUBSET`` kept rows, a projected shortlist
    rescored exactly above."""
    import numpy as np

    if mask is not None:
        kept = np.flatnonzero(mask)
        if kept.size <= SMALL_SUBSET:  # a copy of few rows is cheaper than scoring all
            return [(int(kept[i]), s) for i, s in top_k(vectors.matrix[kept], query, k)]
    if vectors.size < COARSE_MIN or (mask is None and k >= vectors.size):
        return top_k(vectors.matrix, query, k, mask)
    key = id(vectors)
    with _lock:
        coarse = _coarse.get(key)
    if coarse is None:
        coarse = build_coarse(vectors.matrix)
        with _lock:
            _coarse.clear()
            _coarse[key] = coarse
    rows = np.sort(coarse.shortlist(query, k, mask))
    return [(int(rows[i]), s) for i, s in top_k(vectors.matrix[rows], query, k)]


def top_k(
    matrix: np.ndarray, query: np.ndarray, k: int, mask: np.ndarray | None = None
) -> list[tuple[int, float]]:
    """Row indexes of the ``k`` highest dot products with ``query`` (among the rows
    ``mask`` keeps), best first."""
    import numpy as np

    if matrix.shape[0] == 0 or k <= 0:
        return []
    scores = matrix @ query.astype(np.float32, copy=False)
    if mask is not None:
        scores[~mask] = -np.inf
        k = min(k, int(np.count_nonzero(mask)))
        if k == 0:
            return []
    n = scores.shape[0]
    part = np.argpartition(-scores, k - 1)[:k] if k < n else np.arange(n)
    order = part[np.lexsort((part, -scores[part]))]
    return [(int(i), float(scores[i])) for i in order]
