"""v13: memory that gets used — merge, supersede, forget and recall.

``memory_items`` gains:

- ``owner`` (the session's user) and ``scope_key`` (the project for a project-scoped
  item, ``''`` for a global one): what an item is unique within;
- ``key_sig``: the item's keys, sorted and joined (indexed: a new item with the same key
  set as a live one merges into it when the two say the same thing, see
  :mod:`memoir.memory.near`); two live items of one owner and scope never share their
  normalized content (a partial unique index), so concurrent extractions of one fact end
  as one item (the loser of the race merges);
- ``first_observed_at`` (the earliest quote's time; ``observed_at`` stays the latest) and
  the validity interval ``valid_from`` / ``valid_until`` (closed when superseded).

``memory_sources`` gains ``operation_id`` (the operation that added the quote, so a
merged item is part of the answer of every operation that proposed it).
``memory_tombstones`` holds the fingerprints of forgotten evidence (never extracted
again); ``memory_vectors`` an item's embedding per embedder; SQLite's ``memory_fts`` (and
PostgreSQL's generated ``tsv`` column) the full-text index recall ranks with.

Existing live duplicates (the same normalized content) are merged first
(:func:`repair`): the oldest item of a group keeps its id and takes the others' quotes.
"""

from __future__ import annotations

import string
from collections import defaultdict
from typing import Any

from memoir.store.codec import loads
from memoir.store.db import ACCENTED, PLAIN, Tx
from memoir.store.memory_rows import key_sig

__all__ = ["NAME", "POSTGRES", "REINDEX", "SQLITE", "VERSION", "fts_body", "repair"]

VERSION = 13
NAME = "memory-recall"
REINDEX = False


def _columns(time: str) -> tuple[str, ...]:
    return (
        "ALTER TABLE memory_items ADD COLUMN owner TEXT NOT NULL DEFAULT ''",
        "ALTER TABLE memory_items ADD COLUMN scope_key TEXT NOT NULL DEFAULT ''",
        "ALTER TABLE memory_items ADD COLUMN key_sig TEXT NOT NULL DEFAULT ''",
        f"ALTER TABLE memory_items ADD COLUMN first_observed_at {time}",
        f"ALTER TABLE memory_items ADD COLUMN valid_from {time}",
        f"ALTER TABLE memory_items ADD COLUMN valid_until {time}",
        "ALTER TABLE memory_sources ADD COLUMN operation_id TEXT NOT NULL DEFAULT ''",
        "ALTER TABLE memory_items ADD COLUMN fts_row INTEGER",
        "UPDATE memory_items SET owner = COALESCE((SELECT s.user_name FROM sessions s "
        "WHERE s.id = memory_items.session_id), 'local')",
        "UPDATE memory_items SET scope_key = CASE WHEN scope = 'project' THEN project "
        "ELSE '' END, first_observed_at = observed_at, "
        "valid_from = COALESCE(observed_at, created_at)",
        "UPDATE memory_sources SET operation_id = COALESCE((SELECT i.operation_id FROM "
        "memory_items i WHERE i.id = memory_sources.item_id), '')",
        f"""CREATE TABLE memory_tombstones (
            owner TEXT NOT NULL,
            fingerprint TEXT NOT NULL,
            created_at {time} NOT NULL,
            PRIMARY KEY (owner, fingerprint)
        )""",
        "CREATE INDEX memory_items_owner ON memory_items(owner, scope_key, kind)",
        "CREATE INDEX memory_items_newest ON memory_items(created_at)",
        "CREATE INDEX memory_items_kind_newest ON memory_items(kind, created_at)",
        "CREATE INDEX memory_items_superseded ON memory_items(superseded_by)",
    )


_FROM = "'" + string.punctuation.replace("'", "''") + ACCENTED + "'"
_TO = "'" + " " * len(string.punctuation) + PLAIN + "'"

SQLITE: tuple[str, ...] = (
    *_columns("TEXT"),
    """CREATE TABLE memory_vectors (
        item_id TEXT NOT NULL,
        embedder TEXT NOT NULL,
        vector BLOB NOT NULL,
        PRIMARY KEY (item_id, embedder)
    )""",
    # the index row of an item is the item's fts_row (a key of its own: rowids of a table
    # with a TEXT primary key may change on VACUUM); looked up through a unique index
    "CREATE VIRTUAL TABLE memory_fts USING fts5(body, tokenize = 'unicode61 remove_diacritics 2')",
    "CREATE UNIQUE INDEX memory_items_fts_row ON memory_items(fts_row)",
    # however an item goes (forgotten, its session deleted), its index row goes with it
    "CREATE TRIGGER memory_items_fts_delete AFTER DELETE ON memory_items BEGIN "
    "DELETE FROM memory_fts WHERE rowid = old.fts_row; END",
)

