"""Full-text ranking of memory items, the one part of the items' SQL that differs by
backend: SQLite keeps a ``memory_fts`` FTS5 table in step with the items (bm25; an
item's index row is its ``fts_row``, removed with it by a trigger),
PostgreSQL a generated ``tsv`` column (``ts_rank``). Both read the structured query of
:mod:`memoir.store.query_text`, accent-folded as their exchange indexes are.

Each item's index row also names its owner as the exchange index does (migration v22;
:func:`~memoir.store.index_doc.owner_token` in SQLite's ``owner`` column, the
:func:`~memoir.store.index_doc.owner_lexeme` in PostgreSQL's ``tsv``), and a recall for
one owner asks for it beside the query: the index intersects the two, so its cost follows
the owner's items, not every user's. No query text reaches it (the query is matched in
``body`` only; no query word equals or prefixes the lexeme) and it never ranks."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Protocol

from memoir.store.db import Tx, fold_accents
from memoir.store.index_doc import owner_token, owner_tsquery
from memoir.store.migrations.v007_v013 import fts_body
from memoir.store.query_text import ParsedQuery, Term, to_fts5

__all__ = ["ItemText", "PostgresItemText", "SqliteItemText", "fts_values", "tsquery_sql"]


class ItemText(Protocol):
    def index(self, tx: Tx, item_id: str, content: str, keys: Sequence[str]) -> None: ...
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


def fts_values(content: str, keys: Sequence[str], owner: str) -> tuple[str, str]:
    """The ``body`` and ``owner`` of an item's row in SQLite's ``memory_fts``."""
    return fts_body(content, keys), owner_token(owner)


class SqliteItemText:
    def index(self, tx: Tx, item_id: str, content: str, keys: Sequence[str]) -> None:
        (row,) = tx.run(
            "UPDATE memory_items SET fts_row = (SELECT COALESCE(max(fts_row), 0) + 1 FROM "
            "memory_items) WHERE id = ? RETURNING fts_row, owner",
            (item_id,),
        )
        tx.run(
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
        if owner is not None:
            match = f'({match}) AND {{owner}} : "{owner_token(owner)}"'
        rows = tx.run(
            "SELECT i.id FROM memory_fts f JOIN memory_items i ON i.fts_row = f.rowid "
            f"WHERE memory_fts MATCH ? AND {where} ORDER BY bm25(memory_fts, 1.0, 0.0), i.id "
            "LIMIT ?",
            (match, *params, limit),
        )
        return [str(r[0]) for r in rows]


class PostgresItemText:
    def index(self, tx: Tx, item_id: str, content: str, keys: Sequence[str]) -> None:
        return None  # the tsv column is generated from content and keys

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
        expr = tsquery_sql(query, tsq_params)
        mine, mine_params = "", []
        if owner is not None:
            mine, mine_params = " AND i.tsv @@ ?::tsquery", [owner_tsquery(owner)]
        rows = tx.run(
            f"SELECT i.id FROM memory_items i, (SELECT {expr}) AS q(q) "
            f"WHERE i.tsv @@ q.q{mine} AND {where} "
            "ORDER BY ts_rank(i.tsv, q.q) DESC, i.id LIMIT ?",
            (*tsq_params, *mine_params, *params, limit),
        )
        return [str(r[0]) for r in rows]


def tsquery_sql(query: ParsedQuery, params: list[Any]) -> str:
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
