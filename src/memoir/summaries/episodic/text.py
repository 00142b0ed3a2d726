"""Unicode-safe text cuts (pure): never inside a code point or a grapheme cluster.

Python strings index code points, so any slice is code-point safe; grapheme clusters (an
emoji with skin tone, a ZWJ family, a letter with combining marks, a Hangul syllable in
jamo) come from the ``regex`` package's ``\\X``.
"""

from __future__ import annotations

from collections.abc import Sequence

import regex

__all__ = ["clip_middle", "grapheme_boundaries", "safe_cut", "split_point"]

_GRAPHEME = regex.compile(r"\X")
_SENTENCE_END = frozenset(".!?。！？；;…")
_LOCAL = 64  # grapheme segmentation resynchronises well within this many code points


def grapheme_boundaries(text: str) -> list[int]:
    """Every offset where a cut keeps grapheme clusters whole, 0 and len(text) included."""
    out = [0]
    out.extend(m.end() for m in _GRAPHEME.finditer(text))
    return out


def safe_cut(text: str, at: int) -> int:
    """The grapheme boundary at or before ``at`` (looked up in a local window, so it is
    cheap on huge texts)."""
    if at <= 0:
        return 0
    if at >= len(text):
        return len(text)
    start = max(0, at - _LOCAL)
    best = start
    for m in _GRAPHEME.finditer(text, start, min(len(text), at + _LOCAL)):
        if m.end() > at:
            break
        best = m.end()
    return best


def clip_middle(text: str, limit: int) -> str:
    """``text`` when it is at most ``limit`` characters, else its head and tail with a
    marker saying how much was left out (cuts on grapheme boundaries)."""
    if len(text) <= limit:
        return text
    head_end = safe_cut(text, int(limit * 0.7))
    tail_start = safe_cut(text, len(text) - int(limit * 0.25))
    if tail_start <= head_end:
        return text[:head_end]
    omitted = tail_start - head_end
    return f"{text[:head_end]} […{omitted} characters omitted…] {text[tail_start:]}"


def _text_rank(text: str, at: int) -> int:
    before = text[at - 1]
    if before == "\n" and at >= 2 and text[at - 2] == "\n":
        return 2
    if before == "\n":
        return 3
    if before in _SENTENCE_END:
        return 4
    if before.isspace():
        return 5
    return 6


def split_point(
    text: str,
    preferred: Sequence[int] = (),
    acceptable: Sequence[int] = (),
    *,
    window: float = 1 / 6,
) -> int | None:
    """Where to cut ``text`` into two halves, or None when it cannot be cut (fewer than
    two grapheme clusters).

    Candidates within ``window × len`` of the middle are ranked: a ``preferred`` offset (a
    message boundary outside any tool pair), an ``acceptable`` one (any other message
    boundary), then grapheme boundaries after a blank line, a line break, a sentence end,
    whitespace, anything; ties go to the one nearest the middle. With no candidate in the
    window, the grapheme boundary nearest the middle wins.
    """
    bounds = grapheme_boundaries(text)
    inner = bounds[1:-1]
    if not inner:
        return None
    n = len(text)
    mid = n / 2
    reach = max(1.0, n * window)
    bound_set = set(inner)
    ranked: list[tuple[int, float, int]] = []
    for rank, offsets in ((0, preferred), (1, acceptable)):
        for at in offsets:
            if at in bound_set and abs(at - mid) <= reach:
                ranked.append((rank, abs(at - mid), at))
    if not ranked:
        for at in inner:
            if abs(at - mid) <= reach:
                ranked.append((_text_rank(text, at), abs(at - mid), at))
    if not ranked:
        return min(inner, key=lambda at: (abs(at - mid), at))
    return min(ranked)[2]
