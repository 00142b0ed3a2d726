"""The SQL both backends' search modules share, each function taking a driver
connection and its :class:`~memoir.store.db.Dialect`.

The index rows: a session's exchanges read in order (an
index row quotes its neighbours, so rows are written a session at a time), and the text
a snippet quotes, read from the stored exchanges.

The filters: what a :class:`~memoir.store.values.SearchFilters` keeps, described once and read two
ways: as SQL for the text index and the session list (:func:`filter_sql`, in either
backend's :class:`~memoir.store.db.Dialect`) and as a Python predicate for vector
candidates, which come from a matrix, not from a query (:func:`filter_predicate`).

A filter is a list of :class:`Condition` values — a subject, a comparison, a value — and
each subject names its SQL expression and how to read it off an exchange and its session
in the same table (:data:`SUBJECTS`), so the two readings cannot drift apart. A subject
that is unknown (SQL ``NULL``: an exchange with no time) fails every comparison, as in
SQL; an exchange whose session is not stored fails them all (the SQL joins the session).

The role is the one part read differently by design: text search requires the words in
that column (:func:`~memoir.store.index_doc.role_column`), meaning search requires the
exchange to have that part at all (a vector scores the whole exchange); so it is not a
condition here but a check of the predicate (:data:`HAS_PART`).
"""

from __future__ import annotations

import operator
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Literal, Protocol

from memoir.model import Exchange, Session
from memoir.store.codec import (
    EXCHANGE_COLS,
    SESSION_COLS,
    exchange_from_row,
    loads,
    prefixed,
    session_from_row,
)
from memoir.store.db import Connection, Dialect, Plan, Tx, fold_accents, rows_in
from memoir.store.index_doc import MAX_COLUMN_CHARS, quoted_text, tools_text
from memoir.store.search_text import ParsedQuery, Term
from memoir.store.values import SearchFilters

