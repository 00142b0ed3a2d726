"""Schema versions 7-13: the embedding change log, accent folding, long-term memory, the
service's tables, memory recall."""

from __future__ import annotations

import string
from collections import defaultdict
from typing import Any

from memoir.store.codec import loads
from memoir.store.db import ACCENTED, PLAIN, Tx
from memoir.store.migrations.v001_v006 import Migration

# the folding table: ASCII punctuation to spaces, accented Latin letters to their base letter
_FROM = "'" + string.punctuation.replace("'", "''") + ACCENTED + "'"
_TO = "'" + " " * len(string.punctuation) + PLAIN + "'"

__all__ = [
    "V007_EMBEDDING_CHANGES",
    "V008_ACCENT_FOLDING",
    "V009_EMBEDDING_RECIPE",
    "V010_MEMORY",
    "V011_SERVICE",
    "V012_CHECKPOINT_BOUNDARY",
    "V013_MEMORY_RECALL",
    "folded_tsvector_sql",
    "fts_body",
    "repair",
]


# v7: a log of which exchanges' vectors changed, per embedding model, so a vector matrix
# cached in a file is brought up to date from the rows that changed instead of read again
# whole (:mod:`memoir.search.vectors`: at 1M exchanges a whole read took ~15 s, and every
# background catch-up caused one).
#
# SQLite only: triggers beside v6's generation triggers append ``(model, exchange_id)`` for
# every insert and delete of an ``embeddings`` row and every update of its vector (token
# states filled in alone leave it, as they leave the generation). A process that writes a
# full matrix file records the log's end with it and drops what it covers. PostgreSQL keeps
# no matrix files, so nothing would read or trim a log there: the table exists (one schema),
# no trigger fills it.


def _v007_log(event: str, rows: tuple[str, ...]) -> str:
    name = event.split()[0].lower()
    inserts = " ".join(
        f"INSERT INTO embedding_changes (model, exchange_id) "
        f"VALUES ({row}.model, {row}.exchange_id);"
        for row in rows
    )
    head = f"CREATE TRIGGER embeddings_change_{name} AFTER {event} ON embeddings"
    return f"{head} BEGIN {inserts} END"


_V007_SQLITE: tuple[str, ...] = (
    """CREATE TABLE embedding_changes (
        seq INTEGER PRIMARY KEY AUTOINCREMENT,
        model TEXT NOT NULL,
        exchange_id TEXT NOT NULL
    )""",
    "CREATE INDEX embedding_changes_model ON embedding_changes (model, seq)",
    _v007_log("INSERT", ("NEW",)),
    _v007_log("UPDATE OF model, exchange_id, dim, vec", ("OLD", "NEW")),
    _v007_log("DELETE", ("OLD",)),
)

_V007_POSTGRES: tuple[str, ...] = (
    """CREATE TABLE embedding_changes (
        seq BIGSERIAL PRIMARY KEY,
        model TEXT NOT NULL,
        exchange_id TEXT NOT NULL
    )""",
)

V007_EMBEDDING_CHANGES = Migration(7, "embedding-changes", _V007_SQLITE, _V007_POSTGRES)

# v8: PostgreSQL's index folds accents as SQLite's does (``café`` is found by ``cafe`` and
# the other way round). The generated ``tsv`` column is rebuilt over the documents with
# accented Latin letters turned into their base letter (:mod:`memoir.store.db`, through
# ``translate()`` — immutable, no extension) on top of v2's punctuation-as-spaces; queries
# are folded the same way. SQLite's FTS5 already folds (``remove_diacritics 2``): nothing to
# do there. The documents themselves (what snippets quote) are unchanged.


def _v008_tsv(column: str, weight: str) -> str:
    return (
        f"setweight(to_tsvector('english'::regconfig, translate({column}, {_FROM}, {_TO})), "
        f"'{weight}')"
    )


def folded_tsvector_sql(parts: tuple[tuple[str, str], ...]) -> str:
    """The weighted, accent-folded tsvector expression over ``(column, weight)`` pairs."""
    return " || ".join(_v008_tsv(c, w) for c, w in parts)


