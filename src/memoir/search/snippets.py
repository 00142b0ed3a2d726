"""Snippets for hits the full-text index did not mark (vector-only hits) and summary hygiene.

Pure functions: a window of the exchange text around the first query word, with every
query word marked ``\\x02`` … ``\\x03`` like the store's FTS snippets; those marks turned
into plain text and character spans (what ``--json`` prints and the terminal highlights);
and the summary body shown beside a hit with machine header lines removed.
"""

from __future__ import annotations

import regex

__all__ = [
    "MARK_END",
    "MARK_START",
    "clean_summary",
    "make_snippet",
    "query_words",
    "split_marks",
]

MARK_START = "\x02"
MARK_END = "\x03"
_WORD = regex.compile(r"[\p{L}\p{N}]+")
_SPACE = regex.compile(r"\s+")
_HEADERS = ("__COVERAGE__", "__ERRORED__", "__EMPTY__", "__SKIPPED__")


def query_words(query: str) -> list[str]:
    """Lower-cased words of a query, in order, without duplicates (length ≥ 2 or CJK)."""
    seen: list[str] = []
    for word in _WORD.findall(query.lower()):
        if (len(word) >= 2 or not word.isascii()) and word not in seen:
            seen.append(word)
    return seen


def make_snippet(text: str, query: str, width: int = 240) -> str:
    """``width`` characters of ``text`` around the first query word, query words marked."""
    flat = _SPACE.sub(" ", text.replace(MARK_START, "").replace(MARK_END, "")).strip()
    words = query_words(query)
    if not words or not flat:
        return _cut(flat, 0, width)
    pattern = regex.compile(
        "|".join(regex.escape(w) for w in sorted(words, key=len, reverse=True)),
        regex.IGNORECASE,
    )
    first = pattern.search(flat)
    start = 0 if first is None else max(0, first.start() - width // 3)
    window = _cut(flat, start, width)
    return pattern.sub(lambda m: f"{MARK_START}{m.group(0)}{MARK_END}", window)


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


def _cut(flat: str, start: int, width: int) -> str:
    if start > 0:
        space = flat.find(" ", start)
        start = space + 1 if 0 <= space < start + 20 else start
    piece = flat[start : start + width]
    if start + width < len(flat):
        space = piece.rfind(" ")
        piece = (piece[:space] if space > width // 2 else piece) + " …"
    return ("… " if start > 0 else "") + piece


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
