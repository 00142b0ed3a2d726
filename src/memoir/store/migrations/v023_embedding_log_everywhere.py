"""v23: the change log of v7 on PostgreSQL too, and a mark of how far it was pruned.

A replica keeps each model's vector matrix in memory and reads the model's generation
(v6) on every search. Without a log, a PostgreSQL replica whose generation was behind
read every user's vectors again after any user's write. Now the v6 trigger function also
appends ``(model, exchange_id)`` to ``embedding_changes`` for every row it counts, in the
writing transaction, so a replica reads only the changed rows
(:mod:`memoir.search.live_matrix`).

Order: the function raises the model's generation *before* it takes a sequence number.
That upsert locks the model's generation row until the writer commits, so two writers of
one model take their numbers in commit order, and a reader that has seen number ``n``
committed never later finds a smaller one (sequences alone commit out of order).

``embedding_generations.pruned`` (both backends): log entries of the model up to this
number were deleted. A reader whose matrix was read at a log position below it cannot be
patched and reads whole (:meth:`memoir.store.parts.EmbeddingsPart.prune`).
"""

from __future__ import annotations

__all__ = ["NAME", "POSTGRES", "REINDEX", "SQLITE", "VERSION"]

VERSION = 23
NAME = "embedding-log-everywhere"
REINDEX = False

SQLITE: tuple[str, ...] = (
    "ALTER TABLE embedding_generations ADD COLUMN pruned INTEGER NOT NULL DEFAULT 0",
)

POSTGRES: tuple[str, ...] = (
    "ALTER TABLE embedding_generations ADD COLUMN pruned BIGINT NOT NULL DEFAULT 0",
    "CREATE INDEX embedding_changes_model ON embedding_changes (model, seq)",
    """CREATE OR REPLACE FUNCTION memoir_embedding_generation() RETURNS trigger AS $$
    BEGIN
        INSERT INTO embedding_generations (model, generation)
        VALUES (CASE WHEN TG_OP = 'DELETE' THEN OLD.model ELSE NEW.model END, 1)
        ON CONFLICT (model) DO UPDATE SET generation = embedding_generations.generation + 1;
        IF TG_OP = 'UPDATE' AND (OLD.model, OLD.exchange_id) IS DISTINCT FROM
                (NEW.model, NEW.exchange_id) THEN
            INSERT INTO embedding_generations (model, generation) VALUES (OLD.model, 1)
            ON CONFLICT (model) DO UPDATE
            SET generation = embedding_generations.generation + 1;
            INSERT INTO embedding_changes (model, exchange_id)
            VALUES (OLD.model, OLD.exchange_id);
        END IF;
        IF TG_OP = 'DELETE' THEN
            INSERT INTO embedding_changes (model, exchange_id) VALUES (OLD.model, OLD.exchange_id);
        ELSE
            INSERT INTO embedding_changes (model, exchange_id) VALUES (NEW.model, NEW.exchange_id);
        END IF;
        RETURN NULL;
    END
    $$ LANGUAGE plpgsql""",
)
