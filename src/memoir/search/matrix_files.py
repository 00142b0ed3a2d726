"""The vector matrix on disk: files beside an SQLite database, and loading them into a process.

The vector matrix kept as files beside an SQLite database, memory-mapped when read.

Reading a million 384-d vectors out of SQLite takes seconds (7.2 s for 1.5 GB on the
development machine), and projecting them for the coarse first pass another 1.6 s; every
``memoir search`` process paid both. A matrix of at least :data:`FILE_MIN_ROWS` rows is
therefore also written to ``<home>/cache/vectors/``, in files named for the model and the
store's embedding generation (migration v6): the float32 rows (``.npy``, opened with
``mmap_mode="r"``, so the page cache serves later processes), the exchange ids in the same
order (``.ids``, one per line) and, for a matrix big enough to have one, its coarse index
(``.basis.npy``, ``.proj.npy``). Files are used only when their generation is the model's
current one and their shapes agree; anything else — another generation, a half-written
set, an unreadable file — is ignored (and replaced on the next load from the database).
Writing is best effort: a cache that cannot be written costs speed, never results. Files
of the model's other generations, and temporary files a crashed writer left, are removed
when a new one is written.

Loading a model's vector matrix into a process: patched from a cached file, or whole.

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

import hashlib
import logging
import os
import re
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, BinaryIO

from memoir.errors import Busy, ReadOnly
from memoir.home_files import private_dir, temp_for, write_atomic, write_text_atomic
from memoir.search.request import VectorReads

if TYPE_CHECKING:
    import numpy as np

__all__ = [
    "FILE_MIN_ROWS",
    "PAGE_ROWS",
    "REWRITE_SHARE",
    "Loaded",
    "cached_generations",
    "patched",
    "read_coarse",
    "read_log_end",
    "read_matrix",
    "read_whole",
    "write_coarse",
    "write_files",
    "write_matrix",
    "write_matrix_pages",
]


log = logging.getLogger(__name__)


FILE_MIN_ROWS = 20_000


_UNSAFE = re.compile(r"[^A-Za-z0-9._-]+")


_PARTS = ("npy", "ids", "basis.npy", "proj.npy", "log")


def _stem(model: str) -> str:
    """A file-safe name for ``model``: readable, and told apart by a hash of the exact
    name ("org/m" and "org_m" would otherwise share files — and generation numbers)."""
    digest = hashlib.blake2b(model.encode(), digest_size=4).hexdigest()
    return f"{_UNSAFE.sub('_', model) or 'model'}-{digest}"


def _legacy_stem(model: str) -> str:
    return _UNSAFE.sub("_", model) or "model"


def _path(directory: Path, model: str, generation: int, part: str) -> Path:
    return directory / f"{_stem(model)}-g{generation}.{part}"


def _load(path: Path) -> np.ndarray | None:
    import numpy as np

    try:
        array = np.load(path, mmap_mode="r", allow_pickle=False)
    except (OSError, ValueError) as exc:
        log.debug("vector cache %s unreadable: %s", path, exc)
        return None
    return array if array.ndim == 2 and array.dtype == np.float32 else None


def _save(path: Path, array: np.ndarray) -> None:
    import numpy as np

    rows = np.ascontiguousarray(array, dtype=np.float32)
    write_atomic(path, lambda out: np.save(out, rows, allow_pickle=False))


def read_matrix(
    directory: Path, model: str, generation: int
) -> tuple[tuple[str, ...], np.ndarray] | None:
    """The cached ids and (memory-mapped) rows of ``model`` at ``generation``, or None."""
    rows_path = _path(directory, model, generation, "npy")
    ids_path = _path(directory, model, generation, "ids")
    if not rows_path.is_file() or not ids_path.is_file():
        return None
    matrix = _load(rows_path)
    try:
        text = ids_path.read_text(encoding="utf-8")
    except (OSError, ValueError):
        return None
    ids = tuple(text.split("\n")) if text else ()
    if matrix is None or matrix.shape[0] != len(ids):
        return None
    return ids, matrix


def cached_generations(directory: Path, model: str) -> list[int]:
    """The generations of ``model`` that have a matrix file here, newest first."""
    found = re.compile(re.escape(_stem(model)) + r"-g(\d+)\.npy")
    try:
        names = [found.fullmatch(p.name) for p in directory.iterdir()]
    except OSError:
        return []
    return sorted((int(m.group(1)) for m in names if m is not None), reverse=True)


def read_log_end(directory: Path, model: str, generation: int) -> int | None:
    """Where the store's change log ended when this generation's file was read (None: not
    recorded, so the file cannot be patched, only replaced)."""
    try:
        text = _path(directory, model, generation, "log").read_text(encoding="utf-8")
        return int(text.strip())
    except (OSError, ValueError):
        return None


def write_matrix(
    directory: Path,
    model: str,
    generation: int,
    ids: tuple[str, ...],
    matrix: np.ndarray,
    log_end: int | None = None,
) -> None:
    """Cache ``ids`` and ``matrix`` for ``model`` at ``generation`` (atomic renames), with
    where the store's change log ended when they were read, and remove the files of its
    other generations."""
    if len(ids) < FILE_MIN_ROWS or any("\n" in i for i in ids):
        return
    ids_path = _path(directory, model, generation, "ids")
    try:
        private_dir(directory)
        write_text_atomic(ids_path, "\n".join(ids))
        _save(_path(directory, model, generation, "npy"), matrix)
        _finish(directory, model, generation, log_end)
    except OSError as exc:
        log.warning("could not cache the vector matrix in %s: %s", directory, exc)


def write_matrix_pages(
    directory: Path,
    model: str,
    generation: int,
    count: int,
    pages: Iterable[tuple[list[str], bytes, int]],
    log_end: int | None = None,
) -> bool:
    """:func:`write_matrix` for a matrix of ``count`` rows read a page at a time (ids,
    float32 rows end to end, dim): memory stays one page whatever the matrix's size.
    Nothing is published (False) when the pages do not add up to ``count`` rows of one
    width, or an id holds a line break."""
    import numpy as np

    if count < FILE_MIN_ROWS:
        return False
    rows_path = _path(directory, model, generation, "npy")
    ids_path = _path(directory, model, generation, "ids")
    rows_tmp, ids_tmp = temp_for(rows_path), temp_for(ids_path)
    try:
        private_dir(directory)
        written, width = 0, 0
        with _private_open(rows_tmp) as rows_out, _private_open(ids_tmp) as ids_out:
            for ids, blob, dim in pages:
                if not ids:
                    continue
                if written == 0:
                    width = dim
                    header = {"descr": "<f4", "fortran_order": False, "shape": (count, dim)}
                    np.lib.format.write_array_header_1_0(rows_out, header)
                if dim != width or len(blob) != 4 * dim * len(ids) or written + len(ids) > count:
                    break
                if any("\n" in i for i in ids):
                    break
                rows_out.write(blob)
                ids_out.write((b"\n" if written else b"") + "\n".join(ids).encode("utf-8"))
                written += len(ids)
        if written != count:
            rows_tmp.unlink(missing_ok=True)
            ids_tmp.unlink(missing_ok=True)
            return False
        os.replace(ids_tmp, ids_path)
        os.replace(rows_tmp, rows_path)
        _finish(directory, model, generation, log_end)
        return True
    except OSError as exc:
        rows_tmp.unlink(missing_ok=True)
        ids_tmp.unlink(missing_ok=True)
        log.warning("could not cache the vector matrix in %s: %s", directory, exc)
        return False


def _private_open(path: Path) -> BinaryIO:
    return os.fdopen(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600), "wb")


def _finish(directory: Path, model: str, generation: int, log_end: int | None) -> None:
    """Record where the log ended for a matrix just written, and remove the files of the
    model's other generations (and what crashed writers left)."""
    log_path = _path(directory, model, generation, "log")
    if log_end is not None:
        write_text_atomic(log_path, str(log_end))
    else:
        log_path.unlink(missing_ok=True)
    parts = "|".join(re.escape(p) for p in _PARTS)
    # temp files are ".<name>.<pid>.tmp" (memoir.home_files); before, "<name>.<pid>.tmp"
    mine = re.compile(r"\.?" + re.escape(_stem(model)) + r"-g(\d+)\.(" + parts + r")(\.\d+\.tmp)?")
    legacy = re.compile(re.escape(_legacy_stem(model)) + r"-g\d+\.(" + parts + r")")
    for old in directory.iterdir():
        found = mine.fullmatch(old.name)
        # other generations, and what a crashed (or concurrent: it then skips its
        # cache) writer left half-done; and this model's files named before the hash
        stale = found is not None and (int(found.group(1)) != generation or found.group(3))
        if stale or legacy.fullmatch(old.name):
            old.unlink(missing_ok=True)


