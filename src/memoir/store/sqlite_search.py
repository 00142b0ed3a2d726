"""Full-text search on SQLite: the FTS5 table ``exchange_fts`` and its queries.

``exchange_fts(user, assistant, tools, meta, context, owner)`` is a regular FTS5 table
(porter stemming over unicode61, diacritics folded) whose ``rowid`` is ``exchanges.pk``;
its columns are the :class:`~memoir.store.index_doc.IndexDoc` strings and the owner's
:func:`~memoir.store.index_doc.owner_token` (weight 0: a row matched only there is no
hit, so no query text finds it). Ranking is bm25 with column weights; a query runs in
two steps: the top ``limit`` rowids (FTS5 drives, each match joins its exchange and
session by primary key for the filters), then ``snippet()`` for those rows only. All
terms must match, in the exchange's own columns or its neighbours' excerpt
(``context``), and one of them at least in its own columns; when nothing does, any term
may (a loosened query). Excluded terms and snippets look at the exchange's own columns
only. FTS5 quotes the index's text, verbatim but for the spaces CJK segmentation put
around each CJK character; the snippet of an exchange whose text holds CJK is made in
Python instead, from its stored text (:func:`~memoir.store.search_text.make_snippet`,
as PostgreSQL's are).

Cost is bounded on big archives, where bm25 would read every posting of every term:

- bm25 ranks the most recent ``RANK_WINDOW`` matches (FTS5 walks posting lists
  backwards and stops), all of them when there are fewer;
- a term in more than ``UBIQUITOUS`` of recent exchanges is dropped
  (:func:`~memoir.store.search_text.drop_ubiquitous`);
- a user's search intersects the match with the owner's token, so its cost follows the
  user's rows, not every user's (:func:`owner_prefilter`);
- filters narrow the match inside FTS5 before any join: the project token, harness
  words and the month tokens of a date range on the ``meta`` column
  (:func:`meta_prefilter`), a session by the rowid range of its exchanges; the SQL
  filters after the join stay exact.

Every function takes an open connection and runs inside the caller's transaction.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable, Sequence
from datetime import datetime, timedelta
from typing import Any

from memoir.model import Exchange, Session
from memoir.store.codec import to_utc
from memoir.store.db import SQLITE, Plan, Stmt, Tx
from memoir.store.index_doc import (
    IndexDoc,
    month_token,
    owner_token,
    project_token,
    rewrite_span,
    role_column,
    session_documents,
    stream_documents,
)
from memoir.store.migrations.v007_v013 import fts_body
from memoir.store.search_sql import (
    exchange_pks,
    filter_sql,
    indexed_sessions,
    items_of_others,
    ordered_exchanges,
    others_hold,
    quoted_texts,
    session_stream,
    span_rows,
)
from memoir.store.search_text import (
    MARK_START,
    SNIPPET_CHARS,
    ParsedQuery,
    Term,
    drop_ubiquitous,
    has_cjk,
    make_snippet,
    marked_words,
    parse_query,
    to_fts5,
    unsegment_cjk,
    words_of,
)
from memoir.store.values import SearchFilters, TextHit

__all__ = [
    "COLUMN_WEIGHTS",
    "RANK_WINDOW",
    "SqliteItemText",
    "delete_index",
    "delete_session_index",
    "fts_values",
    "meta_prefilter",
    "owner_prefilter",
    "rebuild_index",
    "reindex_session",
    "reindex_span",
    "search",
    "snippets_for",
    "write_index",
]

COLUMNS = ("user", "assistant", "tools", "meta", "context", "owner")
# bm25 weights, in COLUMNS order; a word in a neighbour's excerpt counts a quarter of the
# same word in the exchange's own prompt (it hints at the topic, it is not the turn); the
# owner's token counts nothing (it narrows, it never ranks or makes a hit)
COLUMN_WEIGHTS = (4.0, 2.0, 1.0, 0.5, 1.0, 0.0)
OWN_COLUMNS = "user assistant tools meta"  # an FTS5 column filter: the exchange's own
# what a snippet quotes: the words of the exchange, never the index's own keys (project,
# harness, date words) — a hit on those alone is shown from the exchange's text instead
SNIPPET_COLUMNS = "user assistant tools"
SNIPPET_TOKENS = 20
# Cost bounds for big archives (bm25 in FTS5 reads every posting of every query term):
RANK_WINDOW = 5000  # bm25 ranks the most recent RANK_WINDOW matches (all, when fewer)
BIG_CORPUS = 50_000  # from this many exchanges on, ubiquitous terms are dropped …
UBIQUITOUS = 0.3  # … a term in more than this share of recent exchanges
SAMPLE_ROWS = 20_000  # … measured over the most recent SAMPLE_ROWS exchanges
MAX_MONTHS = 24  # a date range up to this many months also narrows the match by month
_BM25 = "bm25(exchange_fts, " + ", ".join(str(w) for w in COLUMN_WEIGHTS) + ")"
# A match must hold one query word at least in the exchange's own columns, not only in
# its neighbours' excerpt: bm25 with ``context`` weighted 0 is 0 exactly then (FTS5 floors
# idf above 0). A per-row test over the posting data already read; an FTS5 column-filtered
# clause instead walks every posting list a second time (text p50 28 → 20 ms at 1M).
_OWN_HIT = "bm25(exchange_fts, " + ", ".join(str(w) for w in COLUMN_WEIGHTS[:4]) + ", 0.0, 0.0) < 0"
_REBUILD_PAGE = 2000


def _width(conn: sqlite3.Connection) -> int:
    """How many columns ``exchange_fts`` has: fewer than :data:`COLUMNS` in a database at
    an older schema version (a migration before v22 writes its rows; a PRAGMA, no I/O)."""
    return len(conn.execute("PRAGMA table_info(exchange_fts)").fetchall())


def write_index(
    conn: sqlite3.Connection, rows: Iterable[tuple[int, IndexDoc]], width: int | None = None
) -> None:
    """Insert index rows; ``width`` < 6 writes the first columns only (the table of an
    older schema version, while a migration before v22 rebuilds it; None: as many as
    the table has)."""
    width = _width(conn) if width is None else width
    names = ", ".join(COLUMNS[:width])
    marks = ", ".join("?" * (width + 1))
    conn.executemany(
        f"INSERT INTO exchange_fts(rowid, {names}) VALUES ({marks})",
        ((pk, *(*doc.columns(), owner_token(doc.owner))[:width]) for pk, doc in rows),
    )


def delete_index(conn: sqlite3.Connection, pks: Iterable[int]) -> None:
    conn.executemany("DELETE FROM exchange_fts WHERE rowid = ?", ((pk,) for pk in pks))


def delete_session_index(conn: sqlite3.Connection, session_id: str) -> None:
    """Drop the index rows of a session's exchanges."""
    rows = conn.execute("SELECT pk FROM exchanges WHERE session_id = ?", (session_id,))
    delete_index(conn, [pk for (pk,) in rows.fetchall()])


