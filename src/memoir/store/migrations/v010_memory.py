"""v10: long-term memory. Per session: the committed cursor (events up to ``through`` are
settled), the lane's durable queue of operations (``memory_ops``: an ``extract`` accepted
but not yet run, a checkpoint dispatched), at most one pending failure, durable policy
denial markers (barriers), and one receipt per settled operation. Items with the exact
quotes that support them (``memory_sources``), and per-project switches."""

from __future__ import annotations

__all__ = ["NAME", "POSTGRES", "REINDEX", "SQLITE", "VERSION"]

VERSION = 10
NAME = "memory"
REINDEX = False


def _statements(time: str, flag: str, false: str) -> tuple[str, ...]:
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


SQLITE: tuple[str, ...] = _statements("TEXT", "INTEGER", "0")

POSTGRES: tuple[str, ...] = _statements("TIMESTAMPTZ", "BOOLEAN", "FALSE")