_V008_POSTGRES: tuple[str, ...] = (
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

V008_ACCENT_FOLDING = Migration(8, "postgres-accent-folding", (), _V008_POSTGRES)

# v9: each stored vector records the recipe of the text it was computed from
# (``embeddings.recipe``: :data:`memoir.store.index_doc.EMBED_RECIPE` when written), so a
# vector embedded from an older recipe — before the tool excerpt joined the embedded text,
# say — is recomputed instead of kept for ever. Rows written before v9 get recipe 1 ("from
# before recipes were recorded"): the embed catch-up recomputes them once, after the
# exchanges that have no vector at all. The index on ``(model, recipe)`` lets the catch-up
# find the stale rows without scanning the ones already redone.
_V009_STATEMENTS: tuple[str, ...] = (
    "ALTER TABLE embeddings ADD COLUMN recipe INTEGER NOT NULL DEFAULT 1",
    "CREATE INDEX embeddings_recipe ON embeddings (model, recipe)",
)

V009_EMBEDDING_RECIPE = Migration(9, "embedding-recipe", _V009_STATEMENTS, _V009_STATEMENTS)

# v10: long-term memory. Per session: the committed cursor (events up to ``through`` are
# settled), the lane's durable queue of operations (``memory_ops``: an ``extract`` accepted
# but not yet run, a checkpoint dispatched), at most one pending failure, durable policy
# denial markers (barriers), and one receipt per settled operation. Items with the exact
# quotes that support them (``memory_sources``), and per-project switches.


def _v010_statements(time: str, flag: str, false: str) -> tuple[str, ...]:
    return (
        f"""CREATE TABLE memory_cursors (
            session_id TEXT PRIMARY KEY,
            through INTEGER NOT NULL,
            updated_at {time} NOT NULL
        )""",
        f"""CREATE TABLE memory_ops (
            operation_id TEXT PRIMARY KEY,
            session_id TEXT NOT NULL,
            trigger TEXT NOT NULL,
            anchor TEXT NOT NULL,
            coverage_through INTEGER,
            context_through INTEGER,
            request TEXT NOT NULL DEFAULT '{{}}',
            enqueued_at {time} NOT NULL
        )""",
        "CREATE INDEX memory_ops_session ON memory_ops(session_id, enqueued_at)",
        f"""CREATE TABLE memory_pending (
            session_id TEXT PRIMARY KEY,
            operation_id TEXT NOT NULL,
            trigger TEXT NOT NULL,
            anchor TEXT NOT NULL,
            range_after INTEGER NOT NULL,
            coverage_through INTEGER NOT NULL,
            context_through INTEGER NOT NULL,
            coverage_hash TEXT NOT NULL,
            failure TEXT NOT NULL,
            message TEXT NOT NULL DEFAULT '',
            checkpoint_id TEXT,
            turn INTEGER,
            failures INTEGER NOT NULL DEFAULT 1,
            created_at {time} NOT NULL
        )""",
        f"""CREATE TABLE memory_receipts (
            operation_id TEXT PRIMARY KEY,
            session_id TEXT NOT NULL,
            trigger TEXT NOT NULL,
            outcome TEXT NOT NULL,
            reason TEXT NOT NULL DEFAULT '',
            range_after INTEGER NOT NULL,
            range_through INTEGER NOT NULL,
            checkpoint_id TEXT,
            prompt TEXT NOT NULL DEFAULT '',
            model TEXT NOT NULL DEFAULT '',
            items INTEGER NOT NULL DEFAULT 0,
            dropped INTEGER NOT NULL DEFAULT 0,
            model_calls INTEGER NOT NULL DEFAULT 0,
            input_tokens INTEGER NOT NULL DEFAULT 0,
            created_at {time} NOT NULL,
            data TEXT NOT NULL DEFAULT '{{}}'
        )""",
        "CREATE INDEX memory_receipts_session ON memory_receipts(session_id, created_at)",
        f"""CREATE TABLE memory_denials (
            session_id TEXT NOT NULL,
            range_after INTEGER NOT NULL,
            range_through INTEGER NOT NULL,
            reason TEXT NOT NULL,
            checkpoint_id TEXT,
            created_at {time} NOT NULL,
            PRIMARY KEY (session_id, range_after, range_through)
        )""",
        f"""CREATE TABLE memory_items (
            id TEXT PRIMARY KEY,
            session_id TEXT NOT NULL,
            project TEXT NOT NULL DEFAULT '',
            scope TEXT NOT NULL,
            kind TEXT NOT NULL,
            content TEXT NOT NULL,
            normalized TEXT NOT NULL,
            keys TEXT NOT NULL DEFAULT '[]',
            temporal TEXT NOT NULL DEFAULT '{{}}',
            operation_id TEXT NOT NULL,
            created_at {time} NOT NULL,
            observed_at {time},
            superseded_by TEXT,
            forgotten_at {time}
        )""",
        "CREATE INDEX memory_items_session ON memory_items(session_id)",
        "CREATE INDEX memory_items_project ON memory_items(project, kind)",
        """CREATE TABLE memory_sources (
            item_id TEXT NOT NULL,
            n INTEGER NOT NULL,
            session_id TEXT NOT NULL,
            ordinal INTEGER NOT NULL,
            quote TEXT NOT NULL,
            PRIMARY KEY (item_id, n)
        )""",
        "CREATE INDEX memory_sources_event ON memory_sources(session_id, ordinal)",
        f"""CREATE TABLE memory_switches (
            project TEXT PRIMARY KEY,
            disabled {flag} NOT NULL DEFAULT {false}
        )""",
    )


_V010_SQLITE: tuple[str, ...] = _v010_statements("TEXT", "INTEGER", "0")
_V010_POSTGRES: tuple[str, ...] = _v010_statements("TIMESTAMPTZ", "BOOLEAN", "FALSE")

V010_MEMORY = Migration(10, "memory", _V010_SQLITE, _V010_POSTGRES)

# v11: the service. Users and their API keys (only a hash of each key is stored), the
# client message ids an HTTP append was given (so a retried batch stores nothing twice), and
# jobs: background work (a long-history summary regeneration) with its state, progress,
# heartbeat and the claim a worker holds on it (``claimed_by`` + ``source_hash``, which
# includes the job id: a superseded worker cannot persist over its replacement).


def _v011_statements(time: str) -> tuple[str, ...]:
    return (
        f"""CREATE TABLE users (
            name TEXT PRIMARY KEY,
            created_at {time} NOT NULL
        )""",
        f"""CREATE TABLE api_keys (
            key_hash TEXT PRIMARY KEY,
            user_name TEXT NOT NULL,
            label TEXT NOT NULL DEFAULT '',
            created_at {time} NOT NULL,
            revoked_at {time}
        )""",
        "CREATE INDEX api_keys_user ON api_keys(user_name)",
        """CREATE TABLE api_messages (
            session_id TEXT NOT NULL,
            message_id TEXT NOT NULL,
            ordinal INTEGER NOT NULL,
            PRIMARY KEY (session_id, message_id)
        )""",
        f"""CREATE TABLE jobs (
            id TEXT PRIMARY KEY,
            kind TEXT NOT NULL,
            user_name TEXT NOT NULL,
            session_id TEXT NOT NULL,
            state TEXT NOT NULL,
            phase TEXT NOT NULL DEFAULT '',
            completed INTEGER NOT NULL DEFAULT 0,
            total INTEGER NOT NULL DEFAULT 0,
            error TEXT NOT NULL DEFAULT '',
            created_at {time} NOT NULL,
            started_at {time},
            finished_at {time},
            heartbeat_at {time},
            claimed_by TEXT,
            claimed_at {time},
            source_hash TEXT,
            attempts INTEGER NOT NULL DEFAULT 0,
            data TEXT NOT NULL DEFAULT '{{}}'
        )""",
        "CREATE INDEX jobs_state ON jobs(state, created_at)",
        "CREATE INDEX jobs_session ON jobs(user_name, session_id, created_at)",
    )


_V011_SQLITE: tuple[str, ...] = _v011_statements("TEXT")
_V011_POSTGRES: tuple[str, ...] = _v011_statements("TIMESTAMPTZ")

V011_SERVICE = Migration(11, "service", _V011_SQLITE, _V011_POSTGRES)

# v12: checkpoints indexed by (session, memory boundary), so memory extraction finds the
# latest policy-safe summary before a range with one seek, however many checkpoints a long
# session has accumulated.
_V012_STATEMENTS: tuple[str, ...] = (
    "CREATE INDEX checkpoints_memory ON checkpoints(session_id, memory_boundary)",
)

V012_CHECKPOINT_BOUNDARY = Migration(
    12, "checkpoint-boundary-index", _V012_STATEMENTS, _V012_STATEMENTS
)

# v13: memory that gets used — merge, supersede, forget and recall. ``memory_items`` gains:
# - ``owner`` (the session's user) and ``scope_key`` (the project for a project-scoped
#   item, ``''`` for a global one): what an item is unique within;
# - ``key_sig`` (:func:`_key_sig`, indexed: an item with a live one's key set merges into it
#   when the two say the same thing); two live items of one owner and scope never share
#   their normalized content (a partial unique index: the loser of a race merges);
# - ``first_observed_at`` (the earliest quote's time; ``observed_at`` stays the latest) and
#   the validity interval ``valid_from`` / ``valid_until`` (closed when superseded).
#
# ``memory_sources`` gains ``operation_id`` (the operation that added the quote: a merged
# item answers every operation that proposed it).
# ``memory_tombstones`` holds the fingerprints of forgotten evidence (never extracted
# again); ``memory_vectors`` an item's embedding per embedder; SQLite's ``memory_fts`` (and
# PostgreSQL's generated ``tsv`` column) the full-text index recall ranks with.
#
# Existing live duplicates (the same normalized content) are merged first
# (:func:`repair`): the oldest item of a group keeps its id and takes the others' quotes.


def _v013_columns(time: str) -> tuple[str, ...]:
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


_V013_SQLITE: tuple[str, ...] = (
    *_v013_columns("TEXT"),
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

_V013_POSTGRES: tuple[str, ...] = (
    *_v013_columns("TIMESTAMPTZ"),
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

_V013_UNIQUE: tuple[str, ...] = (
    "CREATE UNIQUE INDEX memory_items_live_normalized ON memory_items(owner, scope_key, "
    "normalized) WHERE superseded_by IS NULL",
    "CREATE INDEX memory_items_live_keys ON memory_items(owner, scope_key, key_sig) "
    "WHERE superseded_by IS NULL",
)


def _v013_find(parent: dict[str, str], x: str) -> str:
    while parent[x] != x:
        parent[x] = parent[parent[x]]
        x = parent[x]
    return x


def _key_sig(keys: Any) -> str:
    """An item's keys as v13 signed them (sorted, case-folded, distinct; frozen here)."""
    folded = {" ".join(str(k).casefold().split()) for k in keys}
    return "\x1f".join(sorted(k for k in folded if k))


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
            "UPDATE memory_items SET key_sig = ? WHERE id = ?", (_key_sig(loads(r[1]) or ()), r[0])
        )
    live = [r for r in rows if r[5] is None]
    parent = {r[0]: r[0] for r in live}
    first: dict[tuple[str, ...], str] = {}
    for r in live:
        for key in ((r[2], r[3], r[4]),):
            if key in first:
                a, b = _v013_find(parent, first[key]), _v013_find(parent, r[0])
                if a != b:  # the older (first seen) stays the root
                    parent[b] = a
            else:
                first[key] = r[0]
    groups: dict[str, list[str]] = defaultdict(list)
    for r in live:
        root = _v013_find(parent, r[0])
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
    for statement in _V013_UNIQUE:
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


V013_MEMORY_RECALL = Migration(
    13,
    "memory-recall",
    _V013_SQLITE,
    _V013_POSTGRES,
    sqlite_after=lambda tx: repair(tx, fts=True),
    postgres_after=lambda tx: repair(tx, fts=False),
)