def read_coarse(
    directory: Path, model: str, generation: int, rows: int
) -> tuple[np.ndarray, np.ndarray] | None:
    """The cached coarse index (basis, projected rows) of a ``rows``-row matrix, or None."""
    import numpy as np

    basis_path = _path(directory, model, generation, "basis.npy")
    projected_path = _path(directory, model, generation, "proj.npy")
    if not basis_path.is_file() or not projected_path.is_file():
        return None
    basis, projected = _load(basis_path), _load(projected_path)
    if basis is None or projected is None:
        return None
    if projected.shape != (rows, basis.shape[1]):
        return None
    return np.asarray(basis), projected


def write_coarse(
    directory: Path, model: str, generation: int, basis: np.ndarray, projected: np.ndarray
) -> None:
    """Cache a matrix's coarse index beside it (only where the matrix itself is cached)."""
    if not _path(directory, model, generation, "npy").is_file():
        return
    try:
        _save(_path(directory, model, generation, "basis.npy"), basis)
        _save(_path(directory, model, generation, "proj.npy"), projected)
    except OSError as exc:
        log.warning("could not cache the coarse index in %s: %s", directory, exc)


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
    if count < FILE_MIN_ROWS or _patchable(store, model, directory, count):
        return False
    try:
        with store.claims.hold(f"vectors:{model}", "the vector matrix is being cached"):
            pages = store.embeddings.pages(model, PAGE_ROWS)
            if not write_matrix_pages(directory, model, generation, count, pages, log_end):
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
