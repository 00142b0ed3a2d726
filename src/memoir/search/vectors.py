"""Cosine search over the stored embeddings, cached per process, with a coarse pass at scale.

A coarse first pass for large vector matrices: exact rescoring of a projected shortlist.

Scanning 1M × 384 float32 rows reads 1.5 GB per query (~120 ms here, memory bound). Above
:data:`COARSE_MIN` rows the scan runs on a projection onto the top :data:`COARSE_DIM`
principal directions of the vectors (uncentred SVD of a fixed sample, so dot products are
preserved within that subspace): a quarter of the bytes. The best ``max(SHORTLIST_MIN,
SHORTLIST_FACTOR × k)`` rows of that pass are rescored exactly with the full vectors, so
the order of what is returned is exact; only a row the projection ranked below the
shortlist can be missed. Below the threshold every query is exact.

Brute-force cosine search over the stored embeddings, cached in memory per process.

Rows are unit length, so cosine is one matrix-vector product. Up to 200k rows every query
is an exact scan; above, a projected first pass picks a shortlist that is rescored exactly
(:class:`CoarseIndex`), which keeps 1M × 384 well under the full scan's ~120 ms on
this project's 2-core machine (see docs/benchmarks.md) without an ANN index and its
upkeep. The matrix is loaded once per (store, model) and kept while the store's embedding
generation for the model (raised by every write to its vectors, whichever process makes
it) stays the same; when it moves, the rows the change log names are patched in
(:mod:`memoir.search.live_matrix`). A large one is also cached as a memory-mapped file
beside an SQLite database (:mod:`memoir.search.matrix_files`), so the next process does
not read it again.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, cast

from memoir.search.live_matrix import PATCH_MIN, PATCH_SHARE, LiveMatrix
from memoir.search.matrix_files import (
    patched,
    read_coarse,
    read_log_end,
    read_matrix,
    read_whole,
    write_coarse,
    write_files,
)
from memoir.search.request import VectorReads

if TYPE_CHECKING:
    import numpy as np

__all__ = [
    "COARSE_DIM",
    "COARSE_MIN",
    "CoarseIndex",
    "VectorMatrix",
    "build_coarse",
    "invalidate",
    "matrix_for",
    "nearest",
    "prepare_files",
    "time_mask",
    "top_k",
]


COARSE_MIN = 200_000


COARSE_DIM = 96


SAMPLE = 20_000


SHORTLIST_MIN = 2_000


SHORTLIST_FACTOR = 40


_CHUNK = 100_000


@dataclass(frozen=True, slots=True)
class CoarseIndex:
    basis: np.ndarray  # (dim, COARSE_DIM) float32, orthonormal columns
    projected: np.ndarray  # (n, COARSE_DIM) float32

    def shortlist(self, query: np.ndarray, k: int, mask: np.ndarray | None = None) -> np.ndarray:
        """Row indexes worth rescoring exactly for the top ``k`` (unordered), only rows
        ``mask`` keeps when one is given."""
        import numpy as np

        scores = self.projected @ (query @ self.basis)
        count = scores.shape[0]
        if mask is not None:
            scores[~mask] = -np.inf
            count = int(np.count_nonzero(mask))
        size = min(count, max(SHORTLIST_MIN, SHORTLIST_FACTOR * k))
        if size >= scores.shape[0]:
            return np.arange(scores.shape[0]) if mask is None else np.flatnonzero(mask)
        if size <= 0:
            return np.zeros(0, dtype=np.int64)
        return np.argpartition(-scores, size - 1)[:size]


def build_coarse(matrix: np.ndarray, dim: int = COARSE_DIM, seed: int = 0) -> CoarseIndex:
    """Project ``matrix`` onto the top ``dim`` right singular vectors of a row sample."""
    import numpy as np

    rng = np.random.default_rng(seed)
    n = matrix.shape[0]
    sample = matrix[np.sort(rng.choice(n, size=min(SAMPLE, n), replace=False))]
    _, _, vt = np.linalg.svd(sample.astype(np.float64), full_matrices=False)
    basis = np.ascontiguousarray(vt[:dim].T, dtype=np.float32)
    projected = np.empty((n, basis.shape[1]), dtype=np.float32)
    for start in range(0, n, _CHUNK):
        projected[start : start + _CHUNK] = matrix[start : start + _CHUNK] @ basis
    return CoarseIndex(basis, projected)


# a mask keeping at most this many rows is scanned exactly on a copy of those rows
SMALL_SUBSET = 50_000


@dataclass(frozen=True, slots=True)
class VectorMatrix:
    """What one search scores: the first ``size`` rows of a model's matrix. Read from a
    :class:`LiveMatrix` (``live``), the arrays are views of its buffers and ``alive``
    marks the rows whose vectors were removed since (None: none were)."""

    ids: Sequence[str]
    matrix: np.ndarray  # (n, dim) float32, unit rows
    dim: int
    generation: int  # the store's embedding generation for the model when read
    alive: np.ndarray | None = field(default=None, compare=False)
    live: LiveMatrix | None = field(default=None, compare=False, repr=False)
    index: dict[str, int] | None = field(default=None, compare=False, repr=False)
    codes: tuple[np.ndarray, dict[str, int]] | None = field(default=None, compare=False, repr=False)

    @property
    def size(self) -> int:
        return int(self.matrix.shape[0])

    def rows_of(self, ids: list[str]) -> list[int]:
        """Row numbers of the given exchange ids (those that have a vector)."""
        index = _row_index(self)
        return [row for row in (index.get(i) for i in ids) if row is not None and row < self.size]

    def without(self, ids: list[str]) -> set[str]:
        """Those of ``ids`` that have no vector here."""
        index = _row_index(self)
        return {i for i in ids if i not in index}

    def session_mask(self, session_ids: list[str]) -> np.ndarray:
        """A boolean per row: does its exchange belong to one of ``session_ids`` (and is
        its vector still there)? (An exchange id is its session id, ``:``, an ordinal.)"""
        import numpy as np

        codes, index = _session_codes(self)
        wanted = np.zeros(len(index) + 1, dtype=bool)  # the last code: no session known
        for sid in session_ids:
            code = index.get(sid)
            if code is not None:
                wanted[code] = True
        mask = wanted[codes[: self.size]]
        return mask if self.alive is None else mask & self.alive


_cache: dict[tuple[int, str], LiveMatrix] = {}


_coarse: dict[int, CoarseIndex] = {}


_rows: dict[int, dict[str, int]] = {}


_sessions: dict[int, tuple[np.ndarray, dict[str, int]]] = {}


_times: dict[int, np.ndarray] = {}


def _row_index(vectors: VectorMatrix) -> dict[str, int]:
    if vectors.index is not None:
        return vectors.index
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

    if vectors.codes is not None:
        return vectors.codes
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
                _cache.pop(key)
        _coarse.clear()


def matrix_for(store: VectorReads, model: str) -> VectorMatrix:
    """``model``'s vectors in ``store``: from this process's memory while its generation is
    current, else this process's matrix patched with the logged changes, else from the
    cached file of that generation, else an older cached file patched with the logged
    changes, else from the store (:mod:`memoir.search.matrix_files`)."""
    key = (id(store), model)
    generation = store.embeddings.generation(model)
    with _lock:
        live = _cache.get(key)
    if live is not None:
        with live.lock:
            if live.generation == generation and live.snapshot is not None:
                return cast(VectorMatrix, live.snapshot)  # unchanged: the same snapshot
            if _caught_up(live, store, model, generation):
                return _snapshot(live)
    live = _load(store, model, generation)
    with _lock:
        _cache[key] = live
    return _snapshot(live)


def _caught_up(live: LiveMatrix, store: VectorReads, model: str, generation: int) -> bool:
    """Patch ``live`` with what the change log says changed since it was read; False
    (untouched) when the log no longer holds that, or it is too much to patch."""
    if live.log_end is None:
        return False
    embeddings = store.embeddings
    end, changed = embeddings.changes(model, live.log_end)
    if embeddings.pruned(model) > live.log_end:  # asked after: a prune since is seen
        return False
    if len(changed) > max(PATCH_MIN, PATCH_SHARE * live.n):
        return False
    current = embeddings.vectors(model, changed) if changed else {}
    if any(len(blob) != 4 * live.dim for blob in current.values()):
        return False  # the model changed its width: read whole
    times = embeddings.times(model, list(current)) if live.wants_times and current else []
    live.patch(changed, current, times)
    live.generation, live.log_end = generation, end
    return True


def _load(store: VectorReads, model: str, generation: int) -> LiveMatrix:
    """A new matrix for ``model`` at ``generation``: the cached file of that generation,
    else an older file patched from the log, else the store whole."""
    directory = store.cache_dir
    found = read_matrix(directory, model, generation) if directory is not None else None
    if found is not None and directory is not None:
        ids, matrix = found
        log_end = read_log_end(directory, model, generation)
        live = LiveMatrix(ids, matrix, generation, log_end)
    else:
        patch = patched(store, model, directory) if directory is not None else None
        whole = patch or read_whole(store, model, generation, directory)
        live = LiveMatrix(whole.ids, whole.matrix, generation, whole.log_end, whole.coarse)
    if live.basis is None and live.n >= COARSE_MIN:
        snapshot = _snapshot(live)
        coarse = _coarse_for(directory, model, snapshot)
        live.set_coarse(coarse.basis, coarse.projected)
    return live


def _snapshot(live: LiveMatrix) -> VectorMatrix:
    """The rows as they are now (call with ``live.lock`` held, or before it is shared)."""
    snapshot = VectorMatrix(
        live.ids,
        live.rows,
        live.dim,
        live.generation,
        alive=live.alive,
        live=live,
        index=live.index,
        codes=(live.codes, live.sessions),
    )
    projected = live.projected
    if live.basis is not None and projected is not None:
        with _lock:
            _coarse.clear()  # one live matrix at a time
            _coarse[id(snapshot)] = CoarseIndex(live.basis, projected)
    live.snapshot = snapshot
    return snapshot


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

    live = vectors.live
    seconds = None
    if live is not None:
        with live.lock:
            if vectors.index is live.index:  # not squeezed since: its rows are ours
                seconds = live.seconds(
                    store.embeddings.times(model) if not live.wants_times else []
                )
                seconds = seconds[: vectors.size]
    key = id(vectors)
    if seconds is None:
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
    if vectors.alive is not None:
        keep &= vectors.alive
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

    if vectors.alive is not None:  # rows whose vectors were removed since: never scored
        mask = vectors.alive if mask is None else mask & vectors.alive
    if mask is not None:
        kept = np.flatnonzero(mask)
        if kept.size <= SMALL_SUBSET:  # a copy of few rows is cheaper than scoring all
            return [(int(kept[i]), s) for i, s in top_k(vectors.matrix[kept], query, k)]
    if vectors.size < COARSE_MIN or (mask is None and k >= vectors.size):
        return top_k(vectors.matrix, query, k, mask)
    key = id(vectors)
    with _lock:
        coarse = _coarse.get(key)
    live = vectors.live
    if coarse is None and live is not None and vectors.index is live.index:
        basis, projected = live.basis, live.projected  # (another store's snapshot was last)
        if basis is not None and projected is not None and projected.shape[0] >= vectors.size:
            coarse = CoarseIndex(basis, projected[: vectors.size])
    if coarse is None:
        coarse = build_coarse(vectors.matrix)
        with _lock:
            _coarse.clear()
            _coarse[key] = coarse
        if live is not None:
            with live.lock:
                if live.n == vectors.size and live.index is vectors.index:
                    live.set_coarse(coarse.basis, coarse.projected)  # patched from now on
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
