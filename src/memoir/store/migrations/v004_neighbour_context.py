"""v4: index documents carry a ``context`` column, an excerpt of the neighbouring
exchanges of the same session (see :mod:`memoir.store.index_doc`), searched at a low
weight. SQLite's FTS5 table is recreated with the fifth column; PostgreSQL's
``exchange_search`` gains ``context_doc``, folded into the stored tsvector at weight D
(with ``meta``: a tsvector has four weights). Every index row is rebuilt."""

from __future__ import annotations

from memoir.store.migrations.v002_search import tsvector_sql

__all__ = ["NAME", "POSTGRES", "REINDEX", "SQLITE", "VERSION"]

VERSION = 4
NAME = "index-neighbour-context"
REINDEX = True

SQLITE: tuple[str, ...] = (
    "DROP TABLE exchange_fts",
    """CREATE VIRTUAL TABLE exchange_fts USING fts5(
        user, assistant, tools, meta, context,
        tokenize = 'porter unicode61 remove_diacritics 2'
    )""",
)

POSTGRES: tuple[str, ...] = (
    "DELETE FROM exchange_search",
    "DROP INDEX exchange_search_tsv",
    "ALTER TABLE exchange_search DROP COLUMN tsv",
    "ALTER TABLE exchange_search ADD COLUMN context_doc TEXT NOT NULL DEFAULT ''",
    "ALTER TABLE exchange_search ADD COLUMN tsv TSVECTOR GENERATED ALWAYS AS ("
    + tsvector_sql(
        (
            ("user_doc", "A"),
            ("assistant_doc", "B"),
            ("tools_doc", "C"),
            ("meta_doc", "D"),
            ("context_doc", "D"),
        )
    )
    + ") STORED",
    "CREATE INDEX exchange_search_tsv ON exchange_search USING GIN (tsv)",
)
