"""v7: a log of which exchanges' vectors changed, per embedding model, so a vector matrix
cached in a file is brought up to date from the rows that changed instead of read again
whole (:mod:`memoir.search.vectors`: at 1M exchanges a whole read took ~15 s, and every
background catch-up caused one).

SQLite only: triggers beside v6's generation triggers append ``(model, exchange_id)`` for
every insert and delete of an ``embeddings`` row and every update of its vector (token
states filled in alone leave it, as they leave the generation). A process that writes a
full matrix file records the log's end with it and drops what it covers. PostgreSQL keeps
no matrix files, so nothing would read or trim a log there: the table exists (one schema),
no trigger fills it.
"""

from __future__ import annotations

__all__ = ["NAME", "POSTGRES", "REINDEX", "SQLITE", "VERSION"]

VERSION = 7
NAME = "embedding-changes"
REINDEX = False


def _log(event: str, rows: tuple[str, ...]) -> str:
    name = event.split()[0].lower()
    inserts = " ".join(
        f"INSERT INTO embedding_changes (model, exchange_id) "
        f"VALUES ({row}.model, {row}.exchange_id);"
        for row in rows
    )
    head = f"CREATE TRIGGER embeddings_change_{name} AFTER {event} ON embeddings"
    return f"{head} BEGIN {inserts} END"


SQLITE: tuple[str, ...] = (
    """CREATE TABLE embedding_changes (
        seq INTEGER PRIMARY KEY AUTOINCREMENT,
        model TEXT NOT NULL,
        exchange_id TEXT NOT NULL
    )""",
    "CREATE INDEX embedding_changes_model ON embedding_changes (model, seq)",
    _log("INSERT", ("NEW",)),
    _log("UPDATE OF model, exchange_id, dim, vec", ("OLD", "NEW")),
    _log("DELETE", ("OLD",)),
)

POSTGRES: tuple[str, ...] = (
    """CREATE TABLE embedding_changes (
        seq BIGSERIAL PRIMARY KEY,
        model TEXT NOT NULL,
        exchange_id TEXT NOT NULL
    )""",
)
