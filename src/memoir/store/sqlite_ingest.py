"""SQLite writes of one ingest batch, and session deletion (inside the caller's transaction).

The steps are :func:`memoir.store.sql_common.apply_batch`'s, on both backends; what is
SQLite's own is here: how the session upsert merges timestamps, and primary keys — an
exchange's ``pk`` is numbered here, the next after the highest. Round trips are per batch,
not per row: one ``executemany`` per table, one lookup of the batch's existing exchanges
per 500 ids. An exchange already stored with the same last ordinal and text lengths is
left alone (re-applying a batch writes nothing new); a grown one is updated in place (same
id) and moves to a fresh primary key, so that ``pk`` order is the order of last change
(the embedding backlog scans from a high-water mark); its index row is rewritten and its
embeddings dropped (they describe the old text). The index rows of the neighbours of every
added or grown exchange are rewritten too (their ``context`` column quotes it).
"""

from __future__ import annotations

import sqlite3
from typing import Any

from memoir.store import sql_common, sqlite_search
from memoir.store.sql_common import SESSION_UPSERT_HEAD, SQLITE, ExchangeChange, IngestWrites
from memoir.store.values import IngestBatch

__all__ = ["WRITES", "apply_batch", "delete_session_rows"]

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


def _many(conn: sqlite3.Connection, sql: str, rows: list[tuple[Any, ...]]) -> None:
    conn.executemany(sql, rows)


def _store_exchanges(conn: sqlite3.Connection, changes: list[ExchangeChange]) -> None:
    """New rows and grown ones, each under the next pk after the highest, in batch order."""
    next_pk = int(conn.execute("SELECT coalesce(max(pk), 0) + 1 FROM exchanges").fetchone()[0])
    inserts: list[tuple[Any, ...]] = []
    updates: list[tuple[Any, ...]] = []
    for pk, change in enumerate(changes, start=next_pk):
        if change.old_pk is None:
            inserts.append((pk, *change.params))
        else:
            updates.append((pk, *change.params[1:], change.old_pk))
    if inserts:
        conn.executemany(EXCHANGE_INSERT, inserts)
    if updates:
        conn.executemany(EXCHANGE_UPDATE, updates)


WRITES = IngestWrites(SQLITE, SESSION_UPSERT, _many, _store_exchanges, index=sqlite_search)


def apply_batch(conn: sqlite3.Connection, batch: IngestBatch) -> None:
    sql_common.apply_batch(conn, batch, WRITES)


def delete_session_rows(conn: sqlite3.Connection, session_id: str) -> bool:
    """Everything stored for a session except usage records; False when it is unknown."""
    return sql_common.delete_session_rows(conn, WRITES, session_id)
