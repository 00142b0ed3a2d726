"""Snippets made in Python (pure): a window of an exchange's text around the first query
word, every query word marked ``\\x02`` … ``\\x03`` like FTS5's ``snippet()``. PostgreSQL's
search uses it for every hit (``ts_headline`` drops tag-like text), and search for hits the
full-text index did not mark (vector-only hits)."""

from __future__ import annotations

import regex

from memoir.store.fold import fold_accents
from memoir.store.query_text import STOPWORDS

__all__ = ["MARK_END", "MARK_START", "make_snippet", "query_words"]

MARK_START = "\x02"
MARK_END = "\x03"
_WORD = regex.compile(r"[\p{L}\p{N}]+")
_SPACE = regex.compile(r"\s+")
_CJK = regex.compile(r"[\p{Han}\p{Hiragana}\p{Katakana}\p{Hangul}]")


def query_words(query: str) -> list[str]:
    """Lower-cased words of a query, in order, without duplicates (length ≥ 2 or CJK)."""
    seen: list[str] = []
    for word in _WORD.findall(query.lower()):
        if (len(word) >= 2 or not word.isascii()) and word not in seen:
            seen.append(word)
    return seen


def make_snippet(text: str, query: str, width: int = 240) -> str:
    """``width`` characters of ``text`` around the first query word, query words marked
    (case and accents aside, as the index matches: ``cafe`` marks ``Café``)."""
    flat = _SPACE.sub(" ", text.replace(MARK_START, "").replace(MARK_END, "")).strip()
    words = query_words(query)
    words = [w for w in words if w not in STOPWORDS] or words  # "to" is no reason to mark
    if not words or not flat:
        return _cut(flat, 0, width)
    pattern = regex.compile(
        "|".join(_at_word_start(w) for w in sorted(words, key=len, reverse=True)),
        regex.IGNORECASE,
    )
    first = pattern.search(fold_accents(flat))  # folding keeps every character's place
    start = 0 if first is None else max(0, first.start() - width // 3)
    window = _cut(flat, start, width)
    out: list[str] = []
    done = 0
    for match in pattern.finditer(fold_accents(window)):
        out += [window[done : match.start()], MARK_START, window[match.start() : match.end()]]
        out.append(MARK_END)
        done = match.end()
    return "".join(out) + window[done:]


def _at_word_start(word: str) -> str:
    """A query word as a pattern matching where a word begins (``test`` marks ``tests``,
    not the middle of ``latest``); CJK has no word boundaries to begin at."""
    escaped = regex.escape(fold_accents(word))
    return escaped if _CJK.search(word) else r"(?<![\p{L}\p{N}])" + escaped


def _cut(flat: str, start: int, width: int) -> str:
    if start > 0:
        space = flat.find(" ", start)
        start = space + 1 if 0 <= space < start + 20 else start
    piece = flat[start : start + width]
    if start + width < len(flat):
        space = piece.rfind(" ")
        piece = (piece[:space] if space > width // 2 else piece) + " …"
    return ("… " if start > 0 else "") + piece