def reindex_session(conn: sqlite3.Connection, session: Session) -> None:
    """Rewrite the index rows of one session's exchanges (its project or harness changed:
    the ``meta`` column names them)."""
    rows = ordered_exchanges(conn, SQLITE, session.id, " ORDER BY e.first_ordinal")
    pks = {x.id: pk for pk, x in rows}
    delete_index(conn, pks.values())
    docs = session_documents([x for _, x in rows], session)
    write_index(conn, ((pks[x.id], doc) for x, doc in docs))


def reindex_span(
    conn: sqlite3.Connection, session: Session, changed: list[Exchange], read: None = None
) -> None:
    """Write the index rows of ``changed`` (exchanges of ``session`` just added or grown)
    and rewrite their neighbours' rows, whose ``context`` column quotes them (``read``:
    none here, SQLite reads the span after the writes)."""
    if not changed:
        return
    ordered, pks = span_rows(conn, SQLITE, session.id, changed)
    docs = session_documents(ordered, session, rewrite_span(ordered, [x.id for x in changed]))
    delete_index(conn, [pks[x.id] for x, _ in docs])
    write_index(conn, ((pks[x.id], doc) for x, doc in docs))


def rebuild_index(conn: sqlite3.Connection) -> int:
    """Drop every index row and write one per exchange, session by session (an exchange's
    row quotes its neighbours); returns the rows written."""
    conn.execute("DELETE FROM exchange_fts")
    width = _width(conn)
    done = 0
    for session in indexed_sessions(conn):
        pks: dict[str, int] = {}
        batch: list[tuple[int, IndexDoc]] = []
        exchanges = session_stream(conn, SQLITE, session.id, pks)
        for x, doc in stream_documents(exchanges, session):
            batch.append((pks.pop(x.id), doc))
            if len(batch) >= _REBUILD_PAGE:
                write_index(conn, batch, width)
                done, batch = done + len(batch), []
        write_index(conn, batch, width)
        done += len(batch)
    # one b-tree per term instead of the many segments a bulk load leaves: on a
    # 1M-exchange archive this took search p50 from 24 ms to 5 ms
    conn.execute("INSERT INTO exchange_fts(exchange_fts) VALUES ('optimize')")
    return done


