"""v20: keyed items — JSON values a program keeps under a namespace and a key, for one
owner (what LangGraph's ``BaseStore`` holds; :mod:`memoir.memory.keyed`).

``keyed_items`` holds the value as JSON text (ASCII-escaped, so any string round-trips,
NUL and lone surrogates included), the text its search ranks on (``body``), when it was
made and last changed, and the body's vector by the home's embedder (``vector_model``
names it; made when a search first needs it, cleared by a put). A namespace is stored as
its labels joined by ``.`` (a label holds no ``.``), so a namespace prefix is a text
prefix. SQLite keeps a ``keyed_fts``
FTS5 table in step (an item's index row is its ``fts_row``, removed with it by a
trigger); PostgreSQL a generated ``tsv`` column over the body, folded in Python as the
exchange index is (v18)."""

from __future__ import annotations

__all__ = ["NAME", "POSTGRES", "REINDEX", "SQLITE", "VERSION"]

VERSION = 20
NAME = "keyed-items"
REINDEX = False


def _table(time: str, blob: str) -> str:
    return f"""CREATE TABLE keyed_items (
        owner TEXT NOT NULL,
        namespace TEXT NOT NULL,
        key TEXT NOT NULL,
        value TEXT NOT NULL,
        body TEXT NOT NULL DEFAULT '',
        created_at {time} NOT NULL,
        updated_at {time} NOT NULL,
        vector_model TEXT NOT NULL DEFAULT '',
        vector {blob},
        PRIMARY KEY (owner, namespace, key)
    )"""


SQLITE: tuple[str, ...] = (
    _table("TEXT", "BLOB"),
    "ALTER TABLE keyed_items ADD COLUMN fts_row INTEGER",
    "CREATE UNIQUE INDEX keyed_items_fts_row ON keyed_items(fts_row)",
    "CREATE INDEX keyed_items_newest ON keyed_items(owner, updated_at)",
    "CREATE VIRTUAL TABLE keyed_fts USING fts5(body, tokenize = 'unicode61 remove_diacritics 2')",
    "CREATE TRIGGER keyed_items_fts_delete AFTER DELETE ON keyed_items BEGIN "
    "DELETE FROM keyed_fts WHERE rowid = old.fts_row; END",
)

POSTGRES: tuple[str, ...] = (
    _table("TIMESTAMPTZ", "BYTEA"),
    "CREATE INDEX keyed_items_newest ON keyed_items(owner, updated_at)",
    "ALTER TABLE keyed_items ADD COLUMN tsv TSVECTOR GENERATED ALWAYS AS ("
    "to_tsvector('english'::regconfig, body)) STORED",
    "CREATE INDEX keyed_items_tsv ON keyed_items USING GIN (tsv)",
)
