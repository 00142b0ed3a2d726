"""v1 core: sessions, events, exchanges, transcript sources, skipped lines.

Column order puts small columns first and large text last, so scans over times and
ordinals do not read overflow pages.
"""

from __future__ import annotations

__all__ = ["NAME", "POSTGRES", "SQLITE", "VERSION"]

VERSION = 1
NAME = "core"

SQLITE: tuple[str, ...] = (
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

POSTGRES: tuple[str, ...] = (
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