__all__ = [
    "HAS_PART",
    "SUBJECTS",
    "Condition",
    "ItemText",
    "SpanRead",
    "Subject",
    "conditions",
    "exchange_pks",
    "filter_predicate",
    "filter_sql",
    "indexed_sessions",
    "item_tsquery",
    "items_of_others",
    "ordered_exchanges",
    "others_hold",
    "others_hold_sql",
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


def others_hold(conn: Connection, dialect: Dialect, table: str, column: str, user: str) -> bool:
    """Whether a row of ``table`` belongs to someone other than ``user`` (two seeks of the
    index that leads with the owner ``column``). When none does, the owner's token in the
    full-text index narrows nothing, and a search leaves it out: on a one-user home,
    intersecting the match with a token every row holds doubled a text search's time."""
    row = conn.execute(dialect(others_hold_sql(table, column)), (user, user)).fetchone()
    return bool(row and row[0])


def others_hold_sql(table: str, column: str) -> str:
    """The statement of :func:`others_hold` (its two ``?``: the user, twice): the nearest
    owner below the user and the nearest above, each the first row of an ordered read,
    which only the owner index gives. (An ``EXISTS`` instead let PostgreSQL, without
    statistics on a freshly filled table, scan every row for an owner that was not there:
    25 ms per recall beside 100,000 other users' items.)"""
    below = f"SELECT {column} FROM {table} WHERE {column} < ? ORDER BY {column} DESC LIMIT 1"
    above = f"SELECT {column} FROM {table} WHERE {column} > ? ORDER BY {column} LIMIT 1"
    return f"SELECT ({below}) IS NOT NULL OR ({above}) IS NOT NULL"


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


Subject = Literal["subagent", "project", "harness", "session", "user", "time"]
Comparison = Literal["=", ">=", "<"]


@dataclass(frozen=True, slots=True)
class _Reading:
    """A subject in SQL over the aliases ``{e}`` (exchanges) and ``{s}`` (sessions), and
    in Python over an exchange and its session; ``session_sql`` is its SQL over the
    sessions table alone (None: not a property of a session)."""

    sql: str
    session_sql: str | None
    value: Callable[[Exchange, Session], Any]


SUBJECTS: dict[Subject, _Reading] = {
    "subagent": _Reading("{s}.subagent", "{s}.subagent", lambda x, s: s.flags.subagent),
    "project": _Reading("{s}.project", "{s}.project", lambda x, s: s.project),
    "harness": _Reading("{s}.harness", "{s}.harness", lambda x, s: str(s.harness)),
    "session": _Reading("{e}.session_id", "{s}.id", lambda x, s: x.session_id),
    "user": _Reading("{s}.user_name", "{s}.user_name", lambda x, s: s.user),
    "time": _Reading(
        "coalesce({e}.started_at, {e}.ended_at)", None, lambda x, s: x.started_at or x.ended_at
    ),
}
_COMPARE: dict[Comparison, Callable[[Any, Any], bool]] = {
    "=": operator.eq,
    ">=": operator.ge,
    "<": operator.lt,
}
# what an exchange must have to pass a role filter by meaning
HAS_PART: dict[str, Callable[[Exchange], bool]] = {
    "user": lambda x: bool(x.user_text.strip()),
    "assistant": lambda x: bool(x.assistant_text.strip()),
    "tool": lambda x: bool(x.tool_names or x.tool_excerpt),
}


@dataclass(frozen=True, slots=True)
class Condition:
    subject: Subject
    comparison: Comparison
    value: str | bool | datetime

    @property
    def of_session(self) -> bool:
        """Whether this is a property of the session (not of the exchange)."""
        return SUBJECTS[self.subject].session_sql is not None


def conditions(filters: SearchFilters) -> tuple[Condition, ...]:
    """The conditions an exchange must meet to pass ``filters`` (the role aside)."""
    out: list[Condition] = []
    if not filters.include_subagents:
        out.append(Condition("subagent", "=", False))
    named: tuple[tuple[Subject, str | None], ...] = (
        ("project", filters.project),
        ("harness", filters.harness),
        ("session", filters.session_id),
        ("user", filters.user),
    )
    out.extend(Condition(subject, "=", value) for subject, value in named if value is not None)
    if filters.after is not None:
        out.append(Condition("time", ">=", filters.after))
    if filters.before is not None:
        out.append(Condition("time", "<", filters.before))
    return tuple(out)


def filter_sql(
    filters: SearchFilters,
    dialect: Dialect,
    *,
    exchange: str | None = "e",
    session: str = "s",
) -> tuple[str, list[Any]]:
    """``filters`` as SQL clauses, each led by ``AND``, in ``dialect``, with their
    parameters: over ``exchange`` joined to its ``session`` (table aliases), or with
    ``exchange`` None over the sessions table alone — then only the conditions of the
    session (project, harness, session, subagents) are rendered."""
    clauses: list[str] = []
    params: list[Any] = []
    for condition in conditions(filters):
        reading = SUBJECTS[condition.subject]
        template = reading.sql if exchange is not None else reading.session_sql
        if template is None:
            continue
        column = template.format(e=exchange, s=session)
        clauses.append(f" AND {column} {condition.comparison} ?")
        value = condition.value
        params.append(dialect.time(value) if isinstance(value, datetime) else value)
    return dialect("".join(clauses)), params


def filter_predicate(filters: SearchFilters) -> Callable[[Exchange, Session | None], bool]:
    """Whether an exchange (with its session, None when that is not stored) passes
    ``filters``, role included: what :func:`filter_sql` keeps, for candidates already
    loaded."""
    checks = [
        (SUBJECTS[c.subject].value, _COMPARE[c.comparison], c.value) for c in conditions(filters)
    ]
    has_part = HAS_PART[filters.role] if filters.role is not None else None

    def passes(exchange: Exchange, session: Session | None) -> bool:
        if session is None:
            return False
        for read, compare, wanted in checks:
            value = read(exchange, session)
            if value is None or not compare(value, wanted):
                return False
        return has_part is None or has_part(exchange)

    return passes


# memory items' full text (each backend's search module has its own) -----------------
class ItemText(Protocol):
    """How one backend indexes and ranks memory items by their words."""

    def index(self, item_id: str, content: str, keys: Sequence[str]) -> Plan[None]:
        """Index the item just inserted (in the transaction that inserts it)."""
        ...

    def drop(self, tx: Tx, item_ids: Sequence[str]) -> None: ...
    def rank(
        self,
        tx: Tx,
        query: ParsedQuery,
        where: str,
        params: Sequence[Any],
        limit: int,
        owner: str | None = None,
    ) -> list[str]:
        """Ids of the items matching ``query`` and ``where`` (over alias ``i``), best first;
        ``owner``: the owner ``where`` keeps (the index narrows to that owner's rows)."""
        ...


def items_of_others(tx: Tx, owner: str) -> bool:
    """Whether anyone but ``owner`` has an item: when no one has, the owner's token in the
    index narrows nothing and a recall leaves it out (two seeks of the owner index)."""
    rows = tx.run(others_hold_sql("memory_items", "owner"), (owner, owner))
    return bool(rows and rows[0][0])


def item_tsquery(query: ParsedQuery, params: list[Any]) -> str:
    """The ``tsquery`` expression of a non-empty ``query``, its values appended to
    ``params`` (what recall ranks items with; keyed items rank the same way)."""
    expr = " && ".join(_any(g, params) for g in query.groups)
    if query.excluded:
        expr = f"({expr}) && !!{_any(query.excluded, params)}"
    return expr


def _term(term: Term, params: list[Any]) -> str:
    if term.prefix:
        params.append(f"{fold_accents(term.words[0])}:*")
        return "to_tsquery('english'::regconfig, ?)"
    params.append('"' + fold_accents(" ".join(term.words)) + '"')
    return "websearch_to_tsquery('english'::regconfig, ?)"


def _any(terms: tuple[Term, ...], params: list[Any]) -> str:
    return "(" + " || ".join(_term(t, params) for t in terms) + ")"
