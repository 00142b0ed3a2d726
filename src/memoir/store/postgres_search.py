"""Full-text search on PostgreSQL: the ``exchange_search`` table and its queries.

``exchange_search(exchange_pk, user_doc, assistant_doc, tools_doc, meta_doc, tsv)`` holds
the :class:`~memoir.store.index_doc.IndexDoc` strings of each exchange (keyed by
``exchanges.pk``); ``tsv`` is a stored generated column, the ``english`` tsvectors of the
four columns (ASCII punctuation read as spaces, as FTS5's tokenizer does) weighted A, B,
C, D, under a GIN index. A parsed query (see
:mod:`memoir.store.query_text`) becomes a tsquery built from ``websearch_to_tsquery`` per
term (its words as a quoted phrase, so the text is never read as operators) combined with ``&&``,
``||`` and ``!!``; a role filter keeps only that column's weight (``ts_filter``). Ranking
is ``ts_rank`` with the weights below over the most recent ``RANK_WINDOW`` matches (as on
SQLite); ``ts_headline`` marks the snippet of the top rows only. All terms must match;
when nothing does, any term may.
"""

from __future__ import annotations

from typing import Any

import psycopg

from memoir.model import Session
from memoir.store.codec import (
    EXCHANGE_COLS,
    SESSION_COLS,
    exchange_from_row,
    prefixed,
    session_from_row,
)
from memoir.store.index_doc import IndexDoc, exchange_document, role_column
from memoir.store.port import SearchFilters, TextHit
from memoir.store.query_text import ParsedQuery, Term, parse_query, unsegment_cjk

__all__ = [
    "RANK_WEIGHTS",
    "TS_CONFIG",
    "delete_index",
    "rebuild_index",
    "reindex_session",
    "search",
    "tsquery_sql",
    "write_index",
]

TS_CONFIG = "english"  # must match the generated column (migration v2)
RANK_WEIGHTS = "{0.1, 0.25, 0.5, 1.0}"  # weights of D (meta), C (tools), B (assistant), A (user)
_WEIGHT_OF = {"user": "a", "assistant": "b", "tools": "c"}
_DOC_OF = {"user": "d.user_doc", "assistant": "d.assistant_doc", "tools": "d.tools_doc"}
_ALL_DOCS = "concat_ws(E'\\n', d.user_doc, d.assistant_doc, d.tools_doc, d.meta_doc)"
RANK_WINDOW = 5000  # as on SQLite: rank the most recent matches only
HEADLINE_OPTIONS = (
    'StartSel=\x02, StopSel=\x03, MaxWords=24, MinWords=10, MaxFragments=2, FragmentDelimiter=" … "'
)
_REBUILD_PAGE = 2000

INDEX_INSERT = (
    "INSERT INTO exchange_search (exchange_pk, user_doc, assistant_doc, tools_doc, meta_doc) "
    "SELECT pk, %s, %s, %s, %s FROM exchanges WHERE id = %s"
)


def write_index(conn: psycopg.Connection[Any], rows: list[tuple[str, IndexDoc]]) -> None:
    """Index rows for exchanges already written, by exchange id."""
    if rows:
        with conn.cursor() as cur:
            cur.executemany(INDEX_INSERT, [(*doc.columns(), xid) for xid, doc in rows])


def delete_index(conn: psycopg.Connection[Any], pks: list[int]) -> None:
    if pks:
        conn.execute("DELETE FROM exchange_search WHERE exchange_pk = ANY(%s)", (pks,))


_EXCHANGE_COLS = prefixed(EXCHANGE_COLS, "e")
_SESSION_COLS = prefixed(SESSION_COLS, "s")


def reindex_session(conn: psycopg.Connection[Any], session: Session) -> None:
    """Rewrite the index rows of one session's exchanges (its project or harness changed)."""
    rows = conn.execute(
        f"SELECT e.pk, {_EXCHANGE_COLS} FROM exchanges e WHERE e.session_id = %s", (session.id,)
    ).fetchall()
    delete_index(conn, [int(r[0]) for r in rows])
    write_index(conn, [(r[1], exchange_document(exchange_from_row(r[1:]), session)) for r in rows])


def rebuild_index(conn: psycopg.Connection[Any]) -> int:
    """Drop every index row and write one per exchange; returns the rows written."""
    conn.execute("DELETE FROM exchange_search")
    done, last = 0, 0
    while True:
        page = conn.execute(
            f"SELECT e.pk, {_EXCHANGE_COLS}, {_SESSION_COLS} FROM exchanges e "
            "JOIN sessions s ON s.id = e.session_id WHERE e.pk > %s ORDER BY e.pk LIMIT %s",
            (last, _REBUILD_PAGE),
        ).fetchall()
        if not page:
            return done
        docs = [
            (r[1], exchange_document(exchange_from_row(r[1:13]), session_from_row(r[13:25])))
            for r in page
        ]
        write_index(conn, docs)
        done += len(page)
        last = page[-1][0]


