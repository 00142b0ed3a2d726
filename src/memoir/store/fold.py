"""Accent folding as SQLite's FTS5 tokenizer does it (``remove_diacritics 2``), for the
PostgreSQL index (pure).

``é`` → ``e``, ``Ü`` → ``U``, ``ñ`` → ``n``: every Latin letter whose Unicode
decomposition is one base letter plus combining marks, mapped to that letter — one
character for one, so PostgreSQL's ``translate()`` (immutable, usable in the generated
``tsv`` column, no extension needed) and Python's ``str.translate`` fold the same way.
Letters that are not a base plus marks (``ß``, ``æ``, ``ø``) stay as they are, as in FTS5.
"""

from __future__ import annotations

import re
import string
import unicodedata

__all__ = ["ACCENTED", "PLAIN", "fold_accents", "fold_index_text"]

_RANGES = ((0x00C0, 0x024F), (0x1E00, 0x1EFF))  # Latin-1 Supplement to Extended-B; Additional


def _table() -> dict[str, str]:
    table: dict[str, str] = {}
    for low, high in _RANGES:
        for code in range(low, high + 1):
            char = chr(code)
            base = "".join(
                c for c in unicodedata.normalize("NFKD", char) if not unicodedata.combining(c)
            )
            if len(base) == 1 and base != char and base.isascii() and base.isalpha():
                table[char] = base
    return table


_FOLD = _table()
ACCENTED = "".join(_FOLD)
PLAIN = "".join(_FOLD.values())
_TRANSLATION = str.maketrans(_FOLD)
# finding out that there is nothing to fold is many times cheaper than translating: a
# snippet folds a whole exchange, and CJK or Cyrillic text is not ASCII but holds none
_ANY_ACCENTED = re.compile("[" + re.escape(ACCENTED) + "]")


def fold_accents(text: str) -> str:
    """``text`` with accented Latin letters replaced by their base letter (same length)."""
    if text.isascii() or _ANY_ACCENTED.search(text) is None:
        return text
    return text.translate(_TRANSLATION)


# what PostgreSQL's index folds (migration v18): ASCII punctuation read as spaces, as
# FTS5's tokenizer reads it, and accents as above; SQL's ``translate(text, punctuation ||
# ACCENTED, spaces || PLAIN)`` in Python, where it costs a fraction of the server's time
_PUNCTUATION = str.maketrans(string.punctuation, " " * len(string.punctuation))
_INDEX_TRANSLATION: dict[int, str | int | None] = {**_TRANSLATION, **_PUNCTUATION}


def fold_index_text(text: str) -> str:
    """``text`` as PostgreSQL's full-text index reads it: ASCII punctuation as spaces and
    accented Latin letters as their base letter (same length)."""
    if text.isascii() or _ANY_ACCENTED.search(text) is None:
        return text.translate(_PUNCTUATION)
    return text.translate(_INDEX_TRANSLATION)
