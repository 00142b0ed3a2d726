"""Late-interaction re-ranking (pure): the head of the hybrid list re-scored token by token.

A pooled vector says what a whole exchange is about; a question usually asks about one
detail of it. So the embedder also keeps the contextual state of each content token of
an exchange (stop words and punctuation dropped, projected to a few dimensions, one
signed byte per value: :func:`pack_tokens`), stored beside the exchange's vector. At query
time each query token finds its best-matching token in a candidate (MaxSim, as ColBERT
scores) and the candidate's score is the mean over query tokens (:func:`maxsim`). The
token states come from the same forward pass as the pooled vector, so embedding costs
nothing more; re-ranking costs a few small matrix products.

:func:`rerank` fuses that order with the hybrid order by reciprocal rank over the first
:data:`RERANK_DEPTH` hits — the re-ranker is one more opinion, not a replacement: on
LoCoMo it lifts hybrid recall@10 while neither order alone is as good
(docs/benchmarks.md). Candidates without stored token states keep only their hybrid rank.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from typing import TYPE_CHECKING

from memoir.errors import StoreError
from memoir.fusion import rrf, stand_in_ranks

if TYPE_CHECKING:
    import numpy as np

__all__ = ["RERANK_DEPTH", "RERANK_K", "maxsim", "pack_tokens", "rerank", "unpack_tokens"]

RERANK_DEPTH = 30
RERANK_K = 10
_SCALE = 127.0
_HEADER = 2  # bytes: the token dimension, little-endian


def pack_tokens(states: np.ndarray) -> bytes:
    """Token states (rows) as bytes: each row scaled to unit length, one int8 per value,
    led by the row width. An empty matrix packs to the header alone."""
    import numpy as np

    matrix = np.asarray(states, dtype=np.float32)
    if matrix.ndim != 2 or not 0 < matrix.shape[1] < 65536:
        raise ValueError(f"token states must be a 2-d matrix, not shape {matrix.shape}")
    norms = np.linalg.norm(matrix, axis=1, keepdims=True)
    norms[norms == 0] = 1.0
    quantised = np.clip(np.rint(matrix / norms * _SCALE), -127, 127).astype(np.int8)
    return int(matrix.shape[1]).to_bytes(_HEADER, "little") + quantised.tobytes()


def unpack_tokens(blob: bytes) -> np.ndarray:
    """The unit-length rows :func:`pack_tokens` stored (float32, approximately)."""
    import numpy as np

    if len(blob) < _HEADER:
        raise StoreError("token states blob is truncated")
    dim = int.from_bytes(blob[:_HEADER], "little")
    body = len(blob) - _HEADER
    if dim == 0 or body % dim:
        raise StoreError(f"token states blob of {len(blob)} bytes does not hold rows of {dim}")
    rows = np.frombuffer(blob, dtype=np.int8, offset=_HEADER).reshape(-1, dim)
    out = rows.astype(np.float32) / _SCALE
    norms = np.linalg.norm(out, axis=1, keepdims=True)
    norms[norms == 0] = 1.0
    return out / norms


def maxsim(query: np.ndarray, doc: np.ndarray) -> float:
    """Mean over query tokens of the best cosine with any document token; 0.0 when either
    side has no tokens or their widths differ (a model change: no opinion)."""
    if query.size == 0 or doc.size == 0 or query.shape[1] != doc.shape[1]:
        return 0.0
    return float((query @ doc.T).max(axis=1).mean())


def rerank(
    ranked: Sequence[str],
    query_tokens: np.ndarray,
    stored: Mapping[str, bytes],
    depth: int = RERANK_DEPTH,
    stand_in: Collection[str] = (),
) -> list[str]:
    """``ranked`` with its first ``depth`` ids re-ordered by fusing their current order
    with their MaxSim order; the rest unchanged. An id without stored tokens (or with an
    unreadable blob) keeps only its share from the current order — unless it is in
    ``stand_in`` (exchanges with no vector at all, not embedded yet): those count at their
    current place in the MaxSim order too, neither pushed down nor lifted."""
    head = list(ranked[:depth])
    if query_tokens.size == 0 or len(head) < 2:
        return list(ranked)
    scores: dict[str, float] = {}
    for exchange_id in head:
        blob = stored.get(exchange_id)
        if blob is None:
            continue
        try:
            scores[exchange_id] = maxsim(query_tokens, unpack_tokens(blob))
        except StoreError:
            continue
    if not scores:
        return list(ranked)
    by_tokens = sorted(scores, key=lambda i: -scores[i])
    waiting = stand_in_ranks(head, {i for i in stand_in if i not in scores})
    fused = [i for i, _ in rrf([head, by_tokens], k=RERANK_K, stand_ins=[{}, waiting])]
    return fused + list(ranked[depth:])
