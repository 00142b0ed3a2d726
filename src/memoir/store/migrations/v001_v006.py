"""Schema versions 1-6: the archive, its full-text index, embeddings and their
generations; and :class:`Migration`, the value each version is."""

from __future__ import annotations

import string
from collections.abc import Callable
from dataclasses import dataclass

from memoir.store.db import Tx

__all__ = [
    "V001_CORE",
    "V002_SEARCH",
    "V003_FILTER_TOKENS",
    "V004_NEIGHBOUR_CONTEXT",
    "V005_TOKEN_STATES",
    "V006_EMBEDDING_GENERATIONS",
    "Migration",
    "tsvector_sql",
]


@dataclass(frozen=True, slots=True)
class Migration:
    """One schema version: its statements for each backend, applied in one transaction."""

    version: int
    name: str
    sqlite: tuple[str, ...]
    postgres: tuple[str, ...]
    reindex: bool = False
    # a step in Python after the statements, in the same transaction (data repairs)
    sqlite_after: Callable[[Tx], None] | None = None
    postgres_after: Callable[[Tx], None] | None = None


# v1 core: sessions, events, exchanges, transcript sources, skipped lines.
#
# Column order puts small columns first and large text last, so scans over times and
# ordinals do not read overflow pages.
_V001_SQLITE: tuple[str, ...] = (
    """CREATE TABLE sessions (
        id TEXT PRIMARY KEY,
        project TEXT NOT NULL,
        harness TEXT NOT NULL,
        user_name TEXT NOT NULL DEFAULT 'local',
        source_path TEXT,
        cwd TEXT,
        incognito INTEGER NOT NULL DEFAULT 0,
        archived INTEGER NOT NULL DEFAULT 0,
        subagent INTEGER NOT NULL DEFAULT 0,
        memory_disabled INTEGER NOT NULL DEFAULT 0,
        created_at TEXT,
        updated_at TEXT
    )""",
    "CREATE INDEX sessions_project ON sessions(project)",
    """CREATE TABLE events (
        session_id TEXT NOT NULL REFERENCES sessions(id),
        ordinal INTEGER NOT NULL,
        kind TEXT NOT NULL,
        author TEXT NOT NULL,
        ts TEXT,
        tool_name TEXT,
        call_id TEXT,
        source_offset INTEGER,
        source_line INTEGER,
        payload TEXT,
        text TEXT NOT NULL
    )""",
    "CREATE UNIQUE INDEX events_key ON events(session_id, ordinal)",
    """CREATE TABLE exchanges (
        pk INTEGER PRIMARY KEY,
        id TEXT NOT NULL UNIQUE,
        session_id TEXT NOT NULL REFERENCES sessions(id),
        first_ordinal INTEGER NOT NULL,
        last_ordinal INTEGER NOT NULL,
        started_at TEXT,
        ended_at TEXT,
        line_start INTEGER,
        line_end INTEGER,
        tool_names TEXT NOT NULL DEFAULT '[]',
        user_text TEXT NOT NULL,
        assistant_text TEXT NOT NULL,
        tool_excerpt TEXT NOT NULL DEFAULT ''
    )""",
    "CREATE INDEX exchanges_session ON exchanges(session_id, first_ordinal)",
    "CREATE INDEX exchanges_started ON exchanges(started_at)",
    """CREATE TABLE sources (
        path TEXT PRIMARY KEY,
        session_id TEXT NOT NULL,
        harness TEXT NOT NULL,
        size INTEGER NOT NULL,
        "offset" INTEGER NOT NULL,
        line_count INTEGER NOT NULL,
        mtime_ns INTEGER NOT NULL,
        prefix_hash TEXT NOT NULL,
        tail_hash TEXT NOT NULL,
        archive_path TEXT,
        parser_state TEXT NOT NULL DEFAULT '{}'
    )""",
    "CREATE INDEX sources_session ON sources(session_id)",
    """CREATE TABLE skipped_lines (
        path TEXT NOT NULL,
        line INTEGER NOT NULL,
        "offset" INTEGER NOT NULL,
        reason TEXT NOT NULL,
        detail TEXT NOT NULL DEFAULT '',
        PRIMARY KEY (path, line)
    )""",
)

