"""v2: the full-text index, embeddings, model usage ledger, cache, summary rows,
compaction checkpoints and traces.

The index is keyed by ``exchanges.pk`` on both backends: SQLite's FTS5 ``rowid`` and
PostgreSQL's ``exchange_search.exchange_pk``. The index rows of every exchange already in
the database are built when this migration runs (``reindex``).
"""

from __future__ import annotations

import string

__all__ = ["NAME", "POSTGRES", "REINDEX", "SQLITE", "VERSION", "tsvector_sql"]

# PostgreSQL's parser keeps "db.sqlite", "a/b/c" or "foo@bar.com" as single tokens where
# FTS5's unicode61 sees separate words; the tsvector is built over the text with ASCII
# punctuation turned into spaces so both backends index the same words.
_PUNCT = "'" + string.punctuation.replace("'", "''") + "'"
_SPACES = "'" + " " * len(string.punctuation) + "'"


def _tsv(column: str, weight: str) -> str:
    return (
        f"setweight(to_tsvector('english'::regconfig, translate({column}, {_PUNCT}, "
        f"{_SPACES})), '{weight}')"
    )


def tsvector_sql(parts: tuple[tuple[str, str], ...]) -> str:
    """The weighted tsvector expression over ``(column, weight)`` pairs."""
    return " || ".join(_tsv(c, w) for c, w in parts)


VERSION = 2
NAME = "search-usage-summaries"
REINDEX = True

SQLITE: tuple[str, ...] = (
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

POSTGRES: tuple[str, ...] = (
    """CREATE TABLE exchange_search (
        exchange_pk BIGINT PRIMARY KEY,
        user_doc TEXT NOT NULL,
        assistant_doc TEXT NOT NULL,
        tools_doc TEXT NOT NULL,
        meta_doc TEXT NOT NULL,
        tsv TSVECTOR GENERATED ALWAYS AS ("""
    + " || ".join(
        _tsv(c, w)
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
