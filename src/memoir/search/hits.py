"""What a search returns: the typed hit, the modes it ranks by, and its snippet marks.

Snippets for hits the full-text index did not mark (vector-only hits) and summary hygiene.

Pure functions: a window of the exchange text around the first query word, with every
query word marked ``\\x02`` … ``\\x03`` like the store's FTS snippets; those marks turned
into plain text and character spans (what ``--json`` prints and the terminal highlights);
and the summary body shown beside a hit with machine header lines removed.

The typed hit the library returns, and the modes it ranks by.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any, Literal

from memoir.store.search_text import MARK_END, MARK_START, make_snippet, query_words

__all__ = [
    "MARK_END",
    "MARK_START",
    "MODES",
    "SearchHit",
    "SearchMode",
    "clean_summary",
    "make_snippet",
    "query_words",
    "split_marks",
]


_HEADERS = ("__COVERAGE__", "__ERRORED__", "__EMPTY__", "__SKIPPED__")


def split_marks(snippet: str) -> tuple[str, list[tuple[int, int]]]:
    """The snippet without its marks, and the ``(start, end)`` character spans they enclosed
    (end exclusive, in order, never empty). A mark left open runs to the end; a stray
    closing mark is dropped."""
    text: list[str] = []
    spans: list[tuple[int, int]] = []
    length = 0
    opened: int | None = None
    for char in snippet:
        if char == MARK_START:
            if opened is None:
                opened = length
        elif char == MARK_END:
            if opened is not None and length > opened:
                spans.append((opened, length))
            opened = None
        else:
            text.append(char)
            length += 1
    if opened is not None and length > opened:
        spans.append((opened, length))
    return "".join(text), spans


def clean_summary(body: str | None) -> str | None:
    """The summary text a person should see: None for missing, empty or error sentinels;
    machine header lines (``__COVERAGE__ {...}``) removed."""
    if body is None:
        return None
    if body.lstrip().startswith("__ERRORED__"):
        return None
    lines = [line for line in body.splitlines() if not line.strip().startswith(_HEADERS)]
    text = "\n".join(lines).strip()
    return text or None


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