def _term_sql(term: Term, params: list[Any]) -> str:
    if term.prefix:
        params.append(f"{term.words[0]}:*")
        return f"to_tsquery('{TS_CONFIG}', %s)"
    params.append('"' + " ".join(term.words) + '"')
    return f"websearch_to_tsquery('{TS_CONFIG}', %s)"


def _any_sql(terms: tuple[Term, ...], params: list[Any]) -> str:
    return "(" + " || ".join(_term_sql(t, params) for t in terms) + ")"


def tsquery_sql(query: ParsedQuery) -> tuple[str, list[Any]] | None:
    """A SQL expression of type tsquery for ``query`` and its parameters."""
    if query.empty:
        return None
    params: list[Any] = []
    expr = " && ".join(_any_sql(g, params) for g in query.groups)
    if query.excluded:
        expr = f"({expr}) && !!{_any_sql(query.excluded, params)}"
    return expr, params


def _filter_sql(filters: SearchFilters) -> tuple[str, list[Any]]:
    clauses: list[str] = []
    params: list[Any] = []
    if not filters.include_subagents:
        clauses.append("NOT s.subagent")
    for column, value in (
        ("s.project", filters.project),
        ("s.harness", filters.harness),
        ("x.session_id", filters.session_id),
    ):
        if value is not None:
            clauses.append(f"{column} = %s")
            params.append(value)
    if filters.after is not None:
        clauses.append("coalesce(x.started_at, x.ended_at) >= %s")
        params.append(filters.after)
    if filters.before is not None:
        clauses.append("coalesce(x.started_at, x.ended_at) < %s")
        params.append(filters.before)
    return "".join(f" AND {c}" for c in clauses), params


def _top(
    conn: psycopg.Connection[Any],
    tsq: tuple[str, list[Any]],
    column: str | None,
    filters: SearchFilters,
    limit: int,
) -> list[tuple[Any, ...]]:
    """ts_rank over the most recent RANK_WINDOW matches (all of them when fewer)."""
    where, params = _filter_sql(filters)
    role = f" AND ts_filter(d.tsv, '{{{_WEIGHT_OF[column]}}}') @@ q.q" if column else ""
    sql = (
        f"WITH q AS (SELECT {tsq[0]} AS q), cand AS ("
        "SELECT x.id, d.exchange_pk AS pk, d.tsv FROM q, exchange_search d "
        "JOIN exchanges x ON x.pk = d.exchange_pk JOIN sessions s ON s.id = x.session_id "
        f"WHERE d.tsv @@ q.q{role}{where} ORDER BY d.exchange_pk DESC LIMIT {RANK_WINDOW}) "
        f"SELECT cand.id, cand.pk, ts_rank('{RANK_WEIGHTS}', cand.tsv, q.q) AS score "
        "FROM cand, q ORDER BY score DESC, cand.pk DESC LIMIT %s"
    )
    return conn.execute(sql, [*tsq[1], *params, limit]).fetchall()


def _snippets(
    conn: psycopg.Connection[Any], tsq: tuple[str, list[Any]], column: str | None, pks: list[int]
) -> dict[int, str]:
    doc = _DOC_OF[column] if column else _ALL_DOCS
    rows = conn.execute(
        f"WITH q AS (SELECT {tsq[0]} AS q) "
        f"SELECT d.exchange_pk, ts_headline('{TS_CONFIG}', {doc}, q.q, %s) "
        "FROM q, exchange_search d WHERE d.exchange_pk = ANY(%s)",
        [*tsq[1], HEADLINE_OPTIONS, pks],
    ).fetchall()
    return {int(pk): unsegment_cjk(text or "") for pk, text in rows}


def search(
    conn: psycopg.Connection[Any], query: str, filters: SearchFilters, limit: int
) -> list[TextHit]:
    """The best ``limit`` exchanges for ``query`` under ``filters`` (any query is safe)."""
    column = role_column(filters.role)
    parsed = parse_query(query)
    if limit <= 0 or parsed.empty:
        return []
    tsq = tsquery_sql(parsed)
    top = _top(conn, tsq, column, filters, limit) if tsq else []
    loose = parsed.loosened()
    if not top and loose is not None:
        tsq = tsquery_sql(loose)
        top = _top(conn, tsq, column, filters, limit) if tsq else []
    if not top or tsq is None:
        return []
    snippets = _snippets(conn, tsq, column, [int(r[1]) for r in top])
    return [
        TextHit(exchange_id=xid, score=float(score), snippet=snippets.get(int(pk), ""))
        for xid, pk, score in top
    ]