POSTGRES: tuple[str, ...] = (
    *_columns("TIMESTAMPTZ"),
    """CREATE TABLE memory_vectors (
        item_id TEXT NOT NULL,
        embedder TEXT NOT NULL,
        vector BYTEA NOT NULL,
        PRIMARY KEY (item_id, embedder)
    )""",
    "ALTER TABLE memory_items ADD COLUMN tsv TSVECTOR GENERATED ALWAYS AS ("
    f"to_tsvector('english'::regconfig, translate(content || ' ' || keys, {_FROM}, {_TO}))"
    ") STORED",
    "CREATE INDEX memory_items_tsv ON memory_items USING GIN (tsv)",
)

UNIQUE: tuple[str, ...] = (
    "CREATE UNIQUE INDEX memory_items_live_normalized ON memory_items(owner, scope_key, "
    "normalized) WHERE superseded_by IS NULL",
    "CREATE INDEX memory_items_live_keys ON memory_items(owner, scope_key, key_sig) "
    "WHERE superseded_by IS NULL",
)


def _find(parent: dict[str, str], x: str) -> str:
    while parent[x] != x:
        parent[x] = parent[parent[x]]
        x = parent[x]
    return x


def repair(tx: Tx, *, fts: bool) -> None:
    """Key signatures for every item, live duplicates (same normalized content) merged
    into the oldest of their group (quotes moved, observed range widened, pointers to them
    redirected), then the indexes and (SQLite) the full-text rows."""
    rows = tx.run(
        "SELECT id, keys, owner, scope_key, normalized, superseded_by, created_at, "
        "observed_at, first_observed_at, content FROM memory_items ORDER BY created_at, id"
    )
    for r in rows:
        tx.run(
            "UPDATE memory_items SET key_sig = ? WHERE id = ?", (key_sig(loads(r[1]) or ()), r[0])
        )
    live = [r for r in rows if r[5] is None]
    parent = {r[0]: r[0] for r in live}
    first: dict[tuple[str, ...], str] = {}
    for r in live:
        for key in ((r[2], r[3], r[4]),):
            if key in first:
                a, b = _find(parent, first[key]), _find(parent, r[0])
                if a != b:  # the older (first seen) stays the root
                    parent[b] = a
            else:
                first[key] = r[0]
    groups: dict[str, list[str]] = defaultdict(list)
    for r in live:
        root = _find(parent, r[0])
        if root != r[0]:
            groups[root].append(r[0])
    for root, losers in groups.items():
        have = {
            (s, int(o), q)
            for s, o, q in tx.run(
                "SELECT session_id, ordinal, quote FROM memory_sources WHERE item_id = ?", (root,)
            )
        }
        n = int(
            tx.run("SELECT COALESCE(max(n), -1) FROM memory_sources WHERE item_id = ?", (root,))[0][
                0
            ]
        )
        for loser in losers:
            for sid, ordinal, quote, op in tx.run(
                "SELECT session_id, ordinal, quote, operation_id FROM memory_sources "
                "WHERE item_id = ? ORDER BY n",
                (loser,),
            ):
                if (sid, int(ordinal), quote) in have:
                    continue
                have.add((sid, int(ordinal), quote))
                n += 1
                tx.run(
                    "INSERT INTO memory_sources (item_id, n, session_id, ordinal, quote, "
                    "operation_id) VALUES (?, ?, ?, ?, ?, ?)",
                    (root, n, sid, ordinal, quote, op),
                )
            tx.run(
                "UPDATE memory_items SET observed_at = (SELECT max(observed_at) FROM "
                "memory_items WHERE id IN (?, ?)), first_observed_at = (SELECT "
                "min(first_observed_at) FROM memory_items WHERE id IN (?, ?)) WHERE id = ?",
                (root, loser, root, loser, root),
            )
            tx.run(
                "UPDATE memory_items SET superseded_by = ? WHERE superseded_by = ?", (root, loser)
            )
            tx.run("DELETE FROM memory_sources WHERE item_id = ?", (loser,))
            tx.run("DELETE FROM memory_items WHERE id = ?", (loser,))
    for statement in UNIQUE:
        tx.run(statement)
    if fts:
        items = tx.run("SELECT id, content, keys FROM memory_items ORDER BY created_at, id")
        for n, (item_id, content, keys) in enumerate(items, start=1):
            tx.run("UPDATE memory_items SET fts_row = ? WHERE id = ?", (n, item_id))
            tx.run(
                "INSERT INTO memory_fts (rowid, body) VALUES (?, ?)",
                (n, fts_body(content, loads(keys) or ())),
            )


def fts_body(content: str, keys: Any) -> str:
    """What SQLite's full-text index holds for an item: its content and its keys."""
    return content + "\n" + " ".join(str(k) for k in keys)
