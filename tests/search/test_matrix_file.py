"""The vector matrix cached as a file, and matrix_for's freshness by embedding generation."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from search_corpus import fill

from memoir.config import Settings
from memoir.search import HashEmbedder, embed_backlog, vectors
from memoir.search import matrix_files as mf
from memoir.store import Store, open_store


@pytest.fixture
def filled(store: Store) -> Store:
    fill(store)
    vectors.invalidate()
    return store


@pytest.fixture
def small_files(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(mf, "FILE_MIN_ROWS", 1)


def _rows(n: int, dim: int = 4) -> np.ndarray:
    return np.arange(n * dim, dtype=np.float32).reshape(n, dim)


def test_a_written_matrix_reads_back_memory_mapped(tmp_path: Path, small_files: None) -> None:
    ids = ("s:1", "s:3", "t:1")
    mf.write_matrix(tmp_path, "all-MiniLM/int8", 7, ids, _rows(3))
    got = mf.read_matrix(tmp_path, "all-MiniLM/int8", 7)
    assert got is not None
    assert got[0] == ids and isinstance(got[1], np.memmap)
    assert np.array_equal(got[1], _rows(3))
    assert mf.read_matrix(tmp_path, "all-MiniLM/int8", 8) is None  # another generation
    assert mf.read_matrix(tmp_path, "other", 7) is None


def test_a_newer_generation_replaces_only_its_models_files(
    tmp_path: Path, small_files: None
) -> None:
    cache = tmp_path / "cache"
    cache.mkdir()
    m, alike = mf._stem("m"), mf._stem("m-g2")
    (cache / f"{m}-g1.npy.4242.tmp").write_bytes(b"half")  # a crashed writer's leftover
    (cache / "m-g0.npy").write_bytes(b"old")  # named before stems carried a hash
    mf.write_matrix(cache, "m", 1, ("a:1",), _rows(1))
    mf.write_matrix(cache, "m-g2", 1, ("b:1",), _rows(1))  # a name that looks alike
    mf.write_matrix(cache, "m", 2, ("a:1", "a:3"), _rows(2))
    assert sorted(p.name for p in cache.iterdir()) == sorted(
        [f"{alike}-g1.ids", f"{alike}-g1.npy", f"{m}-g2.ids", f"{m}-g2.npy"]
    )
    assert mf.read_matrix(cache, "m", 1) is None
    assert mf.read_matrix(cache, "m-g2", 1) is not None


def test_models_whose_names_look_alike_never_share_files(tmp_path: Path, small_files: None) -> None:
    mf.write_matrix(tmp_path, "org/m", 100, ("a:1",), _rows(1))
    mf.write_matrix(tmp_path, "org_m", 100, ("b:1", "b:2"), _rows(2))
    found = mf.read_matrix(tmp_path, "org/m", 100)
    assert found is not None and found[0] == ("a:1",)
    other = mf.read_matrix(tmp_path, "org_m", 100)
    assert other is not None and other[0] == ("b:1", "b:2")


@pytest.mark.parametrize("damage", ["no ids", "no rows", "count", "garbage", "dtype"])
def test_a_damaged_cache_is_ignored(tmp_path: Path, small_files: None, damage: str) -> None:
    mf.write_matrix(tmp_path, "m", 3, ("a:1", "a:3"), _rows(2))
    rows, ids = tmp_path / f"{mf._stem('m')}-g3.npy", tmp_path / f"{mf._stem('m')}-g3.ids"
    if damage == "no ids":
        ids.unlink()
    elif damage == "no rows":
        rows.unlink()
    elif damage == "count":
        ids.write_text("a:1", encoding="utf-8")
    elif damage == "garbage":
        rows.write_bytes(b"not an array")
    else:
        np.save(rows, _rows(2).astype(np.float64))
    assert mf.read_matrix(tmp_path, "m", 3) is None


def test_small_matrices_and_unwritable_places_are_not_cached(tmp_path: Path) -> None:
    mf.write_matrix(tmp_path / "cache", "m", 1, ("a:1",), _rows(1))  # under FILE_MIN_ROWS
    assert not (tmp_path / "cache").exists()


def test_an_unwritable_cache_costs_nothing_but_speed(tmp_path: Path, small_files: None) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("x", encoding="utf-8")
    mf.write_matrix(blocker / "sub", "m", 1, ("a:1",), _rows(1))  # cannot mkdir: no raise
    assert mf.read_matrix(blocker / "sub", "m", 1) is None


def test_matrix_for_follows_the_generation_not_a_clock(filled: Store) -> None:
    embedder = HashEmbedder(dim=16)
    embed_backlog(filled, embedder, max_items=3)
    first = vectors.matrix_for(filled, embedder.name)
    assert first.size == 3 and first.generation == filled.embeddings.generation(embedder.name)
    assert vectors.matrix_for(filled, embedder.name) is first  # unchanged: kept
    # another process embeds the rest: no invalidate() here, the generation tells
    backlog = filled.embeddings.backlog(embedder.name, 10)
    rest = [(x, embedder.embed([t])[0].astype(np.float32).tobytes()) for x, t in backlog]
    filled.embeddings.put(embedder.name, rest, 16)
    second = vectors.matrix_for(filled, embedder.name)
    assert second is not first and second.size == 3 + len(rest)


def test_a_new_process_reads_the_cached_file(settings: Settings, small_files: None) -> None:
    filled = open_store(settings)  # SQLite: the backend that keeps files beside itself
    fill(filled)
    vectors.invalidate()
    assert filled.cache_dir is not None
    embedder = HashEmbedder(dim=16)
    embed_backlog(filled, embedder)
    from_store = vectors.matrix_for(filled, embedder.name)
    assert not isinstance(from_store.matrix, np.memmap)
    vectors.invalidate()  # what a new process starts with
    from_file = vectors.matrix_for(filled, embedder.name)
    assert isinstance(from_file.matrix, np.memmap)
    assert from_file.ids == from_store.ids
    assert np.array_equal(from_file.matrix, from_store.matrix)
    written = filled.embeddings.generation(embedder.name)
    filled.sessions.delete("s-api")  # the generation moves on: the file is patched
    vectors.invalidate()
    fresh = vectors.matrix_for(filled, embedder.name)
    assert not isinstance(fresh.matrix, np.memmap) and fresh.size == from_store.size - 1
    assert fresh.generation == filled.embeddings.generation(embedder.name) > written
    names = sorted(p.name for p in filled.cache_dir.iterdir())
    stem = mf._stem("hash-16")
    assert names == [f"{stem}-g{written}.{part}" for part in ("ids", "log", "npy")]
    filled.close()


def test_postgres_keeps_no_files(store: Store, small_files: None) -> None:
    assert (store.cache_dir is None) is (store.backend == "postgres")
    fill(store)
    embedder = HashEmbedder(dim=16)
    embed_backlog(store, embedder)
    assert vectors.prepare_files(store, embedder.name) is (store.backend == "sqlite")
    if store.cache_dir is not None:  # `memoir embed` leaves the files for the next search
        generation = store.embeddings.generation(embedder.name)
        assert mf.read_matrix(store.cache_dir, embedder.name, generation) is not None


def test_the_coarse_index_is_cached_beside_the_matrix(
    settings: Settings, small_files: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(vectors, "COARSE_MIN", 2)  # every matrix is "big"
    filled = open_store(settings)
    fill(filled)
    vectors.invalidate()
    embedder = HashEmbedder(dim=16)
    embed_backlog(filled, embedder)
    built = vectors.matrix_for(filled, embedder.name)
    assert filled.cache_dir is not None
    generation = built.generation
    names = {p.name for p in filled.cache_dir.iterdir()}
    stem = mf._stem("hash-16")
    assert {f"{stem}-g{generation}.basis.npy", f"{stem}-g{generation}.proj.npy"} <= names
    vectors.invalidate()
    again = vectors.matrix_for(filled, embedder.name)
    coarse = vectors._coarse[id(again)]
    assert isinstance(coarse.projected, np.memmap)  # read, not rebuilt
    query = np.asarray(again.matrix[4])
    exact = vectors.top_k(np.asarray(again.matrix), query, 3)
    assert [i for i, _ in vectors.nearest(again, query, 3)] == [i for i, _ in exact]
    filled.close()


def test_a_coarse_index_of_another_shape_is_ignored(tmp_path: Path, small_files: None) -> None:
    mf.write_matrix(tmp_path, "m", 1, ("a:1", "a:3"), _rows(2))
    mf.write_coarse(tmp_path, "m", 1, _rows(4, 2), _rows(2, 2))
    assert mf.read_coarse(tmp_path, "m", 1, 2) is not None
    assert mf.read_coarse(tmp_path, "m", 1, 3) is None  # rows differ
    mf.write_coarse(tmp_path, "m", 1, _rows(4, 2), _rows(2, 3))
    assert mf.read_coarse(tmp_path, "m", 1, 2) is None  # projection width ≠ basis width
    mf.write_coarse(tmp_path, "other", 1, _rows(4, 2), _rows(2, 2))  # no matrix cached
    assert mf.read_coarse(tmp_path, "other", 1, 2) is None


def _vec(seed: int, dim: int = 8) -> bytes:
    rng = np.random.default_rng(seed)
    v = rng.normal(size=dim).astype(np.float32)
    return (v / np.linalg.norm(v)).tobytes()


def _as_dict(matrix: vectors.VectorMatrix) -> dict[str, bytes]:
    return {i: np.asarray(matrix.matrix[n]).tobytes() for n, i in enumerate(matrix.ids)}


def _cached(store: Store) -> list[str]:
    """The test corpus with a vector per exchange, read whole once: the matrix file and
    where the change log ended are written. The exchange ids."""
    fill(store)
    ids = [x for x, _ in store.embeddings.backlog("m", 100)]
    store.embeddings.put("m", [(x, _vec(n)) for n, x in enumerate(ids)], 8)
    vectors.invalidate()
    vectors.matrix_for(store, "m")
    return ids


def test_a_cached_file_is_patched_with_what_changed_since(
    settings: Settings, small_files: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Every start after a change used to read all vectors again (~15 s at 1M): now the
    newest file is patched from the change log, and the patch equals a whole read."""
    from memoir.search import matrix_files as matrix_load

    store = open_store(settings)
    try:
        ids = _cached(store)
        assert store.cache_dir is not None
        written = mf.cached_generations(store.cache_dir, "m")
        store.embeddings.put("m", [(ids[0], _vec(100))], 8)  # a new vector for a known row
        store.sessions.delete("s-api")  # rows removed
        vectors.invalidate()
        patched = vectors.matrix_for(store, "m")
        assert mf.cached_generations(store.cache_dir, "m") == written  # nothing rewritten
        whole = matrix_load.read_whole(store, "m", patched.generation, None)
        rows = (r.tobytes() for r in whole.matrix)
        assert _as_dict(patched) == dict(zip(whole.ids, rows, strict=True))
        assert _as_dict(patched)[ids[0]] == _vec(100)
        # past the rewrite share a new file is written, and the log trimmed behind it
        monkeypatch.setattr(matrix_load, "PATCH_MIN", 0)  # (tiny data: shares, not counts)
        store.embeddings.put("m", [(x, _vec(200 + n)) for n, x in enumerate(patched.ids)], 8)
        vectors.invalidate()
        rewritten = vectors.matrix_for(store, "m")
        assert isinstance(rewritten.matrix, np.memmap) is False
        assert mf.cached_generations(store.cache_dir, "m") == [rewritten.generation]
        assert store.embeddings.changes("m", 0) == (0, [])  # nothing a file still needs
    finally:
        store.close()