def _fractions(conn: sqlite3.Connection, query: ParsedQuery) -> dict[Term, float]:
    """Share of recent documents holding each positive term (big corpora only)."""
    top = int(conn.execute("SELECT coalesce(max(pk), 0) FROM exchanges").fetchone()[0])
    if top < BIG_CORPUS:
        return {}
    out: dict[Term, float] = {}
    for term in {t for g in query.groups for t in g}:
        match = to_fts5(ParsedQuery(groups=((term,),)))
        (n,) = conn.execute(
            "SELECT count(*) FROM exchange_fts WHERE exchange_fts MATCH ? AND rowid > ?",
            (match, top - SAMPLE_ROWS),
        ).fetchone()
        out[term] = n / SAMPLE_ROWS
    return out


def _months(after: datetime, before: datetime) -> list[str] | None:
    """Month tokens of every month the range touches ([] for an empty range, None past
    MAX_MONTHS)."""
    a, b = to_utc(after), to_utc(before - timedelta(microseconds=1))
    assert a is not None and b is not None
    if b < a:
        return []
    count = (b.year - a.year) * 12 + b.month - a.month + 1
    if count > MAX_MONTHS:
        return None
    out = []
    for i in range(count):
        year, month = divmod(a.month - 1 + i, 12)
        out.append(month_token(datetime(a.year + year, month + 1, 1)))
    return out


def meta_prefilter(filters: SearchFilters) -> str | None:
    """An FTS5 clause on the ``meta`` column that every exchange passing ``filters`` matches
    (the project token, harness words, the month tokens of a date range), so FTS5
    intersects posting lists instead of joining each match to test it. The SQL filters
    after the join stay exact."""
    clauses = []
    if filters.project is not None:
        clauses.append(f'"{project_token(filters.project)}"')
    words = words_of(filters.harness) if filters.harness else ()
    if words:
        clauses.append('"' + " ".join(words) + '"')
    if filters.after is not None and filters.before is not None:
        months = _months(filters.after, filters.before)
        if months:
            clauses.append("(" + " OR ".join(f'"{m}"' for m in months) + ")")
    if not clauses:
        return None
    return "{meta} : (" + " AND ".join(clauses) + ")"


def owner_prefilter(filters: SearchFilters) -> str | None:
    """The FTS5 clause on the ``owner`` column every exchange of ``filters.user`` matches
    (None without a user): FTS5 intersects the query's posting lists with the owner's.
    The SQL filter after the join stays exact."""
    if filters.user is None:
        return None
    return '{owner} : "' + owner_token(filters.user) + '"'


def _select(
    filters: SearchFilters,
    order: str,
    inner_limit: int | None,
    span: tuple[int, int] | None,
    own: bool,
) -> tuple[str, list[Any]]:
    where, params = filter_sql(filters, SQLITE)
    if own:
        where = f" AND {_OWN_HIT}{where}"
    if span is not None:
        where += " AND exchange_fts.rowid BETWEEN ? AND ?"
        params.extend(span)
    sql = (
        f"SELECT e.id AS id, exchange_fts.rowid AS rid, {_BM25} AS r FROM exchange_fts "
        "CROSS JOIN exchanges e ON e.pk = exchange_fts.rowid "
        "CROSS JOIN sessions s ON s.id = e.session_id "
        f"WHERE exchange_fts MATCH ?{where} ORDER BY {order}"
    )
    if inner_limit is not None:
        sql += f" LIMIT {int(inner_limit)}"
    return sql, params


