"""Reciprocal rank fusion: one ranking from several, by rank not by raw score.

Scores of bm25 and cosine live on different scales; their ranks do not. Each list
contributes ``weight / (k + rank)`` to every id it holds (rank 1-based); ids are ordered by
the sum, ties broken by the best single rank and then by first appearance, so the result
is deterministic.
"""

from __future__ import annotations

from collections.abc import Sequence

__all__ = ["DEFAULT_K", "rrf"]

DEFAULT_K = 60


def rrf(
    rankings: Sequence[Sequence[str]],
    *,
    k: int = DEFAULT_K,
    weights: Sequence[float] | None = None,
) -> list[tuple[str, float]]:
    """Fuse ranked id lists; returns ``(id, fused score)`` best first.

    An id repeated inside one list counts once, at its best rank.
    """
    if k < 0:
        raise ValueError("k must be >= 0")
    if weights is None:
        weights = [1.0] * len(rankings)
    if len(weights) != len(rankings):
        raise ValueError("one weight per ranking")
    scores: dict[str, float] = {}
    best: dict[str, int] = {}
    order: dict[str, int] = {}
    for ranking, weight in zip(rankings, weights, strict=True):
        seen: set[str] = set()
        for position, item in enumerate(ranking, start=1):
            if item in seen:
                continue
            seen.add(item)
            scores[item] = scores.get(item, 0.0) + weight / (k + position)
            best[item] = min(best.get(item, position), position)
            order.setdefault(item, len(order))
    ranked = sorted(scores, key=lambda i: (-scores[i], best[i], order[i]))
    return [(item, scores[item]) for item in ranked]
