"""v18: PostgreSQL's index documents are stored folded (ASCII punctuation as spaces,
accents as their base letter: :func:`memoir.store.db.fold_index_text`, done in Python
when a row is written), so the generated ``tsv`` column is the plain weighted
``to_tsvector`` of them. Until now the column folded them itself with ``translate()``
over a 525-character table, which cost the server about nine tenths of an index row's
write (issue 37). The stored rows are folded once here with that same ``translate()``, so
every tsvector is unchanged. SQLite's FTS5 folds in its tokenizer: nothing to do there."""

from __future__ import annotations

import string

from memoir.store.db import ACCENTED, PLAIN

__all__ = ["NAME", "POSTGRES", "REINDEX", "SQLITE", "VERSION", "plain_tsvector_sql"]

VERSION = 18
NAME = "postgres-index-folded-in-python"
REINDEX = False

_FROM = "'" + string.punctuation.replace("'", "''") + ACCENTED + "'"
_TO = "'" + " " * len(string.punctuation) + PLAIN + "'"
_DOCS = ("user_doc", "assistant_doc", "tools_doc", "meta_doc", "context_doc")


def plain_tsvector_sql(parts: tuple[tuple[str, str], ...]) -> str:
    """The weighted tsvector expression over ``(column, weight)`` pairs of folded text."""
    return " || ".join(
        f"setweight(to_tsvector('english'::regconfig, {c}), '{w}')" for c, w in parts
    )


SQLITE: tuple[str, ...] = ()

POSTGRES: tuple[str, ...] = (
    "DROP INDEX exchange_search_tsv",
    "ALTER TABLE exchange_search DROP COLUMN tsv",
    "UPDATE exchange_search SET "
    + ", ".join(f"{c} = translate({c}, {_FROM}, {_TO})" for c in _DOCS),
    "ALTER TABLE exchange_search ADD COLUMN tsv TSVECTOR GENERATED ALWAYS AS ("
    + plain_tsvector_sql(
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