def _ranked(
    conn: sqlite3.Connection,
    query: ParsedQuery,
    column: str | None,
    filters: SearchFilters,
    limit: int,
) -> list[tuple[str, int, float]]:
    """(exchange id, rowid, score) of the best matches: bm25 over the most recent
    RANK_WINDOW matches, or recency alone when every term is ubiquitous."""
    reduced, recency = drop_ubiquitous(query, _fractions(conn, query), UBIQUITOUS)
    chosen = query if recency else reduced
    match = _match(chosen, column)
    if match is None:
        return []
    own = column is None  # the per-row _OWN_HIT test
    pre = meta_prefilter(filters)
    if pre is not None:
        if own:  # the prefilter's meta tokens would pass _OWN_HIT: an FTS5 clause instead
            terms = tuple(t for g in chosen.groups for t in g)
            match = f"({match}) AND ({to_fts5(ParsedQuery(groups=(terms,)), OWN_COLUMNS)})"
            own = False
        match = f"({match}) AND {pre}"
    owner = owner_prefilter(filters)
    if owner is not None and others_hold(conn, SQLITE, "sessions", "user_name", str(filters.user)):
        match = f"({match}) AND {owner}"  # (a one-owner home: it would narrow nothing)
    span = None
    if filters.session_id is not None:
        lo, hi = conn.execute(
            "SELECT min(pk), max(pk) FROM exchanges WHERE session_id = ?", (filters.session_id,)
        ).fetchone()
        if lo is None:
            return []
        span = (int(lo), int(hi))
    if recency:
        sql, params = _select(filters, "exchange_fts.rowid DESC", None, span, own)
        rows = conn.execute(
            sql.replace(f"{_BM25} AS r", "0 AS r") + " LIMIT ?", [match, *params, limit]
        ).fetchall()
        return [(xid, rid, 1e-9 * (limit - i)) for i, (xid, rid, _) in enumerate(rows)]
    inner, params = _select(filters, "exchange_fts.rowid DESC", RANK_WINDOW, span, own)
    rows = conn.execute(
        f"SELECT id, rid, r FROM ({inner}) ORDER BY r LIMIT ?", [match, *params, limit]
    ).fetchall()
    return [(xid, rid, -float(r)) for xid, rid, r in rows]


def _match(query: ParsedQuery, column: str | None) -> str | None:
    """FTS5 MATCH text: the terms anywhere (``context`` included) or in ``column``; an
    excluded term rules out an exchange whose own text holds it, not its neighbours'. (That
    one term at least is the exchange's own is :data:`_OWN_HIT`, tested per row.)"""
    if column is not None:
        return to_fts5(query, column)
    positive = to_fts5(ParsedQuery(groups=query.groups))
    if positive is None or not query.excluded:
        return positive
    excluded = to_fts5(ParsedQuery(groups=(query.excluded,)), OWN_COLUMNS)
    return f"{positive} NOT ({excluded})"


def _snippet(conn: sqlite3.Connection, match: str, rowid: int, column: int) -> str:
    row = conn.execute(
        "SELECT snippet(exchange_fts, ?, char(2), char(3), '…', ?) FROM exchange_fts "
        "WHERE exchange_fts MATCH ? AND rowid = ?",
        (column, SNIPPET_TOKENS, match, rowid),
    ).fetchone()
    return row[0] if row and row[0] else ""


def _snippets(
    conn: sqlite3.Connection, query: ParsedQuery, marks: str, column: str | None, rowids: list[int]
) -> list[str]:
    """FTS5's snippet of each row, but for an exchange whose own text holds CJK: FTS5
    quotes the index's copy, spaced around every CJK character, so that one is made from
    the stored text. Deciding by the stored text, not by FTS5's snippet, spares FTS5 a
    snippet it would throw away (a CJK row is a token per character: its snippet() is
    the dearest)."""
    texts = quoted_texts(conn, SQLITE, rowids, column)
    words = marked_words(query)
    col_index = -1 if column is None else COLUMNS.index(column)
    out = []
    for rid in rowids:
        text = texts.get(rid, "")
        if not has_cjk(text):
            out.append(_snippet(conn, marks, rid, col_index))
            continue
        made = make_snippet(text, words, SNIPPET_CHARS)
        if MARK_START not in made:
            # no query word where Python looks: the index matched a stem of one ("locks"
            # in "locking"), which only FTS5 knows — its snippet, marked, as before
            made = unsegment_cjk(_snippet(conn, marks, rid, col_index)) or made
        out.append(made)
    return out


