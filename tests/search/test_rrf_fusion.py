from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from memoir.fusion import rrf


@pytest.mark.parametrize(
    ("rankings", "k", "weights", "expected"),
    [
        # one list: its own order
        ([["a", "b", "c"]], 60, None, ["a", "b", "c"]),
        # an id in both lists beats ids in one list only, wherever it ranks
        ([["a", "b", "c"], ["c", "d", "e"]], 60, None, ["c", "a", "b", "d", "e"]),
        # same rank in both lists: tie on score, broken by first appearance
        ([["a", "b"], ["b", "a"]], 60, None, ["a", "b"]),
        # k=0: rank 1 counts a lot more than rank 2
        ([["a", "b", "c"], ["c", "b", "a"]], 0, None, ["a", "c", "b"]),
        # a weighted list wins its disagreements
        ([["a", "b"], ["b", "a"]], 60, [1.0, 0.5], ["a", "b"]),
        ([["a", "b"], ["b", "a"]], 60, [0.5, 1.0], ["b", "a"]),
        # empty lists contribute nothing
        ([[], ["x", "y"]], 60, None, ["x", "y"]),
        ([[], []], 60, None, []),
        # a duplicate inside one list counts once, at its best rank
        ([["a", "a", "b"], ["b"]], 60, None, ["b", "a"]),
    ],
)
def test_rrf_table(
    rankings: list[list[str]], k: int, weights: list[float] | None, expected: list[str]
) -> None:
    assert [i for i, _ in rrf(rankings, k=k, weights=weights)] == expected


def test_rrf_scores_are_reciprocal_ranks() -> None:
    fused = dict(rrf([["a", "b"], ["b"]], k=60))
    assert fused["a"] == pytest.approx(1 / 61)
    assert fused["b"] == pytest.approx(1 / 62 + 1 / 61)


def test_rrf_rejects_bad_arguments() -> None:
    with pytest.raises(ValueError):
        rrf([["a"]], k=-1)
    with pytest.raises(ValueError):
        rrf([["a"], ["b"]], weights=[1.0])


@given(st.lists(st.lists(st.sampled_from("abcdefgh"), max_size=8), max_size=4))
def test_rrf_returns_each_id_once_sorted(rankings: list[list[str]]) -> None:
    fused = rrf(rankings)
    ids = [i for i, _ in fused]
    assert len(ids) == len(set(ids)) == len({i for r in rankings for i in r})
    scores = [s for _, s in fused]
    assert scores == sorted(scores, reverse=True)