_V001_POSTGRES: tuple[str, ...] = (
    """CREATE TABLE sessions (
        id TEXT PRIMARY KEY,
        project TEXT NOT NULL,
        harness TEXT NOT NULL,
        user_name TEXT NOT NULL DEFAULT 'local',
        source_path TEXT,
        cwd TEXT,
        incognito BOOLEAN NOT NULL DEFAULT FALSE,
        archived BOOLEAN NOT NULL DEFAULT FALSE,
        subagent BOOLEAN NOT NULL DEFAULT FALSE,
        memory_disabled BOOLEAN NOT NULL DEFAULT FALSE,
        created_at TIMESTAMPTZ,
        updated_at TIMESTAMPTZ
    )""",
    "CREATE INDEX sessions_project ON sessions(project)",
    """CREATE TABLE events (
        session_id TEXT NOT NULL REFERENCES sessions(id),
        ordinal INTEGER NOT NULL,
        kind TEXT NOT NULL,
        author TEXT NOT NULL,
        ts TIMESTAMPTZ,
        tool_name TEXT,
        call_id TEXT,
        source_offset BIGINT,
        source_line INTEGER,
        payload JSON,
        text TEXT NOT NULL,
        PRIMARY KEY (session_id, ordinal)
    )""",
    """CREATE TABLE exchanges (
        pk BIGSERIAL PRIMARY KEY,
        id TEXT NOT NULL UNIQUE,
        session_id TEXT NOT NULL REFERENCES sessions(id),
        first_ordinal INTEGER NOT NULL,
        last_ordinal INTEGER NOT NULL,
        started_at TIMESTAMPTZ,
        ended_at TIMESTAMPTZ,
        line_start INTEGER,
        line_end INTEGER,
        tool_names JSON NOT NULL DEFAULT '[]',
        user_text TEXT NOT NULL,
        assistant_text TEXT NOT NULL,
        tool_excerpt TEXT NOT NULL DEFAULT ''
    )""",
    "CREATE INDEX exchanges_session ON exchanges(session_id, first_ordinal)",
    "CREATE INDEX exchanges_started ON exchanges(started_at)",
    """CREATE TABLE sources (
        path TEXT PRIMARY KEY,
        session_id TEXT NOT NULL,
        harness TEXT NOT NULL,
        size BIGINT NOT NULL,
        "offset" BIGINT NOT NULL,
        line_count BIGINT NOT NULL,
        mtime_ns BIGINT NOT NULL,
        prefix_hash TEXT NOT NULL,
        tail_hash TEXT NOT NULL,
        archive_path TEXT,
        parser_state JSON NOT NULL DEFAULT '{}'
    )""",
    "CREATE INDEX sources_session ON sources(session_id)",
    """CREATE TABLE skipped_lines (
        path TEXT NOT NULL,
        line BIGINT NOT NULL,
        "offset" BIGINT NOT NULL,
        reason TEXT NOT NULL,
        detail TEXT NOT NULL DEFAULT '',
        PRIMARY KEY (path, line)
    )""",
)

V001_CORE = Migration(1, "core", _V001_SQLITE, _V001_POSTGRES)

# v2: the full-text index, embeddings, model usage ledger, cache, summary rows,
# compaction checkpoints and traces.
#
# The index is keyed by ``exchanges.pk`` on both backends: SQLite's FTS5 ``rowid`` and
# PostgreSQL's ``exchange_search.exchange_pk``. The index rows of every exchange already in
# the database are built when this migration runs (``reindex``).

# PostgreSQL's parser keeps "db.sqlite", "a/b/c" or "foo@bar.com" as single tokens where
# FTS5's unicode61 sees separate words; the tsvector is built over the text with ASCII
# punctuation turned into spaces so both backends index the same words.
_V002_PUNCT = "'" + string.punctuation.replace("'", "''") + "'"

_V002_SPACES = "'" + " " * len(string.punctuation) + "'"


def _v002_tsv(column: str, weight: str) -> str:
    return (
        f"setweight(to_tsvector('english'::regconfig, translate({column}, {_V002_PUNCT}, "
        f"{_V002_SPACES})), '{weight}')"
    )


def tsvector_sql(parts: tuple[tuple[str, str], ...]) -> str:
    """The weighted tsvector expression over ``(column, weight)`` pairs."""
    return " || ".join(_v002_tsv(c, w) for c, w in parts)