def test_a_patch_gives_up_when_its_file_was_replaced_meanwhile(
    settings: Settings, small_files: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A file replaced while a process patched it may have had its log trimmed: the
    patch must not apply a partial log, it reads whole instead."""
    from memoir.search import matrix_files as matrix_load

    store = open_store(settings)
    try:
        ids = _cached(store)
        store.embeddings.put("m", [(ids[1], _vec(300))], 8)
        assert store.cache_dir is not None
        generation = mf.cached_generations(store.cache_dir, "m")[0]
        ends = iter([5, 6])  # the log end read before, and after: another writer moved it
        monkeypatch.setattr(matrix_load, "read_log_end", lambda *a: next(ends))
        assert matrix_load.patched(store, "m", store.cache_dir) is None
        assert generation in mf.cached_generations(store.cache_dir, "m")
    finally:
        store.close()


def test_a_slow_whole_read_never_writes_a_file_older_than_the_log(
    settings: Settings, small_files: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    """C reads the log end, then its vectors slowly; meanwhile a vector is written and B
    reads whole, writes its file and trims the log past C's end. C's file would hide that
    write from every later patch: C must keep its read in memory, not write it."""
    from memoir.search import matrix_files as matrix_load

    writer, slow, fast, reader = (open_store(settings) for _ in range(4))
    try:
        ids = _cached(writer)
        assert slow.cache_dir is not None
        generation = writer.embeddings.generation("m")
        real_load = slow.embeddings.load

        def interleaved(model: str) -> tuple[list[str], bytes, int]:
            snapshot = real_load(model)
            writer.embeddings.put("m", [(ids[2], _vec(500))], 8)  # X, after C's snapshot
            matrix_load.read_whole(fast, "m", generation, fast.cache_dir)  # B: file + trim
            return snapshot

        monkeypatch.setattr(slow.embeddings, "load", interleaved)
        matrix_load.read_whole(slow, "m", generation, slow.cache_dir)  # C
        writer.embeddings.put("m", [(ids[3], _vec(501))], 8)  # Y: later processes patch
        vectors.invalidate()
        got = vectors.matrix_for(reader, "m")
        whole = matrix_load.read_whole(reader, "m", got.generation, None)
        rows = (r.tobytes() for r in whole.matrix)
        assert _as_dict(got) == dict(zip(whole.ids, rows, strict=True))
        assert _as_dict(got)[ids[2]] == _vec(500)
    finally:
        for store in (writer, slow, fast, reader):
            store.close()
