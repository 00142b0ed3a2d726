"""The fusion rule for exchanges a list cannot rank (no vector yet), the re-ranker's
matching rule, MiniLM's bounded model runs, and `memoir embed` working in batches."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from pathlib import Path

import numpy as np
import pytest
from search_corpus import fill

from memoir import search as backfill
from memoir.config import Settings
from memoir.fusion import rrf, stand_in_ranks
from memoir.search import embed_backlog, embed_written
from memoir.search.embedders import ATTENTION_BUDGET, MAX_TOKENS, MINILM_BATCH, HashEmbedder, chunks
from memoir.search.ranking import pack_tokens, rerank
from memoir.store.port import Store


@pytest.fixture(autouse=True)
def _embedding_on_write(monkeypatch: pytest.MonkeyPatch) -> None:
    """On, as it is outside the test suite (tests/conftest.py turns it off)."""
    monkeypatch.setattr(backfill, "WRITE_MAX", 256)


@pytest.mark.parametrize(
    ("text", "vector", "unvectored", "expected"),
    [
        # the fresh exact match "f" has no vector: its text rank stands in, so it leads
        # as text ranks it (absent, near misses in both lists would beat it)
        (["f", "a", "b"], ["a", "b"], {"f"}, ["f", "a", "b"]),
        # ... and only where text ranks it: a second place stays second
        (["a", "f", "b"], ["a", "b"], {"f"}, ["a", "f", "b"]),
        # every exchange without a vector (no embedder's vectors yet): text's order
        (["c", "b", "a"], [], {"a", "b", "c"}, ["c", "b", "a"]),
        # an exchange the vectors rank is never given a stand-in, even when named
        (["a", "b"], ["b", "a"], {"b"}, ["a", "b"]),
        # no exchange lacks a vector: plain fusion (both lists weigh the same)
        (["f", "a", "b"], ["a", "b", "f"], set(), ["a", "f", "b"]),
        # a vector-only hit still takes its place beside the text-only candidates
        (["f"], ["v"], {"f"}, ["f", "v"]),
    ],
)
def test_text_only_candidates_stand_at_their_text_rank(
    text: list[str], vector: list[str], unvectored: set[str], expected: list[str]
) -> None:
    stand = stand_in_ranks(text, unvectored)
    fused = rrf([text, vector], k=10, stand_ins=[{}, stand])
    assert [i for i, _ in fused] == expected


def test_without_the_rule_the_fresh_match_falls_below_near_misses() -> None:
    """What the rule fixes: the same lists fused with the fresh exchange absent."""
    assert [i for i, _ in rrf([["f", "a", "b"], ["a", "b"]], k=10)] == ["a", "b", "f"]


@pytest.mark.parametrize(
    ("ranking", "unranked", "expected"),
    [
        (["a", "b", "c"], {"c", "a"}, {"a": 1, "c": 3}),
        (["a", "b"], set(), {}),
        (["a", "b"], {"z"}, {}),  # not in the list: no rank to stand in
        (["a", "a", "b"], {"a"}, {"a": 1}),  # a repeat counts at its best rank
    ],
)
def test_stand_in_ranks(ranking: list[str], unranked: set[str], expected: dict[str, int]) -> None:
    assert stand_in_ranks(ranking, unranked) == expected


def test_stand_in_scores_and_bad_ranks() -> None:
    fused = dict(rrf([["f"], []], k=10, stand_ins=[{}, {"f": 1}]))
    assert fused["f"] == pytest.approx(2 / 11)
    with pytest.raises(ValueError, match="1-based"):
        rrf([["f"], []], stand_ins=[{}, {"f": 0}])
    with pytest.raises(ValueError, match="stand-in"):
        rrf([["f"], []], stand_ins=[{}])


def test_rerank_keeps_an_unembedded_exchange_in_its_place() -> None:
    rows = np.eye(4, dtype=np.float32)
    query = rows[:1]
    stored = {"a": pack_tokens(rows[1:2]), "b": pack_tokens(rows[0:1])}  # b matches
    # "f" has no vector (so no token states): without a stand-in the token order's
    # opinion of b would push f from first place
    assert rerank(["f", "a", "b"], query, stored) == ["b", "a", "f"]
    assert rerank(["f", "a", "b"], query, stored, stand_in={"f"}) == ["f", "b", "a"]


@pytest.mark.parametrize(
    ("lengths", "expected"),
    [
        ([], []),
        ([5, 3, 4], [[1, 2, 0]]),  # short texts: one run, shortest first
        ([MAX_TOKENS] * 6, [[0, 1, 2, 3], [4, 5]]),  # full width: 4 rows a run
        ([128] * 20, [list(range(16)), list(range(16, 20))]),  # 16 rows of 128
        (
            [10] * (MINILM_BATCH + 1),
            [list(range(MINILM_BATCH)), [MINILM_BATCH]],
        ),  # never past MINILM_BATCH rows
        ([10, MAX_TOKENS, 10], [[0, 2, 1]]),  # 3 × 256² is within the budget
    ],
)
def test_minilm_runs_are_bounded(lengths: list[int], expected: list[list[int]]) -> None:
    runs = chunks(lengths)
    assert runs == expected
    for run in runs:
        width = max(lengths[i] for i in run)
        assert len(run) <= MINILM_BATCH
        assert len(run) == 1 or len(run) * width * width <= ATTENTION_BUDGET


class CountingEmbedder(HashEmbedder):
    """The fake embedder, recording how many texts each call asks for."""

    def __init__(self) -> None:
        super().__init__()
        self.calls: list[int] = []

    def embed_with_tokens(self, texts: Sequence[str]) -> tuple[np.ndarray, list[np.ndarray]]:
        self.calls.append(len(texts))
        return super().embed_with_tokens(texts)


def test_memoir_embed_works_in_batches(store: Store, monkeypatch: pytest.MonkeyPatch) -> None:
    fill(store)
    total = store.embeddings.backlog_count("hash-256", with_tokens=True)
    assert total == 6
    puts: list[int] = []
    original_put = store.embeddings.put

    def put(model: str, rows: list[tuple[str, bytes]], *args: object, **kwargs: object) -> int:
        puts.append(len(rows))
        return original_put(model, rows, *args, **kwargs)  # type: ignore[arg-type]

    def no_whole_reads(*args: object) -> object:
        raise AssertionError("the backfill read a whole session or every vector")

    monkeypatch.setattr(store.embeddings, "put", put)
    monkeypatch.setattr(store.embeddings, "load", no_whole_reads)
    monkeypatch.setattr(store.exchanges, "of", no_whole_reads)
    embedder = CountingEmbedder()
    result = embed_backlog(store, embedder, batch=4)
    assert result.embedded == total and result.complete
    assert embedder.calls == [4, 2]  # never more than a batch asked of the model
    assert puts == [4, 2]  # each batch stored before the next is embedded
    assert result.batches == 2


def test_the_context_an_exchange_is_embedded_with(store: Store) -> None:
    """The previous exchange of the same session leads the text (read by a probe)."""
    fill(store)
    ids = [x.id for x in store.exchanges.of("s-web")]
    previous = store.embeddings.previous_texts(ids)
    assert ids[0] not in previous  # the first exchange has none
    assert previous[ids[1]].startswith("How do I fix the sqlite database lock?")
    assert previous[ids[2]].startswith("Now the tests pass")


def test_embed_written_takes_the_sessions_newest_first(
    store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    fill(store)
    monkeypatch.setattr(backfill, "WRITE_MAX", 2)
    embedder = CountingEmbedder()
    assert embed_written(store, embedder, ["s-web"]) == 2
    ids = [x.id for x in store.exchanges.of("s-web")]
    assert sorted(store.embeddings.vectors(embedder.name, ids)) == sorted(ids[-2:])
    assert embed_written(store, embedder, ["s-web"], max_items=5) == 1  # the one left
    assert embed_written(store, embedder, []) == 0
    assert embedder.calls == [2, 1]


def test_embed_written_is_seen_by_the_next_search(store: Store, tmp_path: Path) -> None:
    """The matrix a search loaded is replaced once a write embeds more (the store's
    embedding generation moves)."""
    from memoir.search.vectors import matrix_for

    fill(store)
    embedder = HashEmbedder()
    embed_backlog(store, embedder)
    before = matrix_for(store, embedder.name)
    store.embeddings.put(embedder.name, [("s-web:1", np.zeros(256, np.float32).tobytes())], 256)
    after = matrix_for(store, embedder.name)
    assert after.generation != before.generation
    row = after.rows_of(["s-web:1"])[0]
    assert not after.matrix[row].any()


def test_memoir_embed_writes_the_matrix_file_a_page_at_a_time(
    settings: Settings, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`memoir embed` leaves the matrix file for the next search without ever loading the
    whole matrix: pages of PAGE_ROWS vectors, and the file reads back as the store's."""
    from memoir.search import matrix_files as matrix_file
    from memoir.search import matrix_files as matrix_load
    from memoir.search import vectors
    from memoir.store import open_store

    monkeypatch.setattr(matrix_file, "FILE_MIN_ROWS", 1)
    monkeypatch.setattr(matrix_load, "PAGE_ROWS", 4)
    filled = open_store(settings)
    fill(filled)
    embedder = HashEmbedder(dim=16)
    embed_backlog(filled, embedder)
    expected = dict(filled.embeddings.vectors(embedder.name, [x for x, _ in _all(filled)]))
    pages: list[int] = []
    original = filled.embeddings.pages

    def counted(model: str, size: int) -> Iterator[tuple[list[str], bytes, int]]:
        for page in original(model, size):
            pages.append(len(page[0]))
            yield page

    def no_whole_reads(*args: object) -> object:
        raise AssertionError("the whole matrix was loaded")

    monkeypatch.setattr(filled.embeddings, "pages", counted)
    monkeypatch.setattr(filled.embeddings, "load", no_whole_reads)
    assert vectors.prepare_files(filled, embedder.name)
    assert pages == [4, 2]
    assert filled.cache_dir is not None
    generation = filled.embeddings.generation(embedder.name)
    found = matrix_file.read_matrix(filled.cache_dir, embedder.name, generation)
    assert found is not None
    ids, matrix = found
    assert sorted(ids) == sorted(expected)
    for row, xid in enumerate(ids):
        assert matrix[row].tobytes() == expected[xid]
    vectors.invalidate()
    loaded = vectors.matrix_for(filled, embedder.name)  # the next search maps the file
    assert isinstance(loaded.matrix, np.memmap) and loaded.ids == ids
    filled.close()


def _all(store: Store) -> list[tuple[str, str]]:
    return store.embeddings.backlog("nothing-embedded", 1000)


def test_a_few_vectors_embedded_on_write_patch_the_file_instead_of_rewriting_it(
    settings: Settings, monkeypatch: pytest.MonkeyPatch
) -> None:
    from memoir.search import matrix_files as matrix_file
    from memoir.search import vectors
    from memoir.store import open_store

    monkeypatch.setattr(matrix_file, "FILE_MIN_ROWS", 1)
    filled = open_store(settings)
    fill(filled)
    embedder = HashEmbedder(dim=16)
    embed_backlog(filled, embedder, max_items=5)
    assert vectors.prepare_files(filled, embedder.name)
    assert filled.cache_dir is not None
    written = matrix_file.cached_generations(filled.cache_dir, embedder.name)
    embed_backlog(filled, embedder)  # the sixth, as a write embeds it
    vectors.prepare_files(filled, embedder.name)
    assert matrix_file.cached_generations(filled.cache_dir, embedder.name) == written
    vectors.invalidate()
    loaded = vectors.matrix_for(filled, embedder.name)  # the file, patched from the log
    assert loaded.size == 6
    assert loaded.generation == filled.embeddings.generation(embedder.name)
    filled.close()