_V002_SQLITE: tuple[str, ...] = (
    """CREATE VIRTUAL TABLE exchange_fts USING fts5(
        user, assistant, tools, meta,
        tokenize = 'porter unicode61 remove_diacritics 2'
    )""",
    """CREATE TABLE embeddings (
        model TEXT NOT NULL,
        exchange_id TEXT NOT NULL,
        dim INTEGER NOT NULL,
        vec BLOB NOT NULL
    )""",
    "CREATE UNIQUE INDEX embeddings_key ON embeddings(model, exchange_id)",
    "CREATE INDEX embeddings_exchange ON embeddings(exchange_id)",
    """CREATE TABLE usage (
        id INTEGER PRIMARY KEY,
        at TEXT NOT NULL,
        provider TEXT NOT NULL,
        model TEXT NOT NULL,
        purpose TEXT NOT NULL,
        outcome TEXT NOT NULL,
        input_tokens INTEGER NOT NULL,
        output_tokens INTEGER NOT NULL,
        latency_ms REAL NOT NULL,
        user_name TEXT,
        session_id TEXT,
        job_id TEXT,
        request_id TEXT
    )""",
    "CREATE INDEX usage_at ON usage(at)",
    """CREATE TABLE cache (
        key TEXT PRIMARY KEY,
        value TEXT NOT NULL,
        expires_at REAL NOT NULL
    )""",
    "CREATE INDEX cache_expires ON cache(expires_at)",
    """CREATE TABLE summaries (
        session_id TEXT PRIMARY KEY,
        kind TEXT NOT NULL,
        covered INTEGER NOT NULL DEFAULT 0,
        last_exchange TEXT,
        attempts INTEGER NOT NULL DEFAULT 0,
        last_attempt_ms INTEGER NOT NULL DEFAULT 0,
        resummary_attempts INTEGER,
        resummary_last_attempt_ms INTEGER,
        model TEXT,
        message TEXT,
        updated_at TEXT,
        body TEXT NOT NULL DEFAULT ''
    )""",
    """CREATE TABLE checkpoints (
        id TEXT PRIMARY KEY,
        session_id TEXT NOT NULL,
        created_at TEXT NOT NULL,
        watermark INTEGER NOT NULL,
        memory_boundary INTEGER NOT NULL,
        disposition TEXT NOT NULL,
        previous_id TEXT,
        data TEXT NOT NULL DEFAULT '{}'
    )""",
    "CREATE INDEX checkpoints_session ON checkpoints(session_id, created_at)",
    """CREATE TABLE traces (
        id INTEGER PRIMARY KEY,
        session_id TEXT,
        kind TEXT NOT NULL,
        at TEXT NOT NULL,
        data TEXT NOT NULL DEFAULT '{}'
    )""",
    "CREATE INDEX traces_session ON traces(session_id, at)",
    "CREATE INDEX traces_kind ON traces(kind, at)",
)

_V002_POSTGRES: tuple[str, ...] = (
    """CREATE TABLE exchange_search (
        exchange_pk BIGINT PRIMARY KEY,
        user_doc TEXT NOT NULL,
        assistant_doc TEXT NOT NULL,
        tools_doc TEXT NOT NULL,
        meta_doc TEXT NOT NULL,
        tsv TSVECTOR GENERATED ALWAYS AS ("""
    + " || ".join(
        _v002_tsv(c, w)
        for c, w in (
            ("user_doc", "A"),
            ("assistant_doc", "B"),
            ("tools_doc", "C"),
            ("meta_doc", "D"),
        )
    )
    + """) STORED
    )""",
    "CREATE INDEX exchange_search_tsv ON exchange_search USING GIN (tsv)",
    """CREATE TABLE embeddings (
        model TEXT NOT NULL,
        exchange_id TEXT NOT NULL,
        dim INTEGER NOT NULL,
        vec BYTEA NOT NULL,
        PRIMARY KEY (model, exchange_id)
    )""",
    "CREATE INDEX embeddings_exchange ON embeddings(exchange_id)",
    """CREATE TABLE usage (
        id BIGSERIAL PRIMARY KEY,
        at TIMESTAMPTZ NOT NULL,
        provider TEXT NOT NULL,
        model TEXT NOT NULL,
        purpose TEXT NOT NULL,
        outcome TEXT NOT NULL,
        input_tokens INTEGER NOT NULL,
        output_tokens INTEGER NOT NULL,
        latency_ms DOUBLE PRECISION NOT NULL,
        user_name TEXT,
        session_id TEXT,
        job_id TEXT,
        request_id TEXT
    )""",
    "CREATE INDEX usage_at ON usage(at)",
    """CREATE TABLE cache (
        key TEXT PRIMARY KEY,
        value TEXT NOT NULL,
        expires_at DOUBLE PRECISION NOT NULL
    )""",
    "CREATE INDEX cache_expires ON cache(expires_at)",
    """CREATE TABLE summaries (
        session_id TEXT PRIMARY KEY,
        kind TEXT NOT NULL,
        covered INTEGER NOT NULL DEFAULT 0,
        last_exchange TEXT,
        attempts INTEGER NOT NULL DEFAULT 0,
        last_attempt_ms BIGINT NOT NULL DEFAULT 0,
        resummary_attempts INTEGER,
        resummary_last_attempt_ms BIGINT,
        model TEXT,
        message TEXT,
        updated_at TIMESTAMPTZ,
        body TEXT NOT NULL DEFAULT ''
    )""",
    """CREATE TABLE checkpoints (
        id TEXT PRIMARY KEY,
        session_id TEXT NOT NULL,
        created_at TIMESTAMPTZ NOT NULL,
        watermark INTEGER NOT NULL,
        memory_boundary INTEGER NOT NULL,
        disposition TEXT NOT NULL,
        previous_id TEXT,
        data JSON NOT NULL DEFAULT '{}'
    )""",
    "CREATE INDEX checkpoints_session ON checkpoints(session_id, created_at)",
    """CREATE TABLE traces (
        id BIGSERIAL PRIMARY KEY,
        session_id TEXT,
        kind TEXT NOT NULL,
        at TIMESTAMPTZ NOT NULL,
        data JSON NOT NULL DEFAULT '{}'
    )""",
    "CREATE INDEX traces_session ON traces(session_id, at)",
    "CREATE INDEX traces_kind ON traces(kind, at)",
)

