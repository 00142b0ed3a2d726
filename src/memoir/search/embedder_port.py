"""What an embedder is: the :class:`Embedder` port, its token-state extension, and the one
rule every implementation keeps (rows of unit length, :func:`normalise_rows`).

An :class:`Embedder` turns texts into unit-length float32 rows (``embed(texts)`` →
``(len(texts), dim)`` for documents, ``embed_query(texts)`` for search queries — the same
for symmetric models, prefixed for asymmetric ones such as E5); ``name`` identifies the
model so vectors of different models never mix in the store. The implementations
(:mod:`memoir.search.minilm`, :mod:`memoir.search.e5`, the fake in
:mod:`memoir.search.embedder`) import this module; it imports none of them.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Protocol, runtime_checkable

if TYPE_CHECKING:
    import numpy as np


__all__ = ["Embedder", "TokenEmbedder", "normalise_rows"]


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
    import numpy as np

    matrix = np.asarray(matrix, dtype=np.float32)
    norms = np.linalg.norm(matrix, axis=1, keepdims=True)
    norms[norms == 0] = 1.0
    return (matrix / norms).astype(np.float32, copy=False)
