"""What both backends' search modules share: a session's exchanges read in order (an
index row quotes its neighbours, so rows are written a session at a time), and the text
a snippet quotes, read from the stored exchanges. Each function takes a driver
connection and its :class:`~memoir.store.sql_common.Dialect`."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

from memoir.model import Exchange, Session
from memoir.store.codec import (
    EXCHANGE_COLS,
    SESSION_COLS,
    exchange_from_row,
    loads,
    prefixed,
    session_from_row,
)
from memoir.store.index_doc import MAX_COLUMN_CHARS, quoted_text, tools_text
from memoir.store.sql_common import Connection, Dialect, rows_in

__all__ = [
    "exchange_pks",
    "indexed_sessions",
    "ordered_exchanges",
    "quoted_texts",
    "session_stream",
    "span_rows",
]

# a session's exchanges in order ---------------------------------------------------------
_EXCHANGE_COLS = prefixed(EXCHANGE_COLS, "e")
_SESSION_COLS = prefixed(SESSION_COLS, "s")
_REBUILD_PAGE = 2000
# the two exchanges of a session before ordinal ? and the two after ordinal ?
_NEAR = (
    f"SELECT * FROM (SELECT e.pk, {_EXCHANGE_COLS} FROM exchanges e WHERE e.session_id = ? "
    "AND e.first_ordinal {op} ? ORDER BY e.first_ordinal {order} LIMIT 2)"
)
_NEIGHBOURS = (
    _NEAR.format(op="<", order="DESC")
    + " AS b UNION ALL "
    + _NEAR.format(op=">", order="ASC")
    + " AS a"
)


def ordered_exchanges(
    conn: Connection,
    dialect: Dialect,
    session_id: str,
    where: str = "",
    params: tuple[Any, ...] = (),
) -> list[tuple[int, Exchange]]:
    """(pk, exchange) of one session's exchanges matching ``where`` (``?`` placeholders)."""
    rows = conn.execute(
        dialect(f"SELECT e.pk, {_EXCHANGE_COLS} FROM exchanges e WHERE e.session_id = ?{where}"),
        (session_id, *params),
    ).fetchall()
    return [(int(r[0]), exchange_from_row(r[1:])) for r in rows]


def span_rows(
    conn: Connection, dialect: Dialect, session_id: str, changed: list[Exchange]
) -> tuple[list[Exchange], dict[str, int]]:
    """The exchanges whose index rows change with ``changed`` (exchanges of one session
    just added or grown, not empty), in ordinal order: the span from the first changed one
    to the last, and the two before and after it (their ``context`` column quotes the
    span); with the pk of each, by exchange id."""
    lo = min(x.first_ordinal for x in changed)
    hi = max(x.first_ordinal for x in changed)
    # both statements sent before either is read (one round trip in a pipeline)
    span = conn.execute(
        dialect(
            "SELECT pk, id FROM exchanges WHERE session_id = ? AND first_ordinal BETWEEN ? AND ? "
            "ORDER BY first_ordinal"
        ),
        (session_id, lo, hi),
    )
    near = conn.execute(dialect(_NEIGHBOURS), (session_id, lo, session_id, hi))
    keys = span.fetchall()
    found = [(int(r[0]), exchange_from_row(r[1:])) for r in near.fetchall()]
    before = sorted(
        (r for r in found if r[1].first_ordinal < lo), key=lambda r: -r[1].first_ordinal
    )
    after = sorted((r for r in found if r[1].first_ordinal > hi), key=lambda r: r[1].first_ordinal)
    pks = {str(i): int(pk) for pk, i in keys}
    known = {x.id: x for x in changed}
    if len(keys) > len(known):  # unchanged exchanges between changed ones
        between = " AND e.first_ordinal BETWEEN ? AND ?"
        for _, x in ordered_exchanges(conn, dialect, session_id, between, (lo, hi)):
            known.setdefault(x.id, x)
    pks.update((x.id, pk) for pk, x in before + after)
    ordered = (
        [x for _, x in reversed(before)]
        + [known[str(i)] for _, i in keys if str(i) in known]
        + [x for _, x in after]
    )
    return ordered, pks


def session_stream(
    conn: Connection, dialect: Dialect, session_id: str, pks: dict[str, int] | None = None
) -> Iterator[Exchange]:
    """A session's exchanges in ordinal order, page by page (their pks go into ``pks``)."""
    last = -1
    while True:
        page = ordered_exchanges(
            conn,
            dialect,
            session_id,
            " AND e.first_ordinal > ? ORDER BY e.first_ordinal LIMIT ?",
            (last, _REBUILD_PAGE),
        )
        for pk, x in page:
            if pks is not None:
                pks[x.id] = pk
            yield x
        if len(page) < _REBUILD_PAGE:
            return
        last = page[-1][1].first_ordinal


def indexed_sessions(conn: Connection) -> list[Session]:
    """Every session with an exchange, by id (the sessions an index rebuild visits)."""
    rows = conn.execute(
        f"SELECT {_SESSION_COLS} FROM sessions s WHERE EXISTS "
        "(SELECT 1 FROM exchanges e WHERE e.session_id = s.id) ORDER BY s.id"
    ).fetchall()
    return [session_from_row(r) for r in rows]


# what snippets quote --------------------------------------------------------------------
_QUOTED_COLS = (
    f"pk, substr(user_text, 1, {MAX_COLUMN_CHARS}), substr(assistant_text, 1, "
    f"{MAX_COLUMN_CHARS}), tool_names, substr(tool_excerpt, 1, {MAX_COLUMN_CHARS})"
)


def exchange_pks(conn: Connection, dialect: Dialect, exchange_ids: Sequence[str]) -> dict[int, str]:
    """pk → id of these exchanges (those that exist): the rows snippets are made for."""
    sql = "SELECT pk, id FROM exchanges WHERE id IN ({marks})"
    return {int(pk): xid for pk, xid in rows_in(conn, dialect, sql, exchange_ids)}


def quoted_texts(
    conn: Connection, dialect: Dialect, pks: Sequence[int], column: str | None
) -> dict[int, str]:
    """What a snippet of each exchange quotes (:func:`~memoir.store.index_doc.quoted_text`),
    by pk: read from its stored text, never the index's CJK-segmented copy. Each column is
    read only as far as the index reads it."""
    out: dict[int, str] = {}
    sql = f"SELECT {_QUOTED_COLS} FROM exchanges WHERE pk IN ({{marks}})"
    for pk, user, assistant, names, excerpt in rows_in(conn, dialect, sql, pks):
        tools = tools_text(loads(names) or (), excerpt)
        out[int(pk)] = quoted_text(user, assistant, tools, column)
    return out
