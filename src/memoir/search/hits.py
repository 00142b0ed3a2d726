"""Search values: the typed hit the library returns and the modes it ranks by."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any, Literal

from memoir.search.snippets import split_marks

__all__ = ["MODES", "SearchHit", "SearchMode"]

SearchMode = Literal["text", "vector", "hybrid"]
MODES: tuple[SearchMode, ...] = ("text", "vector", "hybrid")


@dataclass(frozen=True, slots=True)
class SearchHit:
    """One ranked exchange.

    ``score`` is higher-is-better within one result list (bm25 for text, cosine for vector,
    fused reciprocal-rank score for hybrid); it is not comparable across modes.
    ``snippet`` marks matches with ``\\x02`` … ``\\x03`` (:func:`split_marks` turns them into
    plain text and spans; ``to_json`` does). ``summary`` is the body of the
    session's summary (never its machine header line), or None.
    ``text_rank``/``vector_rank`` are the 1-based ranks the hit had in each list (None when
    it was not in that list): they show why a hybrid hit is where it is.
    """

    session_id: str
    exchange_id: str
    timestamp: datetime | None
    project: str
    score: float
    snippet: str
    summary: str | None = None
    text_rank: int | None = None
    vector_rank: int | None = None

    def to_json(self) -> dict[str, Any]:
        """The documented JSON shape of ``memoir search --json``: ``snippet`` is plain text
        and ``highlights`` the ``[start, end)`` character spans of its matches."""
        snippet, spans = split_marks(self.snippet)
        return {
            "session_id": self.session_id,
            "exchange_id": self.exchange_id,
            "timestamp": self.timestamp.isoformat() if self.timestamp else None,
            "project": self.project,
            "score": round(self.score, 6),
            "snippet": snippet,
            "highlights": [[start, end] for start, end in spans],
            "summary": self.summary,
        }
