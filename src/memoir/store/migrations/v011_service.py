"""v11: the service. Users and their API keys (only a hash of each key is stored), the
client message ids an HTTP append was given (so a retried batch stores nothing twice), and
jobs: background work (a long-history summary regeneration) with its state, progress,
heartbeat and the claim a worker holds on it (``claimed_by`` + ``source_hash``, which
includes the job id: a superseded worker cannot persist over its replacement)."""

from __future__ import annotations

__all__ = ["NAME", "POSTGRES", "REINDEX", "SQLITE", "VERSION"]

VERSION = 11
NAME = "service"
REINDEX = False


def _statements(time: str) -> tuple[str, ...]:
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


SQLITE: tuple[str, ...] = _statements("TEXT")

POSTGRES: tuple[str, ...] = _statements("TIMESTAMPTZ")
