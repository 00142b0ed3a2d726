"""PostgreSQL writes of one ingest batch, and session deletion (inside the caller's
transaction). Same rules as :mod:`memoir.store.sqlite_ingest`; ``executemany`` runs in
psycopg's pipeline mode, so a batch costs a handful of round trips, not one per row.
"""

from __future__ import annotations

from typing import Any

import psycopg

from memoir.model import Exchange, Session
from memoir.store import postgres_search, sql_common
from memoir.store.codec import (
    event_params,
    exchange_params,
    skipped_params,
    source_params,
    to_utc,
)
from memoir.store.sql_common import (
    check_source_unchanged,
    delete_session_tables,
    move_source,
    pg_sql,
    upsert_session,
)
from memoir.store.values import IngestBatch

__all__ = ["apply_batch", "delete_session_content", "delete_session_rows"]

SESSION_UPSERT = (
    pg_sql(sql_common.SESSION_UPSERT_HEAD)
    + """    created_at = LEAST(sessions.created_at, excluded.created_at),
    updated_at = GREATEST(sessions.updated_at, excluded.updated_at)
"""
)
EVENT_INSERT = pg_sql(sql_common.EVENT_INSERT)
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
SOURCE_UPSERT = pg_sql(sql_common.SOURCE_UPSERT)
SKIPPED_INSERT = pg_sql(sql_common.SKIPPED_INSERT)


def apply_batch(conn: psycopg.Connection[Any], batch: IngestBatch) -> None:
    check_source_unchanged(conn, pg_sql, batch)
    renamed = upsert_session(conn, pg_sql, batch, SESSION_UPSERT, to_utc)
    session = batch.session
    if batch.reset:
        path = batch.source.path if batch.source else session.source_path
        delete_session_content(conn, session.id, path)
    elif renamed:
        postgres_search.reindex_session(conn, session)  # the index's meta column names them
    if batch.moved_from is not None and batch.source is not None:
        move_source(conn, pg_sql, batch.moved_from, batch.source.path)
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
    delete_session_tables(conn, pg_sql, session_id)
    return True
