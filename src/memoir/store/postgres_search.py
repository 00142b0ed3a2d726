"""Full-text search on PostgreSQL: the ``exchange_search`` table and its queries; and the
rows an ingest batch writes beside its index rows (events, exchanges: one ``unnest``
statement per table).

``exchange_search(exchange_pk, user_doc, assistant_doc, tools_doc, meta_doc, context_doc,
owner_doc, tsv)`` holds
the :class:`~memoir.store.index_doc.IndexDoc` strings of each exchange (keyed by
``exchanges.pk``), folded in Python as they are written (ASCII punctuation read as spaces,
as FTS5's tokenizer does, and accents folded: migration v18); ``tsv`` is a stored
generated column, the ``english`` tsvectors of the five columns weighted A, B,
C, D, D (``meta`` and ``context`` share D: a tsvector has four weights) and the owner's
:func:`~memoir.store.index_doc.owner_lexeme` (``#`` and the user name, without a position:
no query word equals it or prefixes it, and ``ts_rank`` of a query never counts it), under
a GIN index. A user's search asks for that lexeme as a second condition on ``tsv``: the
GIN scan intersects its posting list with the query's (migration v22), so the cost follows
the user's rows, not every user's.
As on SQLite, one query word at least must be in the exchange's own columns (not only in
``context``), and an excluded term is tested against its own columns only. A parsed query (see
:mod:`memoir.store.search_text`) becomes a tsquery built from ``websearch_to_tsquery`` per
term (its words as a quoted phrase, so the text is never read as operators) combined with ``&&``,
``||`` and ``!!``; a role filter keeps only that column's weight (``ts_filter``). Ranking
is ``ts_rank`` with the weights below over the most recent ``RANK_WINDOW`` matches (as on
SQLite); the top rows' snippets are made in Python from the exchanges' stored text
(:func:`~memoir.store.search_text.make_snippet`: ``ts_headline`` drops tag-like text, and
the indexed documents are CJK-segmented). All terms must match; when nothing does, any term
may.
"""

from __future__ import annotations

import weakref
from collections.abc import Callable, Sequence
from typing import Any

import psycopg

from memoir.model import Exchange, Session
from memoir.store import search_sql
from memoir.store.db import POSTGRES, Plan, Tx, fold_accents, fold_index_text
from memoir.store.index_doc import (
    IndexDoc,
    owner_tsquery,
    rewrite_span,
    role_column,
    session_documents,
    stream_documents,
)
from memoir.store.migrations.v017_v025 import plain_tsvector_sql
from memoir.store.search_sql import (
    SpanRead,
    exchange_pks,
    filter_sql,
    indexed_sessions,
    item_tsquery,
    items_of_others,
    ordered_exchanges,
    others_hold,
    quoted_texts,
    session_stream,
    span_rows,
)
from memoir.store.search_text import (
    SNIPPET_CHARS,
    ParsedQuery,
    Term,
    make_snippet,
    marked_words,
    parse_query,
)
from memoir.store.sql_ingest import ExchangeChange
from memoir.store.values import SearchFilters, TextHit

__all__ = [
    "EVENT_INSERT",
    "EXCHANGE_INSERT",
    "EXCHANGE_UPDATE",
    "RANK_WEIGHTS",
    "TS_CONFIG",
    "PostgresItemText",
    "delete_index",
    "delete_session_index",
    "insert_events",
    "many_rows",
    "owner_condition",
    "rebuild_index",
    "reindex_session",
    "reindex_span",
    "search",
    "send_span_read",
    "snippets_for",
    "store_exchanges",
    "tsquery_sql",
    "unnested",
    "write_index",
]

TS_CONFIG = "english"  # must match the generated column (migration v2)
# weights of D (meta, context), C (tools), B (assistant), A (user)
RANK_WEIGHTS = "{0.1, 0.25, 0.5, 1.0}"
_WEIGHT_OF = {"user": "a", "assistant": "b", "tools": "c"}
RANK_WINDOW = 5000  # as on SQLite: rank the most recent matches only
_REBUILD_PAGE = 2000

