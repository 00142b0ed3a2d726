"""v22: every full-text index row names its owner, so a user's text search and recall
intersect the index with that user's rows instead of matching every user's rows and
dropping the others' after (issue 37: reads cost only the caller's data).

- SQLite: ``exchange_fts`` is recreated with a sixth column, ``owner`` (the session's
  user as :func:`~memoir.store.index_doc.owner_token`, weighted 0), and every exchange
  row is rebuilt (``REINDEX``); ``memory_fts`` is recreated with an ``owner`` column and
  refilled from the items (:func:`refill_items`).
- PostgreSQL: ``exchange_search`` gains ``owner_doc`` (the user name) and its generated
  ``tsv`` adds the :func:`~memoir.store.index_doc.owner_lexeme` of it, without a position
  (every exchange row is rebuilt); ``memory_items.tsv`` adds the lexeme of the item's
  ``owner``. Both GIN indexes are rebuilt over the new columns.

The lexeme starts with ``#`` and SQLite's column weighs nothing, so no query text matches
an owner: the index only narrows. ``memory_items_owner_newest`` reads an owner's newest
items in order (the memories list's first page) instead of all of them and a sort."""

from __future__ import annotations

import string

from memoir.store.codec import loads
from memoir.store.db import ACCENTED, PLAIN, Tx
from memoir.store.index_doc import owner_token
from memoir.store.migrations.v013_memory_recall import fts_body
from memoir.store.migrations.v018_index_folded_in_python import plain_tsvector_sql

__all__ = ["NAME", "POSTGRES", "REINDEX", "SQLITE", "VERSION", "refill_items"]

VERSION = 22
NAME = "owner-tokens"
REINDEX = True

_FROM = "'" + string.punctuation.replace("'", "''") + ACCENTED + "'"
_TO = "'" + " " * len(string.punctuation) + PLAIN + "'"
_PAGE = 2000

_NEWEST = "CREATE INDEX memory_items_owner_newest ON memory_items(owner, created_at)"

SQLITE: tuple[str, ...] = (
    _NEWEST,
    "DROP TABLE exchange_fts",
    """CREATE VIRTUAL TABLE exchange_fts USING fts5(
        user, assistant, tools, meta, context, owner,
        tokenize = 'porter unicode61 remove_diacritics 2'
    )""",
    "DROP TABLE memory_fts",
    "CREATE VIRTUAL TABLE memory_fts USING fts5(body, owner, "
    "tokenize = 'unicode61 remove_diacritics 2')",
)

POSTGRES: tuple[str, ...] = (
    _NEWEST,
    "DELETE FROM exchange_search",
    "DROP INDEX exchange_search_tsv",
    "ALTER TABLE exchange_search DROP COLUMN tsv",
    "ALTER TABLE exchange_search ADD COLUMN owner_doc TEXT NOT NULL DEFAULT ''",
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
    + " || array_to_tsvector(ARRAY['#' || owner_doc])) STORED",
    "CREATE INDEX exchange_search_tsv ON exchange_search USING GIN (tsv)",
    "DROP INDEX memory_items_tsv",
    "ALTER TABLE memory_items DROP COLUMN tsv",
    "ALTER TABLE memory_items ADD COLUMN tsv TSVECTOR GENERATED ALWAYS AS ("
    f"to_tsvector('english'::regconfig, translate(content || ' ' || keys, {_FROM}, {_TO}))"
    " || array_to_tsvector(ARRAY['#' || owner])) STORED",
    "CREATE INDEX memory_items_tsv ON memory_items USING GIN (tsv)",
)


def refill_items(tx: Tx) -> None:
    """SQLite: one ``memory_fts`` row per item that has one (its ``fts_row``), with its
    owner's token."""
    last = -1
    while True:
        rows = tx.run(
            "SELECT fts_row, content, keys, owner FROM memory_items WHERE fts_row > ? "
            "ORDER BY fts_row LIMIT ?",
            (last, _PAGE),
        )
        for fts_row, content, keys, owner in rows:
            tx.run(
                "INSERT INTO memory_fts (rowid, body, owner) VALUES (?, ?, ?)",
                (int(fts_row), fts_body(content, loads(keys) or ()), owner_token(owner)),
            )
        if len(rows) < _PAGE:
            return
        last = int(rows[-1][0])
