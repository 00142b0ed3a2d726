"""Conversational context in ranking (pure): an exchange's neighbours lend it relevance.

In a conversation the words that identify a topic and the turn that answers about it are
often one exchange apart ("How was the trip?" … "We hiked to the lake"). So a candidate's
score is raised by a share of its best adjacent candidate's score:
``s'(x) = s(x) + weight × max(0, s(prev), s(next))``, where prev/next are the exchanges of the
same session right before and after ``x`` (adjacent when one's last ordinal is just before
the other's first). Only candidates lend; a neighbour outside the list lends nothing.

Used for vector candidates. Text candidates need none: the full-text index carries each
exchange's neighbours in its ``context`` column (:mod:`memoir.store.index_doc`).
"""

from __future__ import annotations

from collections.abc import Mapping

from memoir.model import Exchange

__all__ = ["NEIGHBOUR_WEIGHT", "neighbour_smoothed"]

NEIGHBOUR_WEIGHT = 0.5


def neighbour_smoothed(
    scores: Mapping[str, float],
    exchanges: Mapping[str, Exchange],
    weight: float = NEIGHBOUR_WEIGHT,
) -> list[tuple[str, float]]:
    """Candidates re-scored with their neighbours, best first (ties keep input order)."""
    if weight == 0 or len(scores) < 2:
        return sorted(scores.items(), key=lambda kv: -kv[1])
    starts: dict[tuple[str, int], str] = {}
    ends: dict[tuple[str, int], str] = {}
    for xid in scores:
        ex = exchanges.get(xid)
        if ex is not None:
            starts[(ex.session_id, ex.first_ordinal)] = xid
            ends[(ex.session_id, ex.last_ordinal)] = xid
    out: dict[str, float] = {}
    for xid, score in scores.items():
        ex = exchanges.get(xid)
        lent = 0.0
        if ex is not None:
            before = ends.get((ex.session_id, ex.first_ordinal - 1))
            after = starts.get((ex.session_id, ex.last_ordinal + 1))
            lent = max([0.0, *(scores[n] for n in (before, after) if n is not None)])
        out[xid] = score + weight * lent
    order = {xid: n for n, xid in enumerate(scores)}
    return sorted(out.items(), key=lambda kv: (-kv[1], order[kv[0]]))