def _marks(parsed: ParsedQuery, column: str | None) -> str | None:
    """FTS5 text of any query word in the exchange's own text: what a snippet marks."""
    return to_fts5(parsed.loosened() or parsed, column or SNIPPET_COLUMNS)


def search(
    conn: sqlite3.Connection,
    query: str,
    filters: SearchFilters,
    limit: int,
    *,
    snippets: bool = True,
) -> list[TextHit]:
    """The best ``limit`` exchanges for ``query`` under ``filters`` (any query is safe);
    without ``snippets`` the hits carry none (:func:`snippets_for` makes them later, for
    the few a page shows: a snippet is a query of its own per row)."""
    column = role_column(filters.role)
    parsed = parse_query(query)
    if limit <= 0 or parsed.empty:
        return []
    top = _ranked(conn, parsed, column, filters, limit)
    loose = parsed.loosened()
    if not top and loose is not None:
        top = _ranked(conn, loose, column, filters, limit)
    marks = _marks(parsed, column)
    if not top or marks is None:
        return []
    if not snippets:
        return [TextHit(xid, score, "") for xid, _, score in top]
    shown = _snippets(conn, parsed, marks, column, [rid for _, rid, _ in top])
    return [TextHit(xid, score, shown[i]) for i, (xid, _, score) in enumerate(top)]


def snippets_for(
    conn: sqlite3.Connection, query: str, filters: SearchFilters, exchange_ids: list[str]
) -> dict[str, str]:
    """The snippets :func:`search` would give these exchanges for ``query`` (only its
    role filter matters), by exchange id; an exchange that is gone has none."""
    column = role_column(filters.role)
    parsed = parse_query(query)
    marks = _marks(parsed, column)
    if marks is None or not exchange_ids:
        return {}
    pks = exchange_pks(conn, SQLITE, exchange_ids)
    rowids = list(pks)
    shown = _snippets(conn, parsed, marks, column, rowids)
    return {pks[rid]: text for rid, text in zip(rowids, shown, strict=True)}


# memory items' full text ---------------------------------------------------------------
def fts_values(content: str, keys: Sequence[str], owner: str) -> tuple[str, str]:
    """The ``body`` and ``owner`` of an item's row in SQLite's ``memory_fts``."""
    return fts_body(content, keys), owner_token(owner)


class SqliteItemText:
    def index(self, item_id: str, content: str, keys: Sequence[str]) -> Plan[None]:
        (row,) = yield Stmt(
            "UPDATE memory_items SET fts_row = (SELECT COALESCE(max(fts_row), 0) + 1 FROM "
            "memory_items) WHERE id = ? RETURNING fts_row, owner",
            (item_id,),
        )
        yield Stmt(
            "INSERT INTO memory_fts (rowid, body, owner) VALUES (?, ?, ?)",
            (int(row[0]), *fts_values(content, keys, str(row[1]))),
        )

    def drop(self, tx: Tx, item_ids: Sequence[str]) -> None:
        return None  # a trigger drops an item's index row with the item

    def rank(
        self,
        tx: Tx,
        query: ParsedQuery,
        where: str,
        params: Sequence[Any],
        limit: int,
        owner: str | None = None,
    ) -> list[str]:
        match = to_fts5(query, "body")
        if match is None:
            return []
        if owner is not None and items_of_others(tx, owner):
            match = f'({match}) AND {{owner}} : "{owner_token(owner)}"'
        rows = tx.run(
            "SELECT i.id FROM memory_fts f JOIN memory_items i ON i.fts_row = f.rowid "
            f"WHERE memory_fts MATCH ? AND {where} ORDER BY bm25(memory_fts, 1.0, 0.0), i.id "
            "LIMIT ?",
            (match, *params, limit),
        )
        return [str(r[0]) for r in rows]