V002_SEARCH = Migration(2, "search-usage-summaries", _V002_SQLITE, _V002_POSTGRES, reindex=True)

# v3: index documents carry filter tokens (a project token and a month token in the
# ``meta`` column, see :mod:`memoir.store.index_doc`); no DDL, every index row is rebuilt.

V003_FILTER_TOKENS = Migration(3, "index-filter-tokens", (), (), reindex=True)

# v4: index documents carry a ``context`` column, an excerpt of the neighbouring
# exchanges of the same session (see :mod:`memoir.store.index_doc`), searched at a low
# weight. SQLite's FTS5 table is recreated with the fifth column; PostgreSQL's
# ``exchange_search`` gains ``context_doc``, folded into the stored tsvector at weight D
# (with ``meta``: a tsvector has four weights). Every index row is rebuilt.
_V004_SQLITE: tuple[str, ...] = (
    "DROP TABLE exchange_fts",
    """CREATE VIRTUAL TABLE exchange_fts USING fts5(
        user, assistant, tools, meta, context,
        tokenize = 'porter unicode61 remove_diacritics 2'
    )""",
)

_V004_POSTGRES: tuple[str, ...] = (
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

V004_NEIGHBOUR_CONTEXT = Migration(
    4, "index-neighbour-context", _V004_SQLITE, _V004_POSTGRES, reindex=True
)

# v5: an exchange's stored vector may carry its token states (``embeddings.tokens``):
# the packed per-token rows that late-interaction re-ranking reads
# (:mod:`memoir.search.ranking`). NULL for rows written before v5 and for embedders without
# token states; ``memoir embed`` fills them in for embedders that have them. The column
# lives on the vector's row, so every path that drops a stale vector drops its tokens too.
_V005_SQLITE: tuple[str, ...] = ("ALTER TABLE embeddings ADD COLUMN tokens BLOB",)
_V005_POSTGRES: tuple[str, ...] = ("ALTER TABLE embeddings ADD COLUMN tokens BYTEA",)

V005_TOKEN_STATES = Migration(5, "embedding-token-states", _V005_SQLITE, _V005_POSTGRES)

# v6: a generation number per embedding model, raised by triggers on every insert and
# delete of an ``embeddings`` row and every update of its vector (whatever path writes it:
# ``memoir embed``, an exchange that grew and lost its vector, a deleted session; filling in
# token states alone leaves it). A process holding the vector matrix in
# memory, or a matrix file cached beside the database, knows it is current exactly when the
# generation it was read at is still the model's (:mod:`memoir.search.vectors`). A model
# with no row here is at generation 0: the state the migration found.


def _v006_sqlite_trigger(event: str, row: str) -> str:
    name = event.split()[0].lower()
    return (
        f"CREATE TRIGGER embeddings_generation_{name} AFTER {event} ON embeddings "
        "BEGIN INSERT INTO embedding_generations (model, generation) "
        f"VALUES ({row}.model, 1) ON CONFLICT (model) DO UPDATE SET generation = generation + 1;"
        " END"
    )


_V006_SQLITE: tuple[str, ...] = (
    """CREATE TABLE embedding_generations (
        model TEXT PRIMARY KEY,
        generation INTEGER NOT NULL
    )""",
    _v006_sqlite_trigger("INSERT", "NEW"),
    _v006_sqlite_trigger("UPDATE OF model, exchange_id, dim, vec", "NEW"),
    _v006_sqlite_trigger("DELETE", "OLD"),
)

_V006_POSTGRES: tuple[str, ...] = (
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

V006_EMBEDDING_GENERATIONS = Migration(6, "embedding-generations", _V006_SQLITE, _V006_POSTGRES)
