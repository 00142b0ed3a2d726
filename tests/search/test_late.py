"""Late-interaction re-ranking, pure: packing token states, MaxSim, and the re-rank fusion."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from memoir.errors import StoreError
from memoir.search.embedders import HashEmbedder, TokenEmbedder
from memoir.search.ranking import RERANK_DEPTH, maxsim, pack_tokens, rerank, unpack_tokens

E = np.eye(4, dtype=np.float32)


def rows(*indices: int) -> np.ndarray:
    """Unit rows along the given axes of a 4-d space."""
    return E[list(indices)] if indices else np.zeros((0, 4), np.float32)


def test_pack_round_trip_keeps_unit_rows_and_directions() -> None:
    rng = np.random.default_rng(3)
    states = rng.standard_normal((7, 96)).astype(np.float32) * 5
    blob = pack_tokens(states)
    assert len(blob) == 2 + 7 * 96  # one byte per value after the width header
    back = unpack_tokens(blob)
    assert back.shape == (7, 96)
    assert np.allclose(np.linalg.norm(back, axis=1), 1.0, atol=1e-5)
    unit = states / np.linalg.norm(states, axis=1, keepdims=True)
    assert np.all(np.sum(back * unit, axis=1) > 0.999)  # int8 keeps the direction


def test_pack_of_no_tokens_is_the_header_alone() -> None:
    blob = pack_tokens(np.zeros((0, 96), np.float32))
    assert blob == (96).to_bytes(2, "little")
    assert unpack_tokens(blob).shape == (0, 96)


@pytest.mark.parametrize(
    ("blob", "message"),
    [
        (b"", "truncated"),
        (b"\x01", "truncated"),
        (b"\x00\x00\x01", "does not hold rows"),
        (b"\x03\x00\x01\x02", "does not hold rows"),
    ],
)
def test_unreadable_blobs_raise_store_errors(blob: bytes, message: str) -> None:
    with pytest.raises(StoreError, match=message):
        unpack_tokens(blob)


def test_pack_rejects_a_vector() -> None:
    with pytest.raises(ValueError, match="2-d"):
        pack_tokens(np.ones(4, np.float32))


@pytest.mark.parametrize(
    ("query", "doc", "expected"),
    [
        (rows(0, 1), rows(0, 1), 1.0),  # every query token found
        (rows(0, 1), rows(0), 0.5),  # one of two found
        (rows(0, 1), rows(2, 3), 0.0),  # none found
        (rows(0), rows(1, 2, 0), 1.0),  # the best match counts, wherever it is
        (rows(), rows(0), 0.0),  # nothing asked
        (rows(0), rows(), 0.0),  # nothing stored
        (rows(0), np.ones((1, 3), np.float32), 0.0),  # another model's width
    ],
)
def test_maxsim_table(query: np.ndarray, doc: np.ndarray, expected: float) -> None:
    assert maxsim(query, doc) == pytest.approx(expected)


def test_rerank_fuses_token_order_with_the_current_order() -> None:
    query = rows(0, 1)
    stored = {
        "a": pack_tokens(rows(0, 1)),  # matches every query token
        "b": pack_tokens(rows(2, 3)),  # matches none
        "c": pack_tokens(rows(0)),  # matches half
    }
    # current order b, c, a; token order a, c, b → by reciprocal rank (k=10) a and b tie
    # at 1/11 + 1/13 and beat c's 2/12; the tie goes to the first seen, b
    assert rerank(["b", "c", "a"], query, stored) == ["b", "a", "c"]
    # when the two orders agree nothing moves
    assert rerank(["a", "c", "b"], query, stored) == ["a", "c", "b"]


def test_rerank_touches_only_the_head_and_skips_what_it_cannot_read() -> None:
    query = rows(0)
    ranked = [f"x{i}" for i in range(RERANK_DEPTH + 5)]
    stored = {i: pack_tokens(rows(1)) for i in ranked}
    stored["x2"] = pack_tokens(rows(0))  # the only one matching
    stored["x1"] = b"\x05"  # corrupt: as if missing
    del stored["x0"]  # never embedded with tokens
    out = rerank(ranked, query, stored)
    assert out[RERANK_DEPTH:] == ranked[RERANK_DEPTH:]
    assert sorted(out) == sorted(ranked)
    assert out.index("x2") < ranked.index("x2")  # the match moved up
    assert out[0] == "x2"


@pytest.mark.parametrize(
    ("ranked", "query", "stored"),
    [
        (["a", "b"], rows(), {"a": pack_tokens(rows(0))}),  # no query tokens
        (["a"], rows(0), {"a": pack_tokens(rows(0))}),  # nothing to reorder
        (["a", "b"], rows(0), {}),  # no stored tokens
    ],
)
def test_rerank_leaves_the_order_when_it_has_no_opinion(
    ranked: list[str], query: np.ndarray, stored: dict[str, bytes]
) -> None:
    assert rerank(ranked, query, stored) == ranked


@given(
    n=st.integers(0, 45),
    seed=st.integers(0, 2**32 - 1),
    have=st.lists(st.booleans(), min_size=45, max_size=45),
)
def test_rerank_is_a_permutation(n: int, seed: int, have: list[bool]) -> None:
    rng = np.random.default_rng(seed)
    ranked = [f"id{i}" for i in range(n)]
    stored = {
        i: pack_tokens(rng.standard_normal((int(rng.integers(0, 5)), 8)).astype(np.float32))
        for i, keep in zip(ranked, have, strict=False)
        if keep
    }
    query = rng.standard_normal((3, 8)).astype(np.float32)
    query /= np.linalg.norm(query, axis=1, keepdims=True)
    out = rerank(ranked, query, stored)
    assert sorted(out) == sorted(ranked) and len(out) == len(ranked)


def test_the_hash_embedder_has_token_states() -> None:
    embedder = HashEmbedder()
    assert isinstance(embedder, TokenEmbedder)
    pooled, states = embedder.embed_with_tokens(["sqlite lock", ""])
    assert pooled.shape == (2, embedder.dim)
    assert [s.shape for s in states] == [(2, HashEmbedder.token_dim), (0, HashEmbedder.token_dim)]
    vector, tokens = embedder.query_with_tokens("Sqlite LOCK")
    assert np.allclose(vector, embedder.embed_query(["Sqlite LOCK"])[0])
    assert maxsim(tokens, states[0]) == pytest.approx(1.0)  # the same words, any case
    other = embedder.embed_with_tokens(["dark mode toggle"])[1][0]
    assert maxsim(tokens, other) < 0.6
