"""Schema versions 17-25: secret re-scan, index rows folded in Python, owner indexes,
keyed items, session names, owner tokens, the embedding log on PostgreSQL, the item
vectors' embedder index, the owner's item lookup."""

from __future__ import annotations

import string

from memoir.store.codec import loads
from memoir.store.db import ACCENTED, PLAIN, Tx
from memoir.store.index_doc import owner_token
from memoir.store.migrations.v001_v006 import Migration
from memoir.store.migrations.v007_v013 import fts_body

# the folding table: ASCII punctuation to spaces, accented Latin letters to their base letter
_FROM = "'" + string.punctuation.replace("'", "''") + ACCENTED + "'"
_TO = "'" + " " * len(string.punctuation) + PLAIN + "'"

__all__ = [
    "V017_SECRET_RESCAN",
    "V018_INDEX_FOLDED_IN_PYTHON",
    "V019_OWNER_INDEXES",
    "V020_KEYED_ITEMS",
    "V021_SESSION_NAMES",
    "V022_OWNER_TOKENS",
    "V023_EMBEDDING_LOG_EVERYWHERE",
    "V024_ITEM_VECTOR_MODELS",
    "V025_ITEM_OWNER_LOOKUP",
    "plain_tsvector_sql",
    "refill_items",
]


# v17: where the re-scan of derived text with a newer secret detector has got to.
#
# One row per target (``checkpoints``, ``traces``, ``cache``, ``memory``, ``summaries``):
# the detector it was scanned with (:func:`memoir.secrets.detector_id`), the key the scan
# has passed (``cursor``), what it read and changed, and whether it is done. A detector
# that changes starts each target over. The archive and the events are never re-scanned:
# they keep the bytes.

_V017_TABLE = """CREATE TABLE secret_rescan (
    target TEXT PRIMARY KEY,
    detector TEXT NOT NULL,
    cursor TEXT NOT NULL DEFAULT '',
    scanned INTEGER NOT NULL DEFAULT 0,
    changed INTEGER NOT NULL DEFAULT 0,
    done INTEGER NOT NULL DEFAULT 0
)"""

_V017_SQLITE: tuple[str, ...] = (_V017_TABLE,)
_V017_POSTGRES: tuple[str, ...] = (_V017_TABLE,)

V017_SECRET_RESCAN = Migration(17, "secret-rescan", _V017_SQLITE, _V017_POSTGRES)

# v18: PostgreSQL's index documents are stored folded (ASCII punctuation as spaces,
# accents as their base letter: :func:`memoir.store.db.fold_index_text`, done in Python
# when a row is written), so the generated ``tsv`` column is the plain weighted
# ``to_tsvector`` of them. Until now the column folded them itself with ``translate()``
# over a 525-character table, which cost the server about nine tenths of an index row's
# write (issue 37). The stored rows are folded once here with that same ``translate()``, so
# every tsvector is unchanged. SQLite's FTS5 folds in its tokenizer: nothing to do there.


_V018_DOCS = ("user_doc", "assistant_doc", "tools_doc", "meta_doc", "context_doc")


def plain_tsvector_sql(parts: tuple[tuple[str, str], ...]) -> str:
    """The weighted tsvector expression over ``(column, weight)`` pairs of folded text."""
    return " || ".join(
        f"setweight(to_tsvector('english'::regconfig, {c}), '{w}')" for c, w in parts
    )


