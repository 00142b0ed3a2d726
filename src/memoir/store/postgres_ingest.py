"""PostgreSQL writes of one ingest batch, and session deletion (inside the caller's
transaction). Same rules as :mod:`memoir.store.sqlite_ingest`; ``executemany`` runs in
psycopg's pipeline mode, so a batch costs a handful of round trips, not one per row.
"""

from __future__ import annotations

from typing import Any

import psycopg

from memoir.model import Exchange, Session
from memoir.store import postgres_search
from memoir.store.codec import (
    event_params,
    exchange_params,
    session_params,
    skipped_params,
    source_params,
    to_utc,
)
from memoir.store.port import IngestBatch
from memoir.store.sqlite_ingest import check_batch

__all__ = ["apply_batch", "delete_session_content", "delete_session_rows"]

SESSION_UPSERT = """
INSERT INTO sessions (id, project, harness, user_name, source_path, cwd, incognito,
    archived, subagent, memory_disabled, created_at, updated_at)
VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s)
ON CONFLICT (id) DO UPDATE SET
    project = excluded.project,
    harness = excluded.harness,
    user_name = excluded.user_name,
    source_path = coalesce(excluded.source_path, sessions.source_path),
    cwd = coalesce(excluded.cwd, sessions.cwd),
    incognito = (sessions.incognito OR excluded.incognito),
    archived = (sessions.archived OR excluded.archived),
    subagent = (sessions.subagent OR excluded.subagent),
    memory_disabled = (sessions.memory_disabled OR excluded.memory_disabled),
    created_at = LEAST(sessions.created_at, excluded.created_at),
    updated_at = GREATEST(sessions.updated_at, excluded.updated_at)
"""
EVENT_INSERT = """
INSERT INTO events (session_id, ordinal, kind, author, ts, tool_name, call_id,
    source_offset, source_line, payload, text)
VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s)
ON CONFLICT (session_id, ordinal) DO NOTHING
"""
EXCHANGE_INSERT = """
INSERT INTO exchanges (id, session_id, first_ordinal, last_ordinal, started_at,
    ended_at, line_start, line_end, tool_names, user_text, assistant_text, tool_excerpt)
VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s)
"""
EXCHANGE_UPDATE = """
UPDATE exchanges SET pk = nextval(pg_get_serial_sequence('exchanges', 'pk')),
    session_id = %s, first_ordinal = %s, last_ordinal = %s, started_at = %s,
    ended_at = %s, line_start = %s, line_end = %s, tool_names = %s, user_text = %s,
    assistant_text = %s, tool_excerpt = %s
WHERE id = %s
"""
SOURCE_UPSERT = """
INSERT INTO sources (path, session_id, harness, size, "offset", line_count, mtime_ns,
    prefix_hash, tail_hash, archive_path, parser_state)
VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s)
ON CONFLICT (path) DO UPDATE SET
    session_id = excluded.session_id, harness = excluded.harness, size = excluded.size,
    "offset" = excluded."offset", line_count = excluded.line_count,
    mtime_ns = excluded.mtime_ns, prefix_hash = excluded.prefix_hash,
    tail_hash = excluded.tail_hash, archive_path = excluded.archive_path,
    parser_state = excluded.parser_state
"""
SKIPPED_INSERT = """
INSERT INTO skipped_lines (path, line, "offset", reason, detail) VALUES (%s, %s, %s, %s, %s)
ON CONFLICT (path, line) DO NOTHING
"""


