"""v9: each stored vector records the recipe of the text it was computed from
(``embeddings.recipe``: :data:`memoir.store.index_doc.EMBED_RECIPE` when written), so a
vector embedded from an older recipe — before the tool excerpt joined the embedded text,
say — is recomputed instead of kept for ever. Rows written before v9 get recipe 1 ("from
before recipes were recorded"): the embed catch-up recomputes them once, after the
exchanges that have no vector at all. The index on ``(model, recipe)`` lets the catch-up
find the stale rows without scanning the ones already redone."""

from __future__ import annotations

__all__ = ["NAME", "POSTGRES", "REINDEX", "SQLITE", "VERSION"]

VERSION = 9
NAME = "embedding-recipe"
REINDEX = False

_STATEMENTS: tuple[str, ...] = (
    "ALTER TABLE embeddings ADD COLUMN recipe INTEGER NOT NULL DEFAULT 1",
    "CREATE INDEX embeddings_recipe ON embeddings (model, recipe)",
)

SQLITE: tuple[str, ...] = _STATEMENTS

POSTGRES: tuple[str, ...] = _STATEMENTS