# all the rows of a write in one statement, the documents as arrays; each row's pk is found
# by its exchange id in a subquery of its own (one search of the unique index per row,
# whatever the server knows of the tables), an unknown id writes no row
INDEX_INSERT = (
    "INSERT INTO exchange_search (exchange_pk, user_doc, assistant_doc, tools_doc, meta_doc, "
    "context_doc, owner_doc) SELECT pk, u, a, t, m, c, o FROM (SELECT (SELECT pk FROM "
    "exchanges WHERE id = v.id) AS pk, v.* FROM unnest(%b::text[], %b::text[], %b::text[], "
    "%b::text[], %b::text[], %b::text[], %b::text[]) AS v(id, u, a, t, m, c, o) OFFSET 0) AS r "
    "WHERE pk IS NOT NULL"
)
_INDEX_INSERT_V21 = (
    "INSERT INTO exchange_search (exchange_pk, user_doc, assistant_doc, tools_doc, meta_doc, "
    "context_doc) SELECT pk, u, a, t, m, c FROM (SELECT (SELECT pk FROM exchanges WHERE "
    "id = v.id) AS pk, v.* FROM unnest(%b::text[], %b::text[], %b::text[], %b::text[], "
    "%b::text[], %b::text[]) AS v(id, u, a, t, m, c) OFFSET 0) AS r WHERE pk IS NOT NULL"
)
_INDEX_INSERT_V3 = (
    "INSERT INTO exchange_search (exchange_pk, user_doc, assistant_doc, tools_doc, meta_doc) "
    "SELECT pk, %s, %s, %s, %s FROM exchanges WHERE id = %s"
)
# the exchange's own words (all of tsv but ``context``), for excluded terms
_OWN_TSV = "(ts_filter(d.tsv, '{a,b,c}') || " + plain_tsvector_sql((("d.meta_doc", "D"),)) + ")"


# how many document columns ``exchange_search`` has, per connection: 6 at the current
# schema, fewer in a database at an older one (a migration before v22 or v4 writes its
# rows). Read once per connection (a catalog query is a round trip); every migration
# that changes the columns rebuilds the rows, and the rebuild reads it afresh.
_WIDTHS: weakref.WeakKeyDictionary[psycopg.Connection[Any], int] = weakref.WeakKeyDictionary()


def _width(conn: psycopg.Connection[Any], *, fresh: bool = False) -> int:
    known = None if fresh else _WIDTHS.get(conn)
    if known is not None:
        return known
    present = conn.execute(
        "SELECT count(*) FROM pg_attribute WHERE attrelid = 'exchange_search'::regclass "
        "AND attname IN ('context_doc', 'owner_doc') AND NOT attisdropped"
    ).fetchone()
    width = 4 + int(present[0] if present else 0)
    _WIDTHS[conn] = width
    return width


def write_index(
    conn: psycopg.Connection[Any], rows: list[tuple[str, IndexDoc]], width: int | None = None
) -> None:
    """Index rows for exchanges already written, by exchange id, their documents folded
    as the ``tsv`` column reads them (migration v18; folding is idempotent, so the
    ``translate()`` of an older schema's column reads them alike) and the owner as it is;
    ``width`` 5 leaves out ``owner_doc``, 4 ``context_doc`` too (the table of an older
    schema version, while a migration before v22 or v4 rebuilds it; None: as the table
    is). At width 5 and 6 all the rows are one statement, the documents as arrays."""
    if not rows:
        return
    width = _width(conn) if width is None else width
    if width >= 5:
        docs = [[fold_index_text(c) for c in doc.columns()[:5]] for _, doc in rows]
        arrays = [[xid for xid, _ in rows], *map(list, zip(*docs, strict=True))]
        if width == 6:
            conn.execute(INDEX_INSERT, [*arrays, [doc.owner for _, doc in rows]])
        else:
            conn.execute(_INDEX_INSERT_V21, arrays)
    else:
        params = [(*(fold_index_text(c) for c in doc.columns()[:width]), xid) for xid, doc in rows]
        with conn.cursor() as cur:
            cur.executemany(_INDEX_INSERT_V3, params)