def apply_batch(conn: psycopg.Connection[Any], batch: IngestBatch) -> None:
    check_batch(batch)
    session = batch.session
    before = conn.execute(
        "SELECT project, harness FROM sessions WHERE id = %s", (session.id,)
    ).fetchone()
    conn.execute(SESSION_UPSERT, session_params(session, to_utc))
    if batch.reset:
        path = batch.source.path if batch.source else session.source_path
        delete_session_content(conn, session.id, path)
    elif before is not None and tuple(before) != (session.project, str(session.harness)):
        postgres_search.reindex_session(conn, session)  # the index's meta column names them
    with conn.cursor() as cur:
        if batch.events:
            cur.executemany(EVENT_INSERT, [event_params(e, to_utc) for e in batch.events])
        if batch.exchanges:
            _upsert_exchanges(conn, cur, session, batch.exchanges, fresh=batch.reset)
        if batch.source is not None:
            cur.execute(SOURCE_UPSERT, source_params(batch.source))
        if batch.skipped:
            cur.executemany(SKIPPED_INSERT, [skipped_params(s) for s in batch.skipped])


def _upsert_exchanges(
    conn: psycopg.Connection[Any],
    cur: psycopg.Cursor[Any],
    session: Session,
    exchanges: tuple[Exchange, ...],
    *,
    fresh: bool,
) -> None:
    unique = {x.id: x for x in exchanges}
    existing: dict[str, tuple[Any, ...]] = {}
    if not fresh:
        for row in conn.execute(
            "SELECT id, pk, last_ordinal, length(user_text), length(assistant_text), "
            "length(tool_excerpt) FROM exchanges WHERE id = ANY(%s)",
            (list(unique),),
        ):
            existing[row[0]] = row[1:]
    inserts: list[tuple[Any, ...]] = []
    updates: list[tuple[Any, ...]] = []
    old_pks: list[int] = []
    docs: list[Exchange] = []
    for x in unique.values():
        params = exchange_params(x, to_utc)
        old = existing.get(x.id)
        if old is None:
            inserts.append(params)
            docs.append(x)
        elif tuple(old[1:]) != (x.last_ordinal, len(params[9]), len(params[10]), len(params[11])):
            updates.append((*params[1:], x.id))
            old_pks.append(int(old[0]))
            docs.append(x)
    if inserts:
        cur.executemany(EXCHANGE_INSERT, inserts)
    if updates:
        postgres_search.delete_index(conn, old_pks)
        conn.execute(
            "DELETE FROM embeddings WHERE exchange_id = ANY(%s)", ([u[-1] for u in updates],)
        )
        cur.executemany(EXCHANGE_UPDATE, updates)
    postgres_search.reindex_span(conn, session, docs)


def delete_session_content(
    conn: psycopg.Connection[Any], session_id: str, path: str | None
) -> None:
    """Events, exchanges, their index rows and embeddings (and the source's skipped lines)."""
    conn.execute(
        "DELETE FROM exchange_search WHERE exchange_pk IN "
        "(SELECT pk FROM exchanges WHERE session_id = %s)",
        (session_id,),
    )
    conn.execute(
        "DELETE FROM embeddings WHERE exchange_id IN "
        "(SELECT id FROM exchanges WHERE session_id = %s)",
        (session_id,),
    )
    conn.execute("DELETE FROM exchanges WHERE session_id = %s", (session_id,))
    conn.execute("DELETE FROM events WHERE session_id = %s", (session_id,))
    if path is not None:
        conn.execute("DELETE FROM skipped_lines WHERE path = %s", (path,))


def delete_session_rows(conn: psycopg.Connection[Any], session_id: str) -> bool:
    """Everything stored for a session except usage records; False when it is unknown."""
    found = conn.execute("SELECT 1 FROM sessions WHERE id = %s FOR UPDATE", (session_id,))
    if found.fetchone() is None:
        return False
    delete_session_content(conn, session_id, None)
    conn.execute(
        "DELETE FROM skipped_lines WHERE path IN (SELECT path FROM sources WHERE session_id = %s)",
        (session_id,),
    )
    for table in ("sources", "summaries", "checkpoints", "traces"):
        conn.execute(f"DELETE FROM {table} WHERE session_id = %s", (session_id,))
    conn.execute("DELETE FROM sessions WHERE id = %s", (session_id,))
    return True
