"""Snippets for hits the full-text index did not mark (vector-only hits) and summary hygiene.

Pure functions: a window of the exchange text around the first query word, with every
query word marked ``\\x02`` … ``\\x03`` like the store's FTS snippets; those marks turned
into plain text and character spans (what ``--json`` prints and the terminal highlights);
and the summary body shown beside a hit with machine header lines removed.
"""

from __future__ import annotations

from memoir.store.search_text import MARK_END, MARK_START, make_snippet, query_words

__all__ = [
    "MARK_END",
    "MARK_START",
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