_V018_POSTGRES: tuple[str, ...] = (
    "DROP INDEX exchange_search_tsv",
    "ALTER TABLE exchange_search DROP COLUMN tsv",
    "UPDATE exchange_search SET "
    + ", ".join(f"{c} = translate({c}, {_FROM}, {_TO})" for c in _V018_DOCS),
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

V018_INDEX_FOLDED_IN_PYTHON = Migration(18, "postgres-index-folded-in-python", (), _V018_POSTGRES)

# v19: an index on each owner column a list is read by. Every list of a user's sessions
# (the recent list, its total and its project facet, prefix lookups) starts from
# ``sessions.user_name``; a user's usage report from ``usage.user_name`` and from the
# calls made for the user's sessions (``usage.session_id``). Without these
# indexes each of those reads scans every user's rows. Memory items (``memory_items_owner``,
# v13) and jobs (``jobs_session``, v11) lead with their owner already.
_V019_STATEMENTS: tuple[str, ...] = (
    "CREATE INDEX sessions_owner ON sessions(user_name, project)",
    "CREATE INDEX usage_owner ON usage(user_name, at)",
    "CREATE INDEX usage_session ON usage(session_id, at)",
)

V019_OWNER_INDEXES = Migration(19, "owner-indexes", _V019_STATEMENTS, _V019_STATEMENTS)

# v20: keyed items — JSON values a program keeps under a namespace and a key, for one
# owner (what LangGraph's ``BaseStore`` holds; :mod:`memoir.memory.keyed`).
#
# ``keyed_items`` holds the value as JSON text (ASCII-escaped, so any string round-trips,
# NUL and lone surrogates included), the text its search ranks on (``body``), when it was
# made and last changed, and the body's vector by the home's embedder (``vector_model``
# names it; made when a search first needs it, cleared by a put). A namespace is stored as
# its labels joined by ``.`` (a label holds no ``.``), so a namespace prefix is a text
# prefix. SQLite keeps a ``keyed_fts``
# FTS5 table in step (an item's index row is its ``fts_row``, removed with it by a
# trigger); PostgreSQL a generated ``tsv`` column over the body, folded in Python as the
# exchange index is (v18).


def _v020_table(time: str, blob: str) -> str:
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


_V020_SQLITE: tuple[str, ...] = (
    _v020_table("TEXT", "BLOB"),
    "ALTER TABLE keyed_items ADD COLUMN fts_row INTEGER",
    "CREATE UNIQUE INDEX keyed_items_fts_row ON keyed_items(fts_row)",
    "CREATE INDEX keyed_items_newest ON keyed_items(owner, updated_at)",
    "CREATE VIRTUAL TABLE keyed_fts USING fts5(body, tokenize = 'unicode61 remove_diacritics 2')",
    "CREATE TRIGGER keyed_items_fts_delete AFTER DELETE ON keyed_items BEGIN "
    "DELETE FROM keyed_fts WHERE rowid = old.fts_row; END",
)

_V020_POSTGRES: tuple[str, ...] = (
    _v020_table("TIMESTAMPTZ", "BYTEA"),
    "CREATE INDEX keyed_items_newest ON keyed_items(owner, updated_at)",
    "ALTER TABLE keyed_items ADD COLUMN tsv TSVECTOR GENERATED ALWAYS AS ("
    "to_tsvector('english'::regconfig, body)) STORED",
    "CREATE INDEX keyed_items_tsv ON keyed_items USING GIN (tsv)",
)

V020_KEYED_ITEMS = Migration(20, "keyed-items", _V020_SQLITE, _V020_POSTGRES)

# v21: ``sessions.name``, the id a client chose for a session it fed. Such a session is
# stored under a digest of its user and that name (``memoir.model.event.named_session_id``),
# so session names are per user; the name is kept to be shown back (listings, the session).
# Sessions stored before keep their id and have no name: their id still works everywhere.
_V021_STATEMENTS: tuple[str, ...] = (
    "ALTER TABLE sessions ADD COLUMN name TEXT",
    # a poll finds the caller's session by its name in the same statement as the key
    "CREATE INDEX sessions_user_name_name ON sessions (user_name, name)",
)

V021_SESSION_NAMES = Migration(21, "session-names", _V021_STATEMENTS, _V021_STATEMENTS)

# v22: every full-text index row names its owner, so a user's text search and recall
# intersect the index with that user's rows instead of matching every user's rows and
# dropping the others' after (issue 37: reads cost only the caller's data).
#
# - SQLite: ``exchange_fts`` is recreated with a sixth column, ``owner`` (the session's
#   user as :func:`~memoir.store.index_doc.owner_token`, weighted 0), and every exchange
#   row is rebuilt (``REINDEX``); ``memory_fts`` is recreated with an ``owner`` column and
#   refilled from the items (:func:`refill_items`).
# - PostgreSQL: ``exchange_search`` gains ``owner_doc`` (the user name) and its generated
#   ``tsv`` adds the :func:`~memoir.store.index_doc.owner_lexeme` of it, without a position
#   (every exchange row is rebuilt); ``memory_items.tsv`` adds the lexeme of the item's
#   ``owner``. Both GIN indexes are rebuilt over the new columns.
#
# The lexeme starts with ``#`` and SQLite's column weighs nothing, so no query text matches
# an owner: the index only narrows. ``memory_items_owner_newest`` reads an owner's newest
# items in order (the memories list's first page) instead of all of them and a sort.


_V022_PAGE = 2000

_V022_NEWEST = "CREATE INDEX memory_items_owner_newest ON memory_items(owner, created_at)"

_V022_SQLITE: tuple[str, ...] = (
    _V022_NEWEST,
    "DROP TABLE exchange_fts",
    """CREATE VIRTUAL TABLE exchange_fts USING fts5(
        user, assistant, tools, meta, context, owner,
        tokenize = 'porter unicode61 remove_diacritics 2'
    )""",
    "DROP TABLE memory_fts",
    "CREATE VIRTUAL TABLE memory_fts USING fts5(body, owner, "
    "tokenize = 'unicode61 remove_diacritics 2')",
)

_V022_POSTGRES: tuple[str, ...] = (
    _V022_NEWEST,
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
            (last, _V022_PAGE),
        )
        for fts_row, content, keys, owner in rows:
            tx.run(
                "INSERT INTO memory_fts (rowid, body, owner) VALUES (?, ?, ?)",
                (int(fts_row), fts_body(content, loads(keys) or ()), owner_token(owner)),
            )
        if len(rows) < _V022_PAGE:
            return
        last = int(rows[-1][0])


V022_OWNER_TOKENS = Migration(
    22, "owner-tokens", _V022_SQLITE, _V022_POSTGRES, reindex=True, sqlite_after=refill_items
)

# v23: the change log of v7 on PostgreSQL too, and a mark of how far it was pruned.
#
# A replica keeps each model's vector matrix in memory and reads the model's generation
# (v6) on every search. Without a log, a PostgreSQL replica whose generation was behind
# read every user's vectors again after any user's write. Now the v6 trigger function also
# appends ``(model, exchange_id)`` to ``embedding_changes`` for every row it counts, in the
# writing transaction, so a replica reads only the changed rows
# (:mod:`memoir.search.live_matrix`).
#
# Order: the function raises the model's generation *before* it takes a sequence number.
# That upsert locks the model's generation row until the writer commits, so two writers of
# one model take their numbers in commit order, and a reader that has seen number ``n``
# committed never later finds a smaller one (sequences alone commit out of order).
#
# ``embedding_generations.pruned`` (both backends): log entries of the model up to this
# number were deleted. A reader whose matrix was read at a log position below it cannot be
# patched and reads whole (:meth:`memoir.store.parts.EmbeddingsPart.prune`).
_V023_SQLITE: tuple[str, ...] = (
    "ALTER TABLE embedding_generations ADD COLUMN pruned INTEGER NOT NULL DEFAULT 0",
)

_V023_POSTGRES: tuple[str, ...] = (
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

V023_EMBEDDING_LOG_EVERYWHERE = Migration(
    23, "embedding-log-everywhere", _V023_SQLITE, _V023_POSTGRES
)

# v24: which embedders items have vectors of, read from an index. The guard against the
# test embedder in a home of real vectors asks it on every recall; a DISTINCT over
# ``memory_vectors`` read every user's item vectors for it. With the index the read seeks
# it once per embedder (:meth:`memoir.memory.item_store.MemoryItemsPart.vector_models`),
# whoever holds the rows.
_V024_STATEMENTS: tuple[str, ...] = (
    "CREATE INDEX memory_vectors_embedder ON memory_vectors(embedder)",
)

V024_ITEM_VECTOR_MODELS = Migration(24, "item-vector-models", _V024_STATEMENTS, _V024_STATEMENTS)

# v25: a user's lookup of an item by id seeks (owner, id). With only the primary key, the
# lookup of another user's item found its row and then dropped it for the owner, while a
# missing id found nothing: the two took measurably different times (a timing test saw it
# on SQLite). Unique, so SQLite's planner prefers it to the key for ``id = ? AND owner = ?``;
# both now miss in the same index. An id prefix lookup reads only this index for the owner.
_V025_STATEMENTS: tuple[str, ...] = (
    "CREATE UNIQUE INDEX memory_items_owner_id ON memory_items(owner, id)",
)

V025_ITEM_OWNER_LOOKUP = Migration(25, "item-owner-lookup", _V025_STATEMENTS, _V025_STATEMENTS)
