"""Text a database can store (pure): what sync does to a transcript's text, and the HTTP
API to a body it reads, before either reaches the store.

PostgreSQL text holds no NUL, and no backend stores a lone UTF-16 surrogate (half an
emoji, or an undecodable byte read with ``surrogateescape``): :func:`scrub` replaces NUL
with U+FFFD; :func:`scrub_deep` also turns each lone surrogate into ``?``.
"""

from __future__ import annotations

__all__ = ["scrub", "scrub_deep"]


def scrub(text: str) -> str:
    """Text a database can store: NUL → U+FFFD."""
    return text.replace("\x00", "\ufffd") if "\x00" in text else text


def scrub_deep(text: str) -> str:
    """Also replace lone surrogates (undecodable bytes) so the text encodes as UTF-8."""
    return scrub(text).encode("utf-8", "replace").decode("utf-8")