def delete_index(conn: psycopg.Connection[Any], pks: list[int]) -> None:
    if pks:
        conn.execute("DELETE FROM exchange_search WHERE exchange_pk = ANY(%s)", (pks,))


def delete_session_index(conn: psycopg.Connection[Any], session_id: str) -> None:
    """Drop the index rows of a session's exchanges."""
    conn.execute(
        "DELETE FROM exchange_search WHERE exchange_pk IN "
        "(SELECT pk FROM exchanges WHERE session_id = %s)",
        (session_id,),
    )


def reindex_session(conn: psycopg.Connection[Any], session: Session) -> None:
    """Rewrite the index rows of one session's exchanges (its project or harness changed)."""
    rows = ordered_exchanges(conn, POSTGRES, session.id, " ORDER BY e.first_ordinal")
    delete_index(conn, [pk for pk, _ in rows])
    docs = session_documents([x for _, x in rows], session)
    write_index(conn, [(x.id, doc) for x, doc in docs])


def send_span_read(
    conn: psycopg.Connection[Any], session_id: str, lo: int, hi: int
) -> Callable[[], SpanRead]:
    """:func:`~memoir.store.search_sql.send_span_read` on PostgreSQL: an ingest batch
    sends it with its other reads, in the same pipeline."""
    return search_sql.send_span_read(conn, POSTGRES, session_id, lo, hi)


def reindex_span(
    conn: psycopg.Connection[Any],
    session: Session,
    changed: list[Exchange],
    read: SpanRead | None = None,
) -> None:
    """Write the index rows of ``changed`` (exchanges of ``session`` just added or grown)
    and rewrite their neighbours' rows, whose ``context`` column quotes them; ``read``:
    the span's rows as read before ``changed`` were written (see
    :func:`~memoir.store.search_sql.span_rows`)."""
    if not changed:
        return
    ordered, pks = span_rows(conn, POSTGRES, session.id, changed, read)
    docs = session_documents(ordered, session, rewrite_span(ordered, [x.id for x in changed]))
    # rows to replace: those of the unchanged exchanges rewritten (neighbours), by the pks
    # read with the span (a changed exchange has none: new, or grown under a new pk)
    ids = {x.id for x in changed}
    old = sorted({pks[x.id] for x, _ in docs if x.id not in ids and x.id in pks})
    if old:  # pks as values, one each: the primary key is searched whatever the plan
        marks = ", ".join(["%s"] * len(old))
        conn.execute(f"DELETE FROM exchange_search WHERE exchange_pk IN ({marks})", old)
    write_index(conn, [(x.id, doc) for x, doc in docs])


def rebuild_index(conn: psycopg.Connection[Any]) -> int:
    """Drop every index row and write one per exchange, session by session (an exchange's
    row quotes its neighbours); returns the rows written."""
    conn.execute("DELETE FROM exchange_search")
    width = _width(conn, fresh=True)
    done = 0
    for session in indexed_sessions(conn):
        batch: list[tuple[str, IndexDoc]] = []
        for x, doc in stream_documents(session_stream(conn, POSTGRES, session.id), session):
            batch.append((x.id, doc))
            if len(batch) >= _REBUILD_PAGE:
                write_index(conn, batch, width)
                done, batch = done + len(batch), []
        write_index(conn, batch, width)
        done += len(batch)
    return done


def _term_sql(term: Term, params: list[Any]) -> str:
    """A term as a tsquery, accent-folded as the index is (migration v8)."""
    if term.prefix:
        params.append(f"{fold_accents(term.words[0])}:*")
        return f"to_tsquery('{TS_CONFIG}', %s)"
    params.append('"' + fold_accents(" ".join(term.words)) + '"')
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


