"""v8: PostgreSQL's index folds accents as SQLite's does (``café`` is found by ``cafe`` and
the other way round). The generated ``tsv`` column is rebuilt over the documents with
accented Latin letters turned into their base letter (:mod:`memoir.store.db`, through
``translate()`` — immutable, no extension) on top of v2's punctuation-as-spaces; queries
are folded the same way. SQLite's FTS5 already folds (``remove_diacritics 2``): nothing to
do there. The documents themselves (what snippets quote) are unchanged."""

from __future__ import annotations

import string

from memoir.store.db import ACCENTED, PLAIN

__all__ = ["NAME", "POSTGRES", "REINDEX", "SQLITE", "VERSION", "folded_tsvector_sql"]

VERSION = 8
NAME = "postgres-accent-folding"
REINDEX = False

_FROM = "'" + string.punctuation.replace("'", "''") + ACCENTED + "'"
_TO = "'" + " " * len(string.punctuation) + PLAIN + "'"


def _tsv(column: str, weight: str) -> str:
    return (
        f"setweight(to_tsvector('english'::regconfig, translate({column}, {_FROM}, {_TO})), "
        f"'{weight}')"
    )


def folded_tsvector_sql(parts: tuple[tuple[str, str], ...]) -> str:
    """The weighted, accent-folded tsvector expression over ``(column, weight)`` pairs."""
    return " || ".join(_tsv(c, w) for c, w in parts)


SQLITE: tuple[str, ...] = ()

POSTGRES: tuple[str, ...] = (
    "DROP INDEX exchange_search_tsv",
    "ALTER TABLE exchange_search DROP COLUMN tsv",
    "ALTER TABLE exchange_search ADD COLUMN tsv TSVECTOR GENERATED ALWAYS AS ("
    + folded_tsvector_sql(
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
