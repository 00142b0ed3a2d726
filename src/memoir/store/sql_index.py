"""What both backends' search modules share: a session's exchanges read in order (an
index row quotes its neighbours, so rows are written a session at a time), and the text
a snippet quotes, read from the stored exchanges. Each function takes a driver
connection and its :class:`~memoir.store.db.Dialect`."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
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
from memoir.store.db import Connection, Dialect, rows_in
from memoir.store.index_doc import MAX_COLUMN_CHARS, quoted_text, tools_text

__all__ = [
    "SpanRead",
    "exchange_pks",
    "indexed_sessions",
    "ordered_exchanges",
    "quoted_texts",
    "send_span_read",
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


@dataclass(frozen=True, slots=True)
class SpanRead:
    """What :func:`span_rows` reads of a span, read before the span's exchanges are
    written (in a pipeline, with the batch's other reads: one wait less): ``stored`` the
    (pk, id, first ordinal) of the exchanges stored with a first ordinal from ``lo`` to
    ``hi``, ``near`` the (pk, exchange) of the two before and the two after. A batch adds
    or grows exchanges and deletes none, so what was stored is still there after its writes,
    and the neighbours outside the span are not among them."""

    lo: int
    hi: int
    stored: list[tuple[int, str, int]]
    near: list[tuple[int, Exchange]]


_SPAN = (
    "SELECT pk, id, first_ordinal FROM exchanges WHERE session_id = ? "
    "AND first_ordinal BETWEEN ? AND ? ORDER BY first_ordinal"
)


def send_span_read(
    conn: Connection, dialect: Dialect, session_id: str, lo: int, hi: int
) -> Callable[[], SpanRead]:
    """Send :func:`span_rows`' two reads for the span ``lo``..``hi`` now (both statements
    before either is read); the returned function reads them."""
    span = conn.execute(dialect(_SPAN), (session_id, lo, hi))
    near = conn.execute(dialect(_NEIGHBOURS), (session_id, lo, session_id, hi))

    def read() -> SpanRead:
        stored = [(int(r[0]), str(r[1]), int(r[2])) for r in span.fetchall()]
        found = [(int(r[0]), exchange_from_row(r[1:])) for r in near.fetchall()]
        return SpanRead(lo, hi, stored, found)

    return read


def span_rows(
    conn: Connection,
    dialect: Dialect,
    session_id: str,
    changed: list[Exchange],
    read: SpanRead | None = None,
) -> tuple[list[Exchange], dict[str, int]]:
    """The exchanges whose index rows change with ``changed`` (exchanges of one session
    just added or grown, not empty), in ordinal order: the span from the first changed one
    to the last, and the two before and after it (their ``context`` column quotes the
    span); with the pk of each stored before ``read`` was (all of them without ``read``),
    by exchange id. ``read``: the span's rows read before ``changed`` were written, used
    when it covers the same span and none of its neighbours is among ``changed``."""
    lo = min(x.first_ordinal for x in changed)
    hi = max(x.first_ordinal for x in changed)
    ids = {x.id for x in changed}
    if read is None or (read.lo, read.hi) != (lo, hi) or any(x.id in ids for _, x in read.near):
        read = send_span_read(conn, dialect, session_id, lo, hi)()
        firsts = read.stored  # read after the writes: every exchange of the span
    else:  # read before the writes: the stored ones, then the changed ones as written
        firsts = [r for r in read.stored if r[1] not in ids]
        firsts += [(-1, x.id, x.first_ordinal) for x in changed]
        firsts.sort(key=lambda r: r[2])
    found = read.near
    before = sorted(
        (r for r in found if r[1].first_ordinal < lo), key=lambda r: -r[1].first_ordinal
    )
    after = sorted((r for r in found if r[1].first_ordinal > hi), key=lambda r: r[1].first_ordinal)
    pks = {i: pk for pk, i, _ in read.stored}
    known = {x.id: x for x in changed}
    if len(firsts) > len(known):  # unchanged exchanges between changed ones
        between = " AND e.first_ordinal BETWEEN ? AND ?"
        for _, x in ordered_exchanges(conn, dialect, session_id, between, (lo, hi)):
            known.setdefault(x.id, x)
    pks.update((x.id, pk) for pk, x in before + after)
    ordered = (
        [x for _, x in reversed(before)]
        + [known[i] for _, i, _ in firsts if i in known]
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