def owner_condition(filters: SearchFilters, tsv: str) -> tuple[str, list[Any]]:
    """`` AND tsv @@ <the owner's lexeme>`` for a search of ``filters.user`` (the GIN scan
    intersects it with the query), with its parameter; nothing without a user."""
    if filters.user is None:
        return "", []
    return f" AND {tsv} @@ %s::tsquery", [owner_tsquery(filters.user)]


def _top(
    conn: psycopg.Connection[Any],
    tsq: tuple[str, list[Any]],
    column: str | None,
    filters: SearchFilters,
    limit: int,
    groups: tuple[tuple[Term, ...], ...],
    excluded: tuple[Term, ...] = (),
) -> list[tuple[Any, ...]]:
    """ts_rank over the most recent RANK_WINDOW matches (all of them when fewer)."""
    where, params = filter_sql(filters, POSTGRES, exchange="x")
    role = f" AND ts_filter(d.tsv, '{{{_WEIGHT_OF[column]}}}') @@ q.q" if column else ""
    own_params: list[Any] = []
    if column is None:  # one query word at least in the exchange's own text
        terms = tuple(t for g in groups for t in g)
        role += f" AND {_OWN_TSV} @@ {_any_sql(terms, own_params)}"
    if excluded:
        role += f" AND NOT ({_OWN_TSV} @@ {_any_sql(excluded, own_params)})"
    owner_sql, owner_params = owner_condition(filters, "d.tsv")
    if filters.user is not None and not others_hold(
        conn, POSTGRES, "sessions", "user_name", filters.user
    ):
        owner_sql, owner_params = "", []  # the owner holds every row: it narrows nothing
    params = [*owner_params, *own_params, *params]
    sql = (
        f"WITH q AS (SELECT {tsq[0]} AS q), cand AS ("
        "SELECT x.id, d.exchange_pk AS pk, d.tsv FROM q, exchange_search d "
        "JOIN exchanges x ON x.pk = d.exchange_pk JOIN sessions s ON s.id = x.session_id "
        f"WHERE d.tsv @@ q.q{owner_sql}{role}{where} "
        f"ORDER BY d.exchange_pk DESC LIMIT {RANK_WINDOW}) "
        f"SELECT cand.id, cand.pk, ts_rank('{RANK_WEIGHTS}', cand.tsv, q.q) AS score "
        "FROM cand, q ORDER BY score DESC, cand.pk DESC LIMIT %s"
    )
    return conn.execute(sql, [*tsq[1], *params, limit]).fetchall()


def _snippets(
    conn: psycopg.Connection[Any], words: str, column: str | None, pks: list[int]
) -> dict[int, str]:
    """The exchange's own text around the query words, marked (in Python: ts_headline
    drops anything that looks like a tag — ``Vec<u8>``, ``<command-name>`` — and cannot
    mark ``app.py`` or an accented word the folded index matched). The text is the stored
    exchange's, not the index document's: that one's CJK is segmented, and the spaces
    segmentation added cannot be told from the ones typed."""
    texts = quoted_texts(conn, POSTGRES, pks, column)
    return {pk: make_snippet(text, words, SNIPPET_CHARS) for pk, text in texts.items()}


def search(
    conn: psycopg.Connection[Any],
    query: str,
    filters: SearchFilters,
    limit: int,
    *,
    snippets: bool = True,
) -> list[TextHit]:
    """The best ``limit`` exchanges for ``query`` under ``filters`` (any query is safe);
    without ``snippets`` the hits carry none (:func:`snippets_for` makes them later)."""
    column = role_column(filters.role)
    parsed = parse_query(query)
    if limit <= 0 or parsed.empty:
        return []
    # excluded terms are tested on the exchange's own columns, apart from the match
    tsq = tsquery_sql(ParsedQuery(groups=parsed.groups))
    top = _top(conn, tsq, column, filters, limit, parsed.groups, parsed.excluded) if tsq else []
    loose = parsed.loosened()
    if not top and loose is not None:
        tsq = tsquery_sql(ParsedQuery(groups=loose.groups))
        top = _top(conn, tsq, column, filters, limit, parsed.groups, parsed.excluded) if tsq else []
    if not top or tsq is None:
        return []
    shown = (
        _snippets(conn, marked_words(parsed), column, [int(r[1]) for r in top]) if snippets else {}
    )
    return [
        TextHit(exchange_id=xid, score=float(score), snippet=shown.get(int(pk), ""))
        for xid, pk, score in top
    ]


