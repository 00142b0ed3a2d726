"""PostgreSQL writes of one ingest batch, and session deletion (inside the caller's
transaction). The steps and rules are :mod:`memoir.store.sqlite_ingest`'s (both run
:func:`memoir.store.sql_common.apply_batch`); what is PostgreSQL's own is here: how the
session upsert merges timestamps, primary keys from the ``exchanges.pk`` sequence (a
grown exchange takes the next value), and ``executemany`` in psycopg's pipeline mode, so
a batch costs a handful of round trips, not one per row.
"""

from __future__ import annotations

from typing import Any

import psycopg
from psycopg import pq

from memoir.store import postgres_search, sql_common
from memoir.store.search_sql import SpanRead
from memoir.store.sql_common import POSTGRES, SESSION_UPSERT_HEAD, ExchangeChange, IngestWrites
from memoir.store.values import IngestBatch

__all__ = ["WRITES", "apply_batch", "delete_session_rows"]

SESSION_UPSERT = (
    POSTGRES(SESSION_UPSERT_HEAD)
    + """    created_at = LEAST(sessions.created_at, excluded.created_at),
    updated_at = GREATEST(sessions.updated_at, excluded.updated_at)
"""
)
# rows written many at a time are sent as one array per column, unnested by the server:
# one statement for a batch's events (or exchanges), not one per row, in the order given
# (the sequence numbers new exchanges in batch order, as one INSERT per row did). Arrays
# go in binary (%b): as text, every element is quoted and escaped in Python first (1 s
# for 1,000 texts of 2 kB, against 6 ms)
EVENT_INSERT = """
INSERT INTO events (session_id, ordinal, kind, author, ts, tool_name, call_id,
    source_offset, source_line, payload, text, time_inferred)
SELECT * FROM unnest(%b::text[], %b::int[], %b::text[], %b::text[], %b::timestamptz[],
    %b::text[], %b::text[], %b::int8[], %b::int[], %b::json[], %b::text[], %b::bool[])
ON CONFLICT (session_id, ordinal) DO NOTHING
"""
EXCHANGE_INSERT = """
INSERT INTO exchanges (id, session_id, first_ordinal, last_ordinal, started_at,
    ended_at, line_start, line_end, tool_names, user_text, assistant_text, tool_excerpt)
SELECT * FROM unnest(%b::text[], %b::text[], %b::int[], %b::int[], %b::timestamptz[],
    %b::timestamptz[], %b::int[], %b::int[], %b::json[], %b::text[], %b::text[], %b::text[])
"""
_UNNEST_ROWS = 1000  # rows per statement (a sync's batch may hold thousands)
EXCHANGE_UPDATE = """
UPDATE exchanges SET pk = nextval(pg_get_serial_sequence('exchanges', 'pk')),
    session_id = %s, first_ordinal = %s, last_ordinal = %s, started_at = %s,
    ended_at = %s, line_start = %s, line_end = %s, tool_names = %s, user_text = %s,
    assistant_text = %s, tool_excerpt = %s
WHERE id = %s
"""


def _many(conn: psycopg.Connection[Any], sql: str, rows: list[tuple[Any, ...]]) -> None:
    with conn.cursor() as cur:
        cur.executemany(sql, rows)


def _unnested(conn: psycopg.Connection[Any], sql: str, rows: list[tuple[Any, ...]]) -> None:
    """``sql`` (an ``unnest`` of one array per column) over ``rows``, a page at a time."""
    for at in range(0, len(rows), _UNNEST_ROWS):
        conn.execute(
            sql, [list(column) for column in zip(*rows[at : at + _UNNEST_ROWS], strict=True)]
        )


def _insert_events(conn: psycopg.Connection[Any], rows: list[tuple[Any, ...]]) -> None:
    _unnested(conn, EVENT_INSERT, rows)


def _store_exchanges(conn: psycopg.Connection[Any], changes: list[ExchangeChange]) -> None:
    """New rows (the sequence numbers them) and grown ones (the next value of it)."""
    inserts = [c.params for c in changes if c.old_pk is None]
    updates = [(*c.params[1:], c.exchange.id) for c in changes if c.old_pk is not None]
    if inserts:
        _unnested(conn, EXCHANGE_INSERT, inserts)
    if updates:
        _many(conn, EXCHANGE_UPDATE, updates)


WRITES = IngestWrites(
    POSTGRES,
    SESSION_UPSERT,
    _many,
    _store_exchanges,
    index=postgres_search,
    send_span_read=postgres_search.send_span_read,
    span_read=SpanRead,
    insert_events=_insert_events,
)


def apply_batch(conn: psycopg.Connection[Any], batch: IngestBatch) -> None:
    if conn.pgconn.pipeline_status != pq.PipelineStatus.OFF:  # an append's, already
        sql_common.apply_batch(conn, batch, WRITES)
        return
    with conn.pipeline():
        sql_common.apply_batch(conn, batch, WRITES)


def delete_session_rows(conn: psycopg.Connection[Any], session_id: str) -> bool:
    """Everything stored for a session except usage records; False when it is unknown."""
    return sql_common.delete_session_rows(conn, WRITES, session_id)
