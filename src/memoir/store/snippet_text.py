"""Snippets made in Python (pure): a window of an exchange's text around the first query
word, every query word marked ``\\x02`` … ``\\x03`` like FTS5's ``snippet()``. PostgreSQL's
search uses it for every hit (``ts_headline`` drops tag-like text), SQLite's for an
exchange whose text holds CJK (FTS5 quotes the index's segmented copy), and search for hits
the full-text index did not mark (vector-only hits). Query words are marked where the
index finds them: a CJK run whatever separators lie between its characters (the index reads
it per character), a word where a word begins — after a CJK character too."""

from __future__ import annotations

import regex

from memoir.store.db import fold_accents
from memoir.store.query_text import CJK_CHARS, STOPWORDS, ParsedQuery, unsegment_cjk

__all__ = [
    "MARK_END",
    "MARK_START",
    "SNIPPET_CHARS",
    "make_snippet",
    "marked_words",
    "query_words",
]

MARK_START = "\x02"
MARK_END = "\x03"
SNIPPET_CHARS = 200  # a store snippet's width: about the 24 words of FTS5's snippet()
# a CJK run, or a run of other letters and digits (``用SQLite`` is two words to the index)
_WORD = regex.compile(f"[{CJK_CHARS}]+|(?:(?![{CJK_CHARS}])[\\p{{L}}\\p{{N}}])+")
_SPACE = regex.compile(r"\s+")
_SPLIT_ONLY = "\x1c\x1d\x1e\x1f"  # white space to str.split, not to the regex's \s
_CJK = regex.compile(f"[{CJK_CHARS}]")
# what may lie between two characters of a CJK run the index matches: no letter or digit
_BETWEEN_CJK = r"[^\p{L}\p{N}]*"
# a word begins after anything but a letter or digit, or after a CJK character
_WORD_START = f"(?:(?<![\\p{{L}}\\p{{N}}])|(?<=[{CJK_CHARS}]))"


def query_words(query: str) -> list[str]:
    """Lower-cased words of a query, in order, without duplicates (length ≥ 2 or CJK); a
    CJK run is a word apart from the letters next to it, as the index segments it."""
    seen: list[str] = []
    for word in _WORD.findall(query.lower()):
        if (len(word) >= 2 or not word.isascii()) and word not in seen:
            seen.append(word)
    return seen


def marked_words(query: ParsedQuery) -> str:
    """The words a store's snippet marks for a parsed query: its terms as typed (a CJK run
    whole again); never an excluded term, which the hit does not hold."""
    return " ".join(unsegment_cjk(term.text) for group in query.groups for term in group)


def make_snippet(text: str, query: str, width: int = 240) -> str:
    """``width`` characters of ``text`` around the first query word, query words marked
    (case and accents aside, as the index matches: ``cafe`` marks ``Café``)."""
    flat = _flat(text.replace(MARK_START, "").replace(MARK_END, ""))
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


def _flat(text: str) -> str:
    """``text`` with each run of white space one space, none at either end. ``str.split``
    does it several times faster than the regex over a whole exchange; it also splits at
    ``\\x1c``–``\\x1f``, which the regex (Unicode's White_Space) keeps, so text holding
    one of those takes the regex."""
    if any(c in text for c in _SPLIT_ONLY):
        return _SPACE.sub(" ", text).strip()
    return " ".join(text.split())


def _at_word_start(word: str) -> str:
    """A query word as a pattern matching where the index finds it: a CJK run anywhere
    (CJK has no word boundaries to begin at), its characters apart or not (``数据库锁定``
    marks ``数据库 锁定``); another word where a word begins (``test`` marks ``tests``, not
    the middle of ``latest``)."""
    folded = fold_accents(word)
    if _CJK.match(word):
        return _BETWEEN_CJK.join(regex.escape(c) for c in folded)
    return _WORD_START + regex.escape(folded)


def _cut(flat: str, start: int, width: int) -> str:
    if start > 0:
        space = flat.find(" ", start)
        start = space + 1 if 0 <= space < start + 20 else start
    piece = flat[start : start + width]
    if start + width < len(flat):
        space = piece.rfind(" ")
        piece = (piece[:space] if space > width // 2 else piece) + " …"
    return ("… " if start > 0 else "") + piece