def snippets_for(
    conn: psycopg.Connection[Any], query: str, filters: SearchFilters, exchange_ids: list[str]
) -> dict[str, str]:
    """The snippets :func:`search` would give these exchanges for ``query`` (only its
    role filter matters), by exchange id; an exchange that is gone has none."""
    parsed = parse_query(query)
    if parsed.empty or not exchange_ids:
        return {}
    pks = exchange_pks(conn, POSTGRES, exchange_ids)
    shown = _snippets(conn, marked_words(parsed), role_column(filters.role), list(pks))
    return {pks[pk]: text for pk, text in shown.items()}


# memory items' full text ---------------------------------------------------------------
class PostgresItemText:
    def index(self, item_id: str, content: str, keys: Sequence[str]) -> Plan[None]:
        yield from ()  # no statement: the tsv column is generated from content and keys

    def drop(self, tx: Tx, item_ids: Sequence[str]) -> None:
        return None

    def rank(
        self,
        tx: Tx,
        query: ParsedQuery,
        where: str,
        params: Sequence[Any],
        limit: int,
        owner: str | None = None,
    ) -> list[str]:
        if query.empty:
            return []
        tsq_params: list[Any] = []
        expr = item_tsquery(query, tsq_params)
        mine, mine_params = "", []
        if owner is not None and items_of_others(tx, owner):
            mine, mine_params = " AND i.tsv @@ ?::tsquery", [owner_tsquery(owner)]
        rows = tx.run(
            f"SELECT i.id FROM memory_items i, (SELECT {expr}) AS q(q) "
            f"WHERE i.tsv @@ q.q{mine} AND {where} "
            "ORDER BY ts_rank(i.tsv, q.q) DESC, i.id LIMIT ?",
            (*tsq_params, *mine_params, *params, limit),
        )
        return [str(r[0]) for r in rows]


# the rows an ingest batch writes (sql_ingest.IngestWrites, for postgres_store) ---------
# many rows as one array per column, unnested by the server in the order given (the
# sequence numbers new exchanges in batch order); in binary (%b): as text, psycopg quotes
# and escapes each element in Python (1 s for 1,000 texts of 2 kB, against 6 ms)
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


def many_rows(conn: psycopg.Connection[Any], sql: str, rows: list[tuple[Any, ...]]) -> None:
    with conn.cursor() as cur:
        cur.executemany(sql, rows)


def unnested(conn: psycopg.Connection[Any], sql: str, rows: list[tuple[Any, ...]]) -> None:
    """``sql`` (an ``unnest`` of one array per column) over ``rows``, a page at a time."""
    for at in range(0, len(rows), _UNNEST_ROWS):
        conn.execute(
            sql, [list(column) for column in zip(*rows[at : at + _UNNEST_ROWS], strict=True)]
        )


def store_exchanges(conn: psycopg.Connection[Any], changes: list[ExchangeChange]) -> None:
    """New rows (the sequence numbers them) and grown ones (the next value of it)."""
    inserts = [c.params for c in changes if c.old_pk is None]
    updates = [(*c.params[1:], c.exchange.id) for c in changes if c.old_pk is not None]
    if inserts:
        unnested(conn, EXCHANGE_INSERT, inserts)
    if updates:
        many_rows(conn, EXCHANGE_UPDATE, updates)


def insert_events(conn: psycopg.Connection[Any], rows: list[tuple[Any, ...]]) -> None:
    """An ingest batch's events (:data:`EVENT_INSERT`'s parameters), as arrays."""
    unnested(conn, EVENT_INSERT, rows)
