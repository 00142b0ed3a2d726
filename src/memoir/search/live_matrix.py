"""A model's vector matrix held by one process and patched in place from the change log.

A replica reads the model's generation on every search (migration v6). When it moved, the
replica asks the store's change log (v7, v23) which exchanges' vectors were written or
removed since its matrix was read, reads only those rows, and patches its matrix: a
re-embedded row is overwritten where it is, a new one appended, a removed one marked dead
(a tombstone). The cost of a patch is the change's, not the matrix's:

- every per-row array (the rows, the exchange ids, the session codes, the times a date
  filter reads, the coarse projection) is a buffer with spare capacity that doubles when
  full, so an append copies nothing but what it adds (amortized);
- the id → row index and the session codes are updated for the changed rows only;
- dead rows are left out of every scan by a per-row ``alive`` flag, and squeezed out (one
  copy of the live rows) only once they are a quarter of the matrix.

A search takes a :class:`~memoir.search.vectors.VectorMatrix` snapshot: views of the
first ``n`` rows of these buffers. A later patch appends past ``n`` and overwrites changed
rows, so a search running meanwhile sees each row either before or after its change.
The unused tail of a buffer is allocated but never written, so its pages are not
resident until rows land there. A matrix read from a memory-mapped file is copied into
its own buffer at its first patch (once per process).

The whole read remains the fallback: no log position (a matrix file without one), a log
pruned past the position (the replica was too far behind), or more than
:data:`PATCH_SHARE` of the rows changed.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator, Mapping, Sequence
from datetime import datetime
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import numpy as np

__all__ = ["PATCH_MIN", "PATCH_SHARE", "LiveMatrix", "RowIds"]

# past this share of the rows changed, the matrix is read whole instead of patched
PATCH_SHARE = 0.25
PATCH_MIN = 1_000  # ... but a patch of this many rows is always applied
DEAD_SHARE = 0.25  # tombstones beyond this share of the rows are squeezed out
_MIN_CAPACITY = 1_024


class RowIds(Sequence[str]):
    """The exchange ids of a snapshot's rows: a view of the live id buffer (no copy per
    search), compared as a sequence of strings."""

    __slots__ = ("_array",)
    __hash__ = None  # type: ignore[assignment]

    def __init__(self, array: np.ndarray) -> None:
        self._array = array

    def __len__(self) -> int:
        return int(self._array.shape[0])

    def __getitem__(self, index: Any) -> Any:
        if isinstance(index, slice):
            return tuple(self._array[index])
        return self._array[index]

    def __iter__(self) -> Iterator[str]:
        return iter(self._array)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Sequence) or len(other) != len(self):
            return False
        return all(a == b for a, b in zip(self, other, strict=True))

    def __repr__(self) -> str:
        return f"RowIds({len(self)} rows)"


class LiveMatrix:
    """The patchable matrix of one (store, model) in this process. ``lock`` serializes
    patches (searches read snapshots without it)."""

    def __init__(
        self,
        ids: Sequence[str],
        matrix: np.ndarray,
        generation: int,
        log_end: int | None,
        coarse: tuple[np.ndarray, np.ndarray] | None = None,
    ) -> None:
        import numpy as np

        n = len(ids)
        self.lock = threading.Lock()
        self.generation = generation
        self.log_end = log_end
        self.dim = int(matrix.shape[1]) if matrix.ndim == 2 else 1
        self.n = n
        self.dead = 0
        self._rows = matrix  # read-only (memmap, frombuffer) until the first patch
        self._ids = np.empty(n, dtype=object)
        self._ids[:] = list(ids)
        self._alive = np.ones(n, dtype=bool)
        self.index: dict[str, int] = {xid: row for row, xid in enumerate(ids)}
        self.sessions: dict[str, int] = {}
        self._codes = np.fromiter(
            (self.sessions.setdefault(xid.rpartition(":")[0], len(self.sessions)) for xid in ids),
            dtype=np.int32,
            count=n,
        )
        self._seconds: np.ndarray | None = None  # when each row's exchange happened
        self.basis: np.ndarray | None = None
        self._projected: np.ndarray | None = None
        self.snapshot: Any = None  # the last VectorMatrix taken, while nothing changed
        if coarse is not None:
            self.basis, self._projected = coarse

    # what a snapshot reads --------------------------------------------------------------
    @property
    def rows(self) -> np.ndarray:
        return self._rows[: self.n]

    @property
    def ids(self) -> RowIds:
        return RowIds(self._ids[: self.n])

    @property
    def codes(self) -> np.ndarray:
        return self._codes[: self.n]

    @property
    def alive(self) -> np.ndarray | None:
        """Per row: does its vector still exist (None while every row does)."""
        return self._alive[: self.n] if self.dead else None

    @property
    def projected(self) -> np.ndarray | None:
        return None if self._projected is None else self._projected[: self.n]

    def set_coarse(self, basis: np.ndarray, projected: np.ndarray) -> None:
        """Keep a coarse index built for the current rows (patched from then on)."""
        self.basis = basis
        capacity = self._rows.shape[0]
        same = projected.shape[0] == capacity  # (a mapped file's: kept mapped until patched)
        self._projected = projected if same else _grown(projected, capacity, self.n)

    def seconds(self, times: Sequence[tuple[str, datetime | None]]) -> np.ndarray:
        """Per row, when its exchange happened (NaN: unknown), built once from ``times``
        (every row's) and patched from then on."""
        import numpy as np

        if self._seconds is None:
            seconds = np.full(len(self._ids), np.nan)
            self._place_times(seconds, times)
            self._seconds = seconds
        return self._seconds[: self.n]

    @property
    def wants_times(self) -> bool:
        return self._seconds is not None

    # patching ---------------------------------------------------------------------------
    def patch(
        self,
        changed: Sequence[str],
        current: Mapping[str, bytes],
        times: Sequence[tuple[str, datetime | None]] = (),
    ) -> None:
        """Bring the rows of ``changed`` to ``current`` (their vectors now; an id missing
        from it has none any more). Idempotent: a change already in the rows is harmless."""
        import numpy as np

        over_rows: list[int] = []
        over_vecs: list[bytes] = []
        added: list[str] = []
        for xid in dict.fromkeys(changed):
            vec, row = current.get(xid), self.index.get(xid)
            if vec is None:
                if row is not None:  # removed: a tombstone
                    del self.index[xid]
                    self._alive[row] = False
                    self.dead += 1
            elif row is not None:
                over_rows.append(row)
                over_vecs.append(vec)
            else:
                added.append(xid)
        if over_rows:
            self._own()
            fresh = np.frombuffer(b"".join(over_vecs), dtype=np.float32).reshape(-1, self.dim)
            self._rows[over_rows] = fresh
            if self._projected is not None and self.basis is not None:
                self._projected[over_rows] = fresh @ self.basis
        if added:
            self._append(added, [current[x] for x in added])
        if times and self._seconds is not None:
            self._place_times(self._seconds, times)
        if self.dead > max(_MIN_CAPACITY, DEAD_SHARE * self.n):
            self._squeeze()

    def _append(self, ids: list[str], vecs: list[bytes]) -> None:
        import numpy as np

        start, k = self.n, len(ids)
        self._reserve(start + k)
        self._own()
        fresh = np.frombuffer(b"".join(vecs), dtype=np.float32).reshape(k, self.dim)
        self._rows[start : start + k] = fresh
        if self._projected is not None and self.basis is not None:
            self._projected[start : start + k] = fresh @ self.basis
        self._ids[start : start + k] = ids
        self._alive[start : start + k] = True
        self._codes[start : start + k] = [
            self.sessions.setdefault(x.rpartition(":")[0], len(self.sessions)) for x in ids
        ]
        if self._seconds is not None:
            self._seconds[start : start + k] = np.nan  # placed by the patch's times
        self.index.update((x, start + j) for j, x in enumerate(ids))
        self.n = start + k  # published last: a snapshot taken before never sees the rows

    def _own(self) -> None:
        """Make the buffers this process's own (writable) before changing rows in place."""
        projected = self._projected
        if not self._rows.flags.writeable or (
            projected is not None and not projected.flags.writeable
        ):
            self._reserve(self.n, force=True)

    def _reserve(self, needed: int, *, force: bool = False) -> None:
        """Room for ``needed`` rows in every per-row buffer: doubled when full."""
        capacity = self._rows.shape[0]
        if needed <= capacity and not force:
            return
        size = max(needed, _MIN_CAPACITY, 2 * capacity if needed > capacity else capacity)
        self._rows = _grown(self._rows, size, self.n)
        self._ids = _grown(self._ids, size, self.n)
        self._alive = _grown(self._alive, size, self.n)
        self._codes = _grown(self._codes, size, self.n)
        if self._seconds is not None:
            self._seconds = _grown(self._seconds, size, self.n)
        if self._projected is not None:
            self._projected = _grown(self._projected, size, self.n)

    def _squeeze(self) -> None:
        """Drop the dead rows (one copy of the live ones) and renumber the index."""
        import numpy as np

        keep = np.flatnonzero(self._alive[: self.n])
        self._rows = np.ascontiguousarray(self._rows[keep])
        self._ids = self._ids[keep]
        self._alive = np.ones(len(keep), dtype=bool)
        self._codes = self._codes[keep]
        if self._seconds is not None:
            self._seconds = self._seconds[keep]
        if self._projected is not None:
            self._projected = np.ascontiguousarray(self._projected[keep])
        self.n, self.dead = len(keep), 0
        self.index = {str(xid): row for row, xid in enumerate(self._ids)}

    def _place_times(
        self, seconds: np.ndarray, times: Sequence[tuple[str, datetime | None]]
    ) -> None:
        for xid, when in times:
            row = self.index.get(xid)
            if row is not None:
                seconds[row] = float("nan") if when is None else when.timestamp()


def _grown(array: Any, size: int, used: int) -> Any:
    """A new buffer of ``size`` rows holding ``array``'s first ``used`` rows (the rest
    left unwritten: not resident until used)."""
    import numpy as np

    out = np.empty((size, *array.shape[1:]), dtype=array.dtype)
    out[:used] = array[:used]
    return out
