"""Reciprocal rank fusion: one ranking from several, by rank not by raw score.

Scores of bm25 and cosine live on different scales; their ranks do not. Each list
contributes ``weight / (k + rank)`` to every id it holds (rank 1-based); ids are ordered by
the sum, ties broken by the best single rank and then by first appearance, so the result
is deterministic.

A list may be unable to rank some ids at all (search by meaning cannot rank an exchange
with no vector yet: one stored a moment ago). Counting such an id as absent would rank it
below every id both lists hold, however well the other list ranks it; ``stand_ins`` gives
it a rank in that list instead — :func:`stand_in_ranks`: its rank in the list that could
rank it — so it competes on what is known of it.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence

__all__ = ["DEFAULT_K", "rrf", "stand_in_ranks"]

DEFAULT_K = 60


def rrf(
    rankings: Sequence[Sequence[str]],
    *,
    k: int = DEFAULT_K,
    weights: Sequence[float] | None = None,
    stand_ins: Sequence[Mapping[str, int]] | None = None,
) -> list[tuple[str, float]]:
    """Fuse ranked id lists; returns ``(id, fused score)`` best first.

    An id repeated inside one list counts once, at its best rank. ``stand_ins``, one
    mapping per list: ids that list could not rank, with the 1-based rank each counts
    at in it (ignored for an id the list holds).
    """
    if k < 0:
        raise ValueError("k must be >= 0")
    if weights is None:
        weights = [1.0] * len(rankings)
    if len(weights) != len(rankings):
        raise ValueError("one weight per ranking")
    if stand_ins is None:
        stand_ins = [{}] * len(rankings)
    if len(stand_ins) != len(rankings):
        raise ValueError("one stand-in mapping per ranking")
    scores: dict[str, float] = {}
    best: dict[str, int] = {}
    order: dict[str, int] = {}
    for ranking, weight, standing in zip(rankings, weights, stand_ins, strict=True):
        seen: set[str] = set()
        held = set(ranking)
        if any(rank < 1 for rank in standing.values()):
            raise ValueError("stand-in ranks are 1-based")
        placed = [*enumerate(ranking, start=1)]
        placed += [(rank, item) for item, rank in standing.items() if item not in held]
        for position, item in placed:
            if item in seen:
                continue
            seen.add(item)
            scores[item] = scores.get(item, 0.0) + weight / (k + position)
            best[item] = min(best.get(item, position), position)
            order.setdefault(item, len(order))
    ranked = sorted(scores, key=lambda i: (-scores[i], best[i], order[i]))
    return [(item, scores[item]) for item in ranked]


def stand_in_ranks(ranking: Sequence[str], unranked: Collection[str]) -> dict[str, int]:
    """The 1-based rank in ``ranking`` of each of its ids in ``unranked`` (ids another list
    could not rank): their stand-in ranks there (pure)."""
    out: dict[str, int] = {}
    for position, item in enumerate(ranking, start=1):
        if item in unranked:
            out.setdefault(item, position)
    return out
