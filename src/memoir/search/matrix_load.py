"""Loading a model's vector matrix into a process: patched from a cached file, or whole.

Reading every vector out of SQLite takes seconds at scale (~15 s at 1M exchanges,
docs/benchmarks.md), and an exchange that grows drops its vector, so any sync that
touches an active conversation changes the matrix. :func:`patched` therefore starts from
the newest matrix file beside the database and applies what the store's change log
(migration v7) says changed since that file was read: the changed exchanges' rows are
dropped and their current vectors appended. A file is patchable only while the log still
holds everything after it; the log is trimmed under the ``vectors:<model>`` claim, and only
up to the oldest file still present, and a read whole writes its file only when nothing
was logged since it began (:func:`read_whole`); a patch that finds its file replaced
meanwhile gives up. Past :data:`REWRITE_SHARE` of the rows changed, or whenever
anything does not add up, the matrix is read whole and a new file written.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from memoir.errors import Busy, ReadOnly
from memoir.search import matrix_file
from memoir.search.matrix_file import (
    cached_generations,
    read_coarse,
    read_log_end,
    read_matrix,
    write_matrix,
)
from memoir.search.reads import VectorReads

if TYPE_CHECKING:
    import numpy as np

__all__ = ["PAGE_ROWS", "REWRITE_SHARE", "Loaded", "patched", "read_whole", "write_files"]

# past this share of a file's rows changed, a new file is cheaper than patching each start
REWRITE_SHARE = 0.05
PATCH_MIN = 1_000  # ... but a patch of this many rows is always cheap
PAGE_ROWS = 8_192  # vectors read at a time when a matrix file is written (12 MB at 384-d)


@dataclass(frozen=True, slots=True)
class Loaded:
    ids: tuple[str, ...]
    matrix: np.ndarray  # (n, dim) float32
    coarse: tuple[np.ndarray, np.ndarray] | None  # (basis, projected rows), when kept
    log_end: int | None = None  # the change log's end at or before the read: patch from it


def patched(store: VectorReads, model: str, directory: Path) -> Loaded | None:
    """The newest cached matrix with the logged changes since applied, or None when it
    cannot be (no file, no log, too many changes, a changed width, a file replaced)."""
    import numpy as np

    generations = cached_generations(directory, model)
    if not generations:
        return None
    generation = generations[0]
    log_end = read_log_end(directory, model, generation)
    found = read_matrix(directory, model, generation)
    if log_end is None or found is None:
        return None
    ids, base = found
    end, changed = store.embeddings.changes(model, log_end)
    if not changed or store.embeddings.pruned(model) > log_end:
        return None  # a change the log does not hold (or no longer holds): read whole
    if len(changed) > max(PATCH_MIN, REWRITE_SHARE * len(ids)):
        return None
    current = store.embeddings.vectors(model, changed)
    dim = int(base.shape[1])
    if any(len(blob) != 4 * dim for blob in current.values()):
        return None
    if read_log_end(directory, model, generation) != log_end:
        return None  # replaced while we read: the log behind it may be trimmed
    gone = set(changed)
    keep = np.fromiter((i not in gone for i in ids), dtype=bool, count=len(ids))
    added = [i for i in changed if i in current]
    rows = np.frombuffer(b"".join(current[i] for i in added), dtype=np.float32).reshape(-1, dim)
    matrix = np.concatenate([base[keep], rows])
    kept = tuple(i for i, k in zip(ids, keep, strict=True) if k)
    coarse = read_coarse(directory, model, generation, len(ids))
    if coarse is not None:
        basis, projected = coarse
        coarse = (basis, np.concatenate([projected[keep], rows @ basis]))
    return Loaded(kept + tuple(added), matrix, coarse, end)


def read_whole(store: VectorReads, model: str, generation: int, directory: Path | None) -> Loaded:
    """Every vector of ``model`` from the store; cached as a file beside the database
    when it is big enough (under the ``vectors:<model>`` claim; another process writing
    it already is left to it), and the change log trimmed to what the files need."""
    import numpy as np

    log_end = store.embeddings.log_end(model)  # before the read: later changes re-apply
    ids, blob, dim = store.embeddings.load(model)
    if ids and dim > 0:
        matrix = np.frombuffer(blob, dtype=np.float32).reshape(len(ids), dim)
    else:
        matrix = np.zeros((0, max(dim, 1)), dtype=np.float32)
    loaded = Loaded(tuple(ids), matrix, None, log_end)
    if directory is None:
        return loaded
    try:
        with store.claims.hold(f"vectors:{model}", "the vector matrix is being cached"):
            # a vector written since this read began makes it older than the log may
            # already be trimmed to (by a writer that read after it): keep it in memory
            if store.embeddings.log_end(model) == log_end:
                write_matrix(directory, model, generation, loaded.ids, matrix, log_end)
                _trim_log(store, model, directory, log_end)
    except (Busy, ReadOnly):  # another process caches it, or nobody can here
        pass
    return loaded


def write_files(store: VectorReads, model: str, directory: Path) -> bool:
    """Write ``model``'s matrix file for its current generation a page at a time, without
    loading the matrix (what ``memoir embed`` leaves for the next search; its memory stays
    flat in the matrix's size); False when there is nothing to write (a file of that
    generation exists, the matrix is too small to cache, another process caches it) or
    a vector was written meanwhile (the next search reads and caches it then)."""
    generation = store.embeddings.generation(model)
    if read_matrix(directory, model, generation) is not None:
        return False
    log_end = store.embeddings.log_end(model)  # before the read, as for read_whole
    count = store.embeddings.count(model)
    if count < matrix_file.FILE_MIN_ROWS or _patchable(store, model, directory, count):
        return False
    try:
        with store.claims.hold(f"vectors:{model}", "the vector matrix is being cached"):
            pages = store.embeddings.pages(model, PAGE_ROWS)
            if not matrix_file.write_matrix_pages(
                directory, model, generation, count, pages, log_end
            ):
                return False
            if store.embeddings.generation(model) != generation:
                return False  # the file is older than the vectors: patched from the log
            _trim_log(store, model, directory, log_end)
            return True
    except (Busy, ReadOnly):
        return False


def _patchable(store: VectorReads, model: str, directory: Path, count: int) -> bool:
    """Whether the newest file can be patched to the current vectors (few changes logged
    since it was written): the next search patches it, no new file is needed."""
    generations = cached_generations(directory, model)
    if not generations:
        return False
    log_end = read_log_end(directory, model, generations[0])
    if log_end is None:
        return False
    changed = store.embeddings.changes(model, log_end)[1]
    if store.embeddings.pruned(model) > log_end:
        return False
    return len(changed) <= max(PATCH_MIN, REWRITE_SHARE * count)


def _trim_log(store: VectorReads, model: str, directory: Path, log_end: int) -> None:
    """Drop the log entries no cached file needs: up to the oldest file's log end, or to
    this read's end when no file is kept (a small matrix)."""
    ends = [read_log_end(directory, model, g) for g in cached_generations(directory, model)]
    if not ends:
        store.embeddings.forget_changes(model, log_end)
    elif None not in ends:
        store.embeddings.forget_changes(model, min(e for e in ends if e is not None))
