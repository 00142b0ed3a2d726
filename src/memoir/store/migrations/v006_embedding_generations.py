"""v6: a generation number per embedding model, raised by triggers on every insert and
delete of an ``embeddings`` row and every update of its vector (whatever path writes it:
``memoir embed``, an exchange that grew and lost its vector, a deleted session; filling in
token states alone leaves it). A process holding the vector matrix in
memory, or a matrix file cached beside the database, knows it is current exactly when the
generation it was read at is still the model's (:mod:`memoir.search.vectors`). A model
with no row here is at generation 0: the state the migration found."""

from __future__ import annotations

__all__ = ["NAME", "POSTGRES", "REINDEX", "SQLITE", "VERSION"]

VERSION = 6
NAME = "embedding-generations"
REINDEX = False


def _sqlite_trigger(event: str, row: str) -> str:
    name = event.split()[0].lower()
    return (
        f"CREATE TRIGGER embeddings_generation_{name} AFTER {event} ON embeddings "
        "BEGIN INSERT INTO embedding_generations (model, generation) "
        f"VALUES ({row}.model, 1) ON CONFLICT (model) DO UPDATE SET generation = generation + 1;"
        " END"
    )


SQLITE: tuple[str, ...] = (
    """CREATE TABLE embedding_generations (
        model TEXT PRIMARY KEY,
        generation INTEGER NOT NULL
    )""",
    _sqlite_trigger("INSERT", "NEW"),
    _sqlite_trigger("UPDATE OF model, exchange_id, dim, vec", "NEW"),
    _sqlite_trigger("DELETE", "OLD"),
)

POSTGRES: tuple[str, ...] = (
    """CREATE TABLE embedding_generations (
        model TEXT PRIMARY KEY,
        generation BIGINT NOT NULL
    )""",
    """CREATE FUNCTION memoir_embedding_generation() RETURNS trigger AS $$
    BEGIN
        INSERT INTO embedding_generations (model, generation)
        VALUES (CASE WHEN TG_OP = 'DELETE' THEN OLD.model ELSE NEW.model END, 1)
        ON CONFLICT (model) DO UPDATE SET generation = embedding_generations.generation + 1;
        RETURN NULL;
    END
    $$ LANGUAGE plpgsql""",
    """CREATE TRIGGER embeddings_generation
    AFTER INSERT OR DELETE OR UPDATE OF model, exchange_id, dim, vec ON embeddings
    FOR EACH ROW EXECUTE FUNCTION memoir_embedding_generation()""",
)
