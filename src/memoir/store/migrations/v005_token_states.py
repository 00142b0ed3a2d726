"""v5: an exchange's stored vector may carry its token states (``embeddings.tokens``):
the packed per-token rows that late-interaction re-ranking reads
(:mod:`memoir.search.ranking`). NULL for rows written before v5 and for embedders without
token states; ``memoir embed`` fills them in for embedders that have them. The column
lives on the vector's row, so every path that drops a stale vector drops its tokens too."""

from __future__ import annotations

__all__ = ["NAME", "POSTGRES", "REINDEX", "SQLITE", "VERSION"]

VERSION = 5
NAME = "embedding-token-states"
REINDEX = False

SQLITE: tuple[str, ...] = ("ALTER TABLE embeddings ADD COLUMN tokens BLOB",)

POSTGRES: tuple[str, ...] = ("ALTER TABLE embeddings ADD COLUMN tokens BYTEA",)
