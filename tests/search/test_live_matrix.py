"""A replica's matrix learns of another handle's vector writes from the change log: the
changed rows alone are read and patched in place (both backends), and a replica the log
was pruned past reads whole. Plus the patch itself, row by row, as a table."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import ExitStack
from pathlib import Path

import numpy as np
import pytest
from search_corpus import fill

from memoir.search import vectors
from memoir.search.live_matrix import LiveMatrix
from memoir.search.matrix_files import read_whole
from memoir.store import Store
from memoir.store.parts import index as embeddings_part

DIM = 8


def _vec(seed: int) -> bytes:
    v = np.random.default_rng(seed).normal(size=DIM).astype(np.float32)
    return (v / np.linalg.norm(v)).tobytes()


def _live_rows(matrix: vectors.VectorMatrix) -> dict[str, bytes]:
    """What a snapshot scores: id → row, dead rows left out."""
    alive = matrix.alive
    return {
        str(xid): np.asarray(matrix.matrix[n]).tobytes()
        for n, xid in enumerate(matrix.ids)
        if alive is None or alive[n]
    }


# --- the patch, as a table ----------------------------------------------------------------
START = {"s:1": 1, "s:2": 2, "t:1": 3}


@pytest.mark.parametrize(
    ("changed", "current", "expected"),
    [
        (["s:2"], {"s:2": 20}, {"s:1": 1, "s:2": 20, "t:1": 3}),  # re-embedded: in place
        (["u:1"], {"u:1": 4}, {**START, "u:1": 4}),  # new: appended
        (["s:1"], {}, {"s:2": 2, "t:1": 3}),  # removed: a tombstone
        (["zz:9"], {}, START),  # removed, never held: nothing
        (["s:1", "s:1"], {"s:1": 10}, {"s:1": 10, "s:2": 2, "t:1": 3}),  # logged twice
        (["t:1", "u:1"], {"u:1": 4}, {"s:1": 1, "s:2": 2, "u:1": 4}),  # both at once
        (["s:2"], {"s:2": 2}, START),  # a change already held: harmless
    ],
)
def test_a_patch_brings_the_rows_to_what_is_stored(
    changed: list[str], current: dict[str, int], expected: dict[str, int]
) -> None:
    rows = np.frombuffer(b"".join(_vec(s) for s in START.values()), np.float32).reshape(3, DIM)
    live = LiveMatrix(tuple(START), rows, 1, 0)  # read-only rows, as a file or a read gives
    live.patch(changed, {x: _vec(s) for x, s in current.items()})
    snapshot = vectors._snapshot(live)
    assert _live_rows(snapshot) == {x: _vec(s) for x, s in expected.items()}
    assert set(snapshot.index or {}) == set(expected)
    mask = snapshot.session_mask(["s", "u"])  # dead rows are in no session
    assert {str(snapshot.ids[n]) for n in np.flatnonzero(mask)} == {
        x for x in expected if x[0] in "su"
    }
    query = np.frombuffer(_vec(START["s:1"]), np.float32)
    found = [str(snapshot.ids[i]) for i, _ in vectors.nearest(snapshot, query, 10)]
    assert sorted(found) == sorted(expected)  # every live row, no dead one


def test_appends_grow_the_buffers_by_doubling_and_squeeze_dead_rows() -> None:
    ids = [f"s{n}:1" for n in range(2000)]
    rows = np.frombuffer(b"".join(_vec(n) for n in range(2000)), np.float32).reshape(-1, DIM)
    live = LiveMatrix(ids, rows, 1, 0)
    buffers = set()
    for n in range(2000, 6000):  # 4,000 appends one at a time
        live.patch([f"s{n}:1"], {f"s{n}:1": _vec(n)})
        buffers.add(id(live._rows))
    assert live.n == 6000 and len(buffers) <= 3  # 2,000 → 4,000 → 8,000: not per append
    assert live._rows.shape[0] == 8000
    snapshot = vectors._snapshot(live)
    assert snapshot.index is not None and snapshot.index["s5999:1"] == 5999
    # dead rows stay as tombstones until they are a quarter of the rows, then squeezed
    live.patch([f"s{n}:1" for n in range(1000)], {})
    assert live.n == 6000 and live.dead == 1000
    live.patch([f"s{n}:1" for n in range(1000, 1600)], {})
    assert live.n == 4400 and live.dead == 0
    after = vectors._snapshot(live)
    assert after.alive is None and after.index is not None
    assert [str(after.ids[after.index[x]]) for x in ("s1600:1", "s5999:1")] == [
        "s1600:1",
        "s5999:1",
    ]
    assert np.asarray(after.matrix[after.index["s5999:1"]]).tobytes() == _vec(5999)


# --- two handles on one database ----------------------------------------------------------
@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def handles(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[tuple[Store, Store]]:
    """Two stores on one database (two replicas' handles): A writes, B searches."""
    with ExitStack() as stack:
        if request.param == "sqlite":
            from memoir.store.sqlite_store import SQLiteStore

            made = [SQLiteStore(tmp_path / "one.db") for _ in range(2)]
        else:
            from conftest import fresh_pg_schema
            from memoir.store.postgres_store import PostgresStore

            url = stack.enter_context(fresh_pg_schema())
            made = [PostgresStore(url) for _ in range(2)]
        for store in made:
            stack.callback(store.close)
        vectors.invalidate()
        yield made[0], made[1]
        vectors.invalidate()


def _whole(store: Store) -> dict[str, bytes]:
    whole = read_whole(store, "m", 0, None)
    return {x: np.asarray(r).tobytes() for x, r in zip(whole.ids, whole.matrix, strict=True)}


def _nearest(store: Store, seed: int) -> list[str]:
    matrix = vectors.matrix_for(store, "m")
    query = np.frombuffer(_vec(seed), np.float32)
    return [str(matrix.ids[i]) for i, _ in vectors.nearest(matrix, query, 3)]


def test_another_handles_writes_are_patched_in_reading_only_what_changed(
    handles: tuple[Store, Store], monkeypatch: pytest.MonkeyPatch
) -> None:
    a, b = handles
    fill(a)
    ids = [x for x, _ in a.embeddings.backlog("m", 100)]
    a.embeddings.put("m", [(x, _vec(n)) for n, x in enumerate(ids)], DIM)
    assert _nearest(b, 3)[0] == ids[3]  # B reads whole once, and caches
    reads: list[str] = []
    real_load, real_vectors = b.embeddings.load, b.embeddings.vectors
    monkeypatch.setattr(b.embeddings, "load", lambda m: reads.append("whole") or real_load(m))

    def by_id(model: str, wanted: list[str]) -> dict[str, bytes]:
        reads.extend(wanted)
        return real_vectors(model, wanted)

    monkeypatch.setattr(b.embeddings, "vectors", by_id)
    gone = [x for x in ids if x.startswith("s-api:")]
    assert gone
    a.embeddings.put("m", [(ids[0], _vec(100))], DIM)  # re-embedded
    a.sessions.delete("s-api")  # removed (the vectors go with the exchanges)
    a.embeddings.put("m", [(ids[3], _vec(3))], DIM)  # rewritten the same: no rank change
    # B's next search: the new vector ranks its exchange first, the removed are never found
    assert _nearest(b, 100)[0] == ids[0]
    assert not set(_nearest(b, ids.index(gone[0]))) & set(gone)
    assert sorted(reads) == sorted({ids[0], ids[3], *gone})  # the changed rows, no more
    assert _live_rows(vectors.matrix_for(b, "m")) == _whole(a)
    # a row written back after it was removed, and one more new row
    reads.clear()
    a.embeddings.put("m", [(gone[0], _vec(200))], DIM)  # its exchange is gone: not stored
    a.embeddings.put("m", [(ids[1], _vec(201))], DIM)
    assert _nearest(b, 201)[0] == ids[1]
    assert reads == [ids[1]]
    assert _live_rows(vectors.matrix_for(b, "m")) == _whole(a)


def test_a_replica_the_log_was_pruned_past_reads_whole(
    handles: tuple[Store, Store], monkeypatch: pytest.MonkeyPatch
) -> None:
    a, b = handles
    fill(a)
    ids = [x for x, _ in a.embeddings.backlog("m", 100)]
    a.embeddings.put("m", [(x, _vec(n)) for n, x in enumerate(ids)], DIM)
    vectors.matrix_for(b, "m")
    read_at = vectors._cache[(id(b), "m")].log_end
    assert read_at is not None
    monkeypatch.setattr(embeddings_part, "LOG_KEEP", 2)  # keep the newest 2 numbers
    wholes: list[str] = []
    real_load = b.embeddings.load
    monkeypatch.setattr(b.embeddings, "load", lambda m: wholes.append(m) or real_load(m))
    for n, x in enumerate(ids[:5]):  # five writes: the log passes 2 × 2 and is pruned
        a.embeddings.put("m", [(x, _vec(300 + n))], DIM)
    end, pruned = a.embeddings.log_end("m"), a.embeddings.pruned("m")
    assert read_at < pruned < end and end - pruned <= 2 * 2  # what B read at is gone
    assert len(a.embeddings.changes("m", 0)[1]) <= 4
    assert _nearest(b, 300)[0] == ids[0]
    assert wholes == ["m"]  # too far behind: read whole, not patched from a partial log
    assert _live_rows(vectors.matrix_for(b, "m")) == _whole(a)
    # and from there it patches again
    a.embeddings.put("m", [(ids[-1], _vec(400))], DIM)
    assert _nearest(b, 400)[0] == ids[-1]
    assert wholes == ["m"]


def test_the_coarse_projection_is_kept_and_patched_with_the_matrix(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Above COARSE_MIN rows the projection is built once per live matrix, however many
    stores' matrices take turns, and a patch projects only the rows it writes."""
    monkeypatch.setattr(vectors, "COARSE_MIN", 100)
    built: list[int] = []
    real_build = vectors.build_coarse

    def counting(matrix: np.ndarray) -> object:
        built.append(matrix.shape[0])
        return real_build(matrix)

    monkeypatch.setattr(vectors, "build_coarse", counting)

    def live_of(seed: int) -> LiveMatrix:
        ids = [f"s{n % 9}:{n}" for n in range(500)]
        blob = b"".join(_vec(seed * 1000 + n) for n in range(500))
        return LiveMatrix(ids, np.frombuffer(blob, np.float32).reshape(-1, DIM), 1, 0)

    first, second = live_of(1), live_of(2)
    query = np.frombuffer(_vec(1007), np.float32)
    held = [vectors._snapshot(first), vectors._snapshot(second)]  # as matrix_for keeps them
    for snapshot in (*held, *held):  # each build clears the other's entry
        vectors.nearest(snapshot, query, 3)
    assert built == [500, 500]
    fresh = np.frombuffer(_vec(5555), np.float32)
    first.patch(["new:1"], {"new:1": _vec(5555)})  # the next query itself, appended
    snapshot = vectors._snapshot(first)
    got = vectors.nearest(snapshot, fresh, 3)
    assert str(snapshot.ids[got[0][0]]) == "new:1" and built == [500, 500]
    assert first.projected is not None and first.projected.shape[0] == 501
    expected = fresh @ first.basis
    assert np.allclose(first.projected[500], expected)
