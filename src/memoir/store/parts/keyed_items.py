"""Keyed items: JSON values one owner keeps under a namespace and a key (v20), with the
full-text ranking their search uses — SQLite's ``keyed_fts`` (bm25), PostgreSQL's
generated ``tsv`` column (``ts_rank``), both read from the structured query of
:mod:`memoir.store.search_text` as recall's are; and each item's vector by the home's
embedder, kept beside it. The rules (filters, namespace matching,
paging) live in :mod:`memoir.memory.keyed`; here is only the SQL.

A namespace is its labels joined by ``.`` (:data:`SEP`; the caller checks that no label
holds one), so the items under a namespace prefix are those whose namespace is the prefix
or starts with the prefix and a ``.``."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from memoir.model.event import scrub_deep
from memoir.store.codec import stored_time
from memoir.store.db import Db, Part, Tx, fold_index_text
from memoir.store.memory_sql import tsquery_sql
from memoir.store.search_text import ParsedQuery, to_fts5

__all__ = ["SEP", "KeyedItemsPart", "KeyedRow", "VectorRow"]

SEP = "."
_COLS = "i.namespace, i.key, i.value, i.created_at, i.updated_at"


@dataclass(frozen=True, slots=True)
class KeyedRow:
    namespace: str  # labels joined by SEP
    key: str
    value: str  # JSON text
    created_at: datetime
    updated_at: datetime


@dataclass(frozen=True, slots=True)
class VectorRow:
    namespace: str
    key: str
    body: str
    updated_at: datetime
    vector_model: str
    vector: bytes | None


def _row(r: Any) -> KeyedRow:
    return KeyedRow(str(r[0]), str(r[1]), str(r[2]), stored_time(r[3]), stored_time(r[4]))


def _under(prefix: str) -> tuple[str, list[Any]]:
    """The clause (over alias ``i``) of the namespaces at or under ``prefix``."""
    if not prefix:
        return "1 = 1", []
    head = prefix + SEP
    return "(i.namespace = ? OR substr(i.namespace, 1, ?) = ?)", [prefix, len(head), head]


class KeyedItemsPart(Part):
    def __init__(self, db: Db, *, postgres: bool) -> None:
        super().__init__(db)
        self._postgres = postgres

    # reads -----------------------------------------------------------------------------
    def get(self, owner: str, namespace: str, key: str) -> KeyedRow | None:
        rows = self._db.rows(
            f"SELECT {_COLS} FROM keyed_items i WHERE i.owner = ? AND i.namespace = ? "
            "AND i.key = ?",
            (owner, namespace, key),
        )
        return _row(rows[0]) if rows else None

    def newest(self, owner: str, prefix: str, *, limit: int, offset: int) -> list[KeyedRow]:
        """The items under ``prefix``, most recently changed first."""
        where, params = _under(prefix)
        rows = self._db.rows(
            f"SELECT {_COLS} FROM keyed_items i WHERE i.owner = ? AND {where} "
            "ORDER BY i.updated_at DESC, i.namespace, i.key LIMIT ? OFFSET ?",
            (owner, *params, limit, offset),
        )
        return [_row(r) for r in rows]

    def rank_text(self, owner: str, prefix: str, query: ParsedQuery, limit: int) -> list[KeyedRow]:
        """The items under ``prefix`` whose indexed text matches ``query``, best first."""
        where, params = _under(prefix)
        if self._postgres:
            if query.empty:
                return []
            tsq: list[Any] = []
            expr = tsquery_sql(query, tsq)
            sql = (
                f"SELECT {_COLS} FROM keyed_items i, (SELECT {expr}) AS q(q) "
                f"WHERE i.tsv @@ q.q AND i.owner = ? AND {where} "
                "ORDER BY ts_rank(i.tsv, q.q) DESC, i.namespace, i.key LIMIT ?"
            )
            rows = self._db.rows(sql, (*tsq, owner, *params, limit))
        else:
            match = to_fts5(query)
            if match is None:
                return []
            rows = self._db.rows(
                f"SELECT {_COLS} FROM keyed_fts f JOIN keyed_items i ON i.fts_row = f.rowid "
                f"WHERE keyed_fts MATCH ? AND i.owner = ? AND {where} "
                "ORDER BY bm25(keyed_fts), i.namespace, i.key LIMIT ?",
                (match, owner, *params, limit),
            )
        return [_row(r) for r in rows]

    def vector_candidates(self, owner: str, prefix: str, limit: int) -> list[VectorRow]:
        """The newest ``limit`` items under ``prefix`` with text to rank, with their
        vectors (bytes, or None) and the embedder that made them."""
        where, params = _under(prefix)
        rows = self._db.rows(
            f"SELECT i.namespace, i.key, i.body, i.updated_at, i.vector_model, i.vector "
            f"FROM keyed_items i WHERE i.owner = ? AND i.body <> '' AND {where} "
            "ORDER BY i.updated_at DESC, i.namespace, i.key LIMIT ?",
            (owner, *params, limit),
        )
        return [
            VectorRow(
                str(r[0]),
                str(r[1]),
                str(r[2]),
                stored_time(r[3]),
                str(r[4]),
                None if r[5] is None else bytes(r[5]),
            )
            for r in rows
        ]

    def put_vectors(self, owner: str, model: str, rows: Sequence[tuple[VectorRow, bytes]]) -> None:
        """Keep each item's vector by ``model``, unless the item changed since it was read
        (the vector would be of text it no longer holds)."""
        with self._db.tx() as tx:
            tx.many(
                "UPDATE keyed_items SET vector_model = ?, vector = ? WHERE owner = ? AND "
                "namespace = ? AND key = ? AND updated_at = ?",
                [
                    (model, blob, owner, r.namespace, r.key, tx.time(r.updated_at))
                    for r, blob in rows
                ],
            )

    def namespaces(self, owner: str) -> list[str]:
        """Every namespace ``owner`` keeps an item in, sorted."""
        rows = self._db.rows(
            "SELECT DISTINCT namespace FROM keyed_items WHERE owner = ? ORDER BY namespace",
            (owner,),
        )
        return [str(r[0]) for r in rows]

    # writes ----------------------------------------------------------------------------
    def put(
        self, owner: str, namespace: str, key: str, value: str, body: str, now: datetime
    ) -> None:
        """Store ``value`` (JSON text) with the text search ranks on (``body``; empty:
        not searchable by query); an existing item keeps its ``created_at``."""
        body = scrub_deep(body)  # NUL and lone surrogates: text no backend stores
        with self._db.tx() as tx:
            if self._postgres:
                tx.run(
                    "INSERT INTO keyed_items (owner, namespace, key, value, body, created_at, "
                    "updated_at) VALUES (?, ?, ?, ?, ?, ?, ?) ON CONFLICT (owner, namespace, "
                    "key) DO UPDATE SET value = excluded.value, body = excluded.body, "
                    "updated_at = excluded.updated_at, vector_model = '', vector = NULL",
                    (
                        owner,
                        namespace,
                        key,
                        value,
                        fold_index_text(body),
                        tx.time(now),
                        tx.time(now),
                    ),
                )
            else:
                _put_sqlite(tx, owner, namespace, key, value, body, tx.time(now))

    def delete(self, owner: str, namespace: str, key: str) -> bool:
        with self._db.tx() as tx:
            gone = tx.run(
                "DELETE FROM keyed_items WHERE owner = ? AND namespace = ? AND key = ? "
                "RETURNING key",
                (owner, namespace, key),
            )
        return bool(gone)

    def count(self, owner: str | None = None) -> int:
        if owner is None:
            return int(self._db.rows("SELECT count(*) FROM keyed_items")[0][0])
        rows = self._db.rows("SELECT count(*) FROM keyed_items WHERE owner = ?", (owner,))
        return int(rows[0][0])


def _put_sqlite(
    tx: Tx, owner: str, namespace: str, key: str, value: str, body: str, now: Any
) -> None:
    found: Sequence[Any] = tx.run(
        "SELECT fts_row FROM keyed_items WHERE owner = ? AND namespace = ? AND key = ?",
        (owner, namespace, key),
    )
    if found:
        fts_row = int(found[0][0])
        tx.run(
            "UPDATE keyed_items SET value = ?, body = ?, updated_at = ?, vector_model = '', "
            "vector = NULL WHERE fts_row = ?",
            (value, body, now, fts_row),
        )
        tx.run("DELETE FROM keyed_fts WHERE rowid = ?", (fts_row,))
    else:
        (row,) = tx.run(
            "INSERT INTO keyed_items (owner, namespace, key, value, body, created_at, "
            "updated_at, fts_row) VALUES (?, ?, ?, ?, ?, ?, ?, (SELECT COALESCE(max(fts_row), "
            "0) + 1 FROM keyed_items)) RETURNING fts_row",
            (owner, namespace, key, value, body, now, now),
        )
        fts_row = int(row[0])
    if body:
        tx.run("INSERT INTO keyed_fts (rowid, body) VALUES (?, ?)", (fts_row, body))
