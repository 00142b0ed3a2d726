"""SQLite writes of one ingest batch, and session deletion (inside the caller's transaction).

Round trips are per batch, not per row: one ``executemany`` per table, one lookup of
the batch's existing exchanges per 500 ids. An exchange already stored with the same last
ordinal and text lengths is left alone (re-applying a batch writes nothing new); a grown
one is updated in place (same id) and moves to a fresh primary key, so that ``pk`` order
is the order of last change (the embedding backlog scans from a high-water mark); its
index row is rewritten and its embeddings dropped (they describe the old text). The index
rows of the neighbours of every added or grown exchange are rewritten too (their
``context`` column quotes it).
"""

from __future__ import annotations

import sqlite3
from typing import Any

from memoir.model import Exchange, Session
from memoir.store import sqlite_search
from memoir.store.codec import (
    event_params,
    exchange_params,
    skipped_params,
    source_params,
    to_iso,
)
from memoir.store.sql_common import (
    EVENT_INSERT,
    SESSION_UPSERT_HEAD,
    SKIPPED_INSERT,
    SOURCE_UPSERT,
    check_source_unchanged,
    delete_session_tables,
    move_source,
    sqlite_sql,
    upsert_session,
)
from memoir.store.values import IngestBatch

__all__ = ["apply_batch", "delete_session_content", "delete_session_rows"]

_CHUNK = 500

SESSION_UPSERT = (
    SESSION_UPSERT_HEAD
    + """    created_at = coalesce(min(sessions.created_at, excluded.created_at),
                          sessions.created_at, excluded.created_at),
    updated_at = coalesce(max(sessions.updated_at, excluded.updated_at),
                          sessions.updated_at, excluded.updated_at)
"""
)
EXCHANGE_INSERT = """
INSERT INTO exchanges (pk, id, session_id, first_ordinal, last_ordinal, started_at,
    ended_at, line_start, line_end, tool_names, user_text, assistant_text, tool_excerpt)
VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
"""
EXCHANGE_UPDATE = """
UPDATE exchanges SET pk = ?, session_id = ?, first_ordinal = ?, last_ordinal = ?, started_at = ?,
    ended_at = ?, line_start = ?, line_end = ?, tool_names = ?, user_text = ?,
    assistant_text = ?, tool_excerpt = ?
WHERE pk = ?
"""


def apply_batch(conn: sqlite3.Connection, batch: IngestBatch) -> None:
    check_source_unchanged(conn, sqlite_sql, batch)
    renamed = upsert_session(conn, sqlite_sql, batch, SESSION_UPSERT, to_iso)
    session = batch.session
    if batch.reset:
        path = batch.source.path if batch.source else session.source_path
        delete_session_content(conn, session.id, path)
    elif renamed:
        sqlite_search.reindex_session(conn, session)  # the index's meta column names them
    if batch.moved_from is not None and batch.source is not None:
        move_source(conn, sqlite_sql, batch.moved_from, batch.source.path)
    if batch.events:
        conn.executemany(EVENT_INSERT, [event_params(e, to_iso) for e in batch.events])
    if batch.exchanges:
        _upsert_exchanges(conn, session, batch.exchanges, fresh=batch.reset)
    if batch.source is not None:
        conn.execute(SOURCE_UPSERT, source_params(batch.source))
    if batch.skipped:
        conn.executemany(SKIPPED_INSERT, [skipped_params(s) for s in batch.skipped])


def _existing(conn: sqlite3.Connection, ids: list[str]) -> dict[str, tuple[Any, ...]]:
    found: dict[str, tuple[Any, ...]] = {}
    for i in range(0, len(ids), _CHUNK):
        chunk = ids[i : i + _CHUNK]
        marks = ",".join("?" * len(chunk))
        for row in conn.execute(
            "SELECT id, pk, last_ordinal, length(user_text), length(assistant_text), "
            f"length(tool_excerpt) FROM exchanges WHERE id IN ({marks})",
            chunk,
        ):
            found[row[0]] = row[1:]
    return found


def _upsert_exchanges(
    conn: sqlite3.Connection, session: Session, exchanges: tuple[Exchange, ...], *, fresh: bool
) -> None:
    unique = {x.id: x for x in exchanges}
    existing = {} if fresh else _existing(conn, list(unique))
    next_pk = int(conn.execute("SELECT coalesce(max(pk), 0) + 1 FROM exchanges").fetchone()[0])
    inserts: list[tuple[Any, ...]] = []
    updates: list[tuple[Any, ...]] = []
    changed: list[tuple[int, str]] = []
    docs: list[Exchange] = []
    for x in unique.values():
        params = exchange_params(x, to_iso)
        old = existing.get(x.id)
        if old is None:
            inserts.append((next_pk, *params))
            docs.append(x)
            next_pk += 1
        elif tuple(old[1:]) != (x.last_ordinal, len(params[9]), len(params[10]), len(params[11])):
            updates.append((next_pk, *params[1:], old[0]))
            changed.append((old[0], x.id))
            docs.append(x)
            next_pk += 1
    if inserts:
        conn.executemany(EXCHANGE_INSERT, inserts)
    if updates:
        conn.executemany(EXCHANGE_UPDATE, updates)
        conn.executemany("DELETE FROM embeddings WHERE exchange_id = ?", [(i,) for _, i in changed])
        sqlite_search.delete_index(conn, [pk for pk, _ in changed])
    sqlite_search.reindex_span(conn, session, docs)


def delete_session_content(conn: sqlite3.Connection, session_id: str, path: str | None) -> None:
    """Events, exchanges, their index rows and embeddings (and the source's skipped lines)."""
    rows = conn.execute("SELECT pk, id FROM exchanges WHERE session_id = ?", (session_id,))
    pairs = rows.fetchall()
    sqlite_search.delete_index(conn, [pk for pk, _ in pairs])
    conn.executemany("DELETE FROM embeddings WHERE exchange_id = ?", [(i,) for _, i in pairs])
    conn.execute("DELETE FROM exchanges WHERE session_id = ?", (session_id,))
    conn.execute("DELETE FROM events WHERE session_id = ?", (session_id,))
    if path is not None:
        conn.execute("DELETE FROM skipped_lines WHERE path = ?", (path,))


def delete_session_rows(conn: sqlite3.Connection, session_id: str) -> bool:
    """Everything stored for a session except usage records; False when it is unknown."""
    if conn.execute("SELECT 1 FROM sessions WHERE id = ?", (session_id,)).fetchone() is None:
        return False
    delete_session_content(conn, session_id, None)
    delete_session_tables(conn, sqlite_sql, session_id)
    return True
