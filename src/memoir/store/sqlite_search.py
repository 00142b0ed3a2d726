"""Full-text search on SQLite: the FTS5 table ``exchange_fts`` and its queries.

``exchange_fts(user, assistant, tools, meta)`` is a regular FTS5 table (porter stemming
over unicode61, diacritics folded) whose ``rowid`` is ``exchanges.pk``; its columns are
the :class:`~memoir.store.index_doc.IndexDoc` strings. Ranking is bm25 with column
weights; a query runs in two steps: the top ``limit`` rowids (FTS5 drives, each match
joins its exchange and session by primary key for the filters), then ``snippet()`` for
those rows only. All terms must match; when nothing does, any term may (a loosened
query). Every function takes an open connection and runs inside the caller's
transaction.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable
from typing import Any

from memoir.store.codec import (
    EXCHANGE_COLS,
    SESSION_COLS,
    exchange_from_row,
    prefixed,
    session_from_row,
    to_iso,
)
from memoir.store.index_doc import IndexDoc, exchange_document, role_column
from memoir.store.port import SearchFilters, TextHit
from memoir.store.query_text import parse_query, to_fts5, unsegment_cjk

__all__ = [
    "COLUMN_WEIGHTS",
    "delete_index",
    "rebuild_index",
    "search",
    "write_index",
]

COLUMNS = ("user", "assistant", "tools", "meta")
COLUMN_WEIGHTS = (4.0, 2.0, 1.0, 0.5)  # bm25 weights, in COLUMNS order
SNIPPET_TOKENS = 20
_BM25 = "bm25(exchange_fts, " + ", ".join(str(w) for w in COLUMN_WEIGHTS) + ")"
_REBUILD_PAGE = 2000


def write_index(conn: sqlite3.Connection, rows: Iterable[tuple[int, IndexDoc]]) -> None:
    conn.executemany(
        "INSERT INTO exchange_fts(rowid, user, assistant, tools, meta) VALUES (?, ?, ?, ?, ?)",
        ((pk, *doc.columns()) for pk, doc in rows),
    )


def delete_index(conn: sqlite3.Connection, pks: Iterable[int]) -> None:
    conn.executemany("DELETE FROM exchange_fts WHERE rowid = ?", ((pk,) for pk in pks))


def rebuild_index(conn: sqlite3.Connection) -> int:
    """Drop every index row and write one per exchange; returns the rows written."""
    conn.execute("DELETE FROM exchange_fts")
    done, last = 0, 0
    while True:
        page = conn.execute(
            f"SELECT e.pk, {_EXCHANGE_COLS}, {_SESSION_COLS} FROM exchanges e "
            "JOIN sessions s ON s.id = e.session_id WHERE e.pk > ? ORDER BY e.pk LIMIT ?",
            (last, _REBUILD_PAGE),
        ).fetchall()
        if not page:
            return done
        write_index(conn, ((r[0], _document(r)) for r in page))
        done += len(page)
        last = page[-1][0]


_EXCHANGE_COLS = prefixed(EXCHANGE_COLS, "e")
_SESSION_COLS = prefixed(SESSION_COLS, "s")


def _document(row: Any) -> IndexDoc:
    return exchange_document(exchange_from_row(row[1:13]), session_from_row(row[13:25]))


def _filter_sql(filters: SearchFilters) -> tuple[str, list[Any]]:
    clauses: list[str] = []
    params: list[Any] = []
    if not filters.include_subagents:
        clauses.append("s.subagent = 0")
    if filters.project is not None:
        clauses.append("s.project = ?")
        params.append(filters.project)
    if filters.harness is not None:
        clauses.append("s.harness = ?")
        params.append(filters.harness)
    if filters.session_id is not None:
        clauses.append("e.session_id = ?")
        params.append(filters.session_id)
    if filters.after is not None:
        clauses.append("coalesce(e.started_at, e.ended_at) >= ?")
        params.append(to_iso(filters.after))
    if filters.before is not None:
        clauses.append("coalesce(e.started_at, e.ended_at) < ?")
        params.append(to_iso(filters.before))
    return "".join(f" AND {c}" for c in clauses), params


def _top(
    conn: sqlite3.Connection, match: str, filters: SearchFilters, limit: int
) -> list[tuple[str, int, float]]:
    where, params = _filter_sql(filters)
    sql = (
        f"SELECT e.id, exchange_fts.rowid, {_BM25} AS r FROM exchange_fts "
        "CROSS JOIN exchanges e ON e.pk = exchange_fts.rowid "
        "CROSS JOIN sessions s ON s.id = e.session_id "
        f"WHERE exchange_fts MATCH ?{where} ORDER BY r LIMIT ?"
    )
    return conn.execute(sql, [match, *params, limit]).fetchall()


def _snippet(conn: sqlite3.Connection, match: str, rowid: int, column: int) -> str:
    row = conn.execute(
        "SELECT snippet(exchange_fts, ?, char(2), char(3), '…', ?) FROM exchange_fts "
        "WHERE exchange_fts MATCH ? AND rowid = ?",
        (column, SNIPPET_TOKENS, match, rowid),
    ).fetchone()
    return unsegment_cjk(row[0]) if row and row[0] else ""


def search(
    conn: sqlite3.Connection, query: str, filters: SearchFilters, limit: int
) -> list[TextHit]:
    """The best ``limit`` exchanges for ``query`` under ``filters`` (any query is safe)."""
    column = role_column(filters.role)
    parsed = parse_query(query)
    if limit <= 0 or parsed.empty:
        return []
    match = to_fts5(parsed, column)
    top = _top(conn, match, filters, limit) if match else []
    loose = parsed.loosened()
    if not top and loose is not None:
        match = to_fts5(loose, column)
        top = _top(conn, match, filters, limit) if match else []
    if not top or match is None:
        return []
    col_index = -1 if column is None else COLUMNS.index(column)
    return [
        TextHit(
            exchange_id=xid, score=-float(rank), snippet=_snippet(conn, match, rowid, col_index)
        )
        for xid, rowid, rank in top
    ]
