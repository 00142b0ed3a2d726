"""The exchanges' two indexes: full-text and vectors.

The full-text index (:class:`IndexPart`): ranked text matches, the snippets a page
quotes, a rebuild. The query is rendered per backend (FTS5 bm25 in
:mod:`memoir.store.sqlite_search`, weighted tsvector in :mod:`memoir.store.postgres_search`);
this part runs it.

The vectors (:class:`EmbeddingsPart`): vectors per exchange and model (with the token
states re-ranking reads), the backlog of exchanges still to embed, and the log of which
vectors changed (migrations v7, v23), so a matrix held in memory or cached in a file is
patched rather than read whole again (:mod:`memoir.search.vectors`). The log is pruned by
writers: it keeps the newest :data:`LOG_KEEP` sequence numbers of a model (at most twice
that before a prune).
"""

from __future__ import annotations

import threading
from collections.abc import Iterator, Sequence
from datetime import datetime
from typing import Any, Protocol

from memoir.errors import StoreError
from memoir.store.codec import exchange_text_from_row, from_iso
from memoir.store.db import Db, Tx
from memoir.store.index_doc import EMBED_RECIPE, embedding_text
from memoir.store.values import SearchFilters, TextHit

__all__ = ["LOG_KEEP", "EmbeddingsPart", "IndexPart", "TextEngine"]


class TextEngine(Protocol):
    """What a backend's search module provides (each function takes its driver's
    connection)."""

    def search(
        self, conn: Any, query: str, filters: SearchFilters, limit: int, *, snippets: bool = True
    ) -> list[TextHit]: ...
    def snippets_for(
        self, conn: Any, query: str, filters: SearchFilters, exchange_ids: list[str]
    ) -> dict[str, str]: ...
    def rebuild_index(self, conn: Any) -> int: ...


class IndexPart:
    def __init__(self, db: Db, engine: TextEngine) -> None:
        self._db = db
        self._engine = engine

    def search(
        self, query: str, filters: SearchFilters, limit: int, *, snippets: bool = True
    ) -> list[TextHit]:
        """Exchanges matching ``query`` within ``filters``, best first, at most ``limit``;
        ``snippets=False`` leaves them out (ranking reads none)."""
        with self._db.read() as conn:
            return self._engine.search(conn, query, filters, limit, snippets=snippets)

    def snippets(
        self, query: str, filters: SearchFilters, exchange_ids: list[str]
    ) -> dict[str, str]:
        """The snippets :meth:`search` would give these exchanges, by id."""
        with self._db.read() as conn:
            return self._engine.snippets_for(conn, query, filters, exchange_ids)

    def repair(self) -> int:
        """Rebuild every index row; returns how many were written."""
        with self._db.write() as conn:
            return self._engine.rebuild_index(conn)


_CHUNK = 500
# the change log keeps this many of a model's newest sequence numbers (pruned past 2×):
# a reader further behind reads the matrix whole, as it would for that many changes
LOG_KEEP = 50_000


class EmbeddingsPart:
    """``lock_rows``: re-read the exchanges a write checks ``FOR SHARE`` (PostgreSQL:
    against a concurrent sync's update). ``backlog_hint``: remember per model that every
    exchange up to a pk has a vector (SQLite, where pks of new or changed exchanges only
    grow; PostgreSQL sequences commit out of order)."""

    def __init__(self, db: Db, *, lock_rows: bool, backlog_hint: bool) -> None:
        self._db = db
        self._lock = " FOR SHARE" if lock_rows else ""
        self._use_hint = backlog_hint
        self._hints: dict[str, int] = {}
        self._hint_lock = threading.Lock()

    # the backlog --------------------------------------------------------------------
    def backlog(
        self, model: str, limit: int, *, with_tokens: bool = False
    ) -> list[tuple[str, str]]:
        """Exchanges without a vector for ``model`` (``with_tokens``: or whose vector has
        no token states), oldest first; then, while ``limit`` leaves room, exchanges whose
        vector was embedded from an older recipe than :data:`EMBED_RECIPE` (kept and
        searched until they are redone)."""
        if limit <= 0:
            return []
        key = f"{model}\0tokens" if with_tokens else model  # a hint per question asked
        hint = self._hint(key)
        complete = " AND m.tokens IS NOT NULL" if with_tokens else ""
        with self._db.ro() as tx:
            rows = tx.run(
                "SELECT e.pk, e.id, e.user_text, e.assistant_text, e.tool_excerpt "
                "FROM exchanges e WHERE e.pk > ? AND NOT EXISTS (SELECT 1 FROM embeddings m "
                f"WHERE m.model = ? AND m.exchange_id = e.id{complete}) ORDER BY e.pk LIMIT ?",
                (hint, model, limit),
            )
            if self._use_hint:
                top = rows[0][0] - 1 if rows else tx.run("SELECT max(pk) FROM exchanges")[0][0]
                self._set_hint(key, int(top or 0))
            if len(rows) < limit:  # the stale ones: found through the (model, recipe) index
                rows += tx.run(
                    "SELECT e.pk, e.id, e.user_text, e.assistant_text, e.tool_excerpt "
                    "FROM embeddings m JOIN exchanges e ON e.id = m.exchange_id "
                    f"WHERE m.model = ? AND m.recipe < ?{complete} LIMIT ?",
                    (model, EMBED_RECIPE, limit - len(rows)),
                )
        return [(r[1], _embed_text(r)) for r in rows]

    def missing_in(
        self, model: str, session_ids: Sequence[str], limit: int, *, with_tokens: bool = False
    ) -> list[tuple[str, str]]:
        """Exchanges of these sessions without a vector for ``model`` (``with_tokens``: or
        without token states), at most ``limit``, each session's latest first: what a
        write just stored (embedding on write), found through the sessions' index."""
        complete = " AND m.tokens IS NOT NULL" if with_tokens else ""
        out: list[tuple[str, str]] = []
        with self._db.ro() as tx:
            for session_id in dict.fromkeys(session_ids):
                if len(out) >= limit:
                    break
                rows = tx.run(
                    "SELECT e.pk, e.id, e.user_text, e.assistant_text, e.tool_excerpt "
                    "FROM exchanges e WHERE e.session_id = ? AND NOT EXISTS (SELECT 1 FROM "
                    f"embeddings m WHERE m.model = ? AND m.exchange_id = e.id{complete}) "
                    "ORDER BY e.first_ordinal DESC LIMIT ?",
                    (session_id, model, limit - len(out)),
                )
                out += [(r[1], _embed_text(r)) for r in rows]
        return out

    def previous_texts(self, exchange_ids: Sequence[str]) -> dict[str, str]:
        """For each of these exchanges that has one, the embedded text of the exchange
        before it in its session (what leads its own text when it is embedded): one
        indexed probe per exchange, never a whole session read."""
        wanted = list(dict.fromkeys(exchange_ids))
        out: dict[str, str] = {}
        with self._db.ro() as tx:
            for start in range(0, len(wanted), _CHUNK):
                chunk = wanted[start : start + _CHUNK]
                marks = ", ".join("?" * len(chunk))
                rows = tx.run(
                    "SELECT x.id, p.pk, p.id, p.user_text, p.assistant_text, p.tool_excerpt "
                    "FROM exchanges x JOIN exchanges p ON p.session_id = x.session_id "
                    "AND p.first_ordinal = (SELECT max(q.first_ordinal) FROM exchanges q "
                    "WHERE q.session_id = x.session_id AND q.first_ordinal < x.first_ordinal) "
                    f"WHERE x.id IN ({marks})",
                    chunk,
                )
                out.update((str(r[0]), _embed_text(r[1:])) for r in rows)
        return out

    def backlog_count(self, model: str, *, with_tokens: bool = False) -> int:
        """How many exchanges :meth:`backlog` would hand out in all (a progress bar's
        total; two counts, not a read of the rows)."""
        complete = " AND m.tokens IS NOT NULL" if with_tokens else ""
        with self._db.ro() as tx:
            missing = tx.run(
                "SELECT count(*) FROM exchanges e WHERE NOT EXISTS (SELECT 1 FROM embeddings m "
                f"WHERE m.model = ? AND m.exchange_id = e.id{complete})",
                (model,),
            )
            stale = tx.run(
                "SELECT count(*) FROM embeddings m JOIN exchanges e ON e.id = m.exchange_id "
                f"WHERE m.model = ? AND m.recipe < ?{complete}",
                (model, EMBED_RECIPE),
            )
        return sum(int(rows[0][0]) for rows in (missing, stale) if rows)

    def _hint(self, model: str) -> int:
        if not self._use_hint:
            return 0
        with self._hint_lock:
            return self._hints.get(model, 0)

    def _set_hint(self, model: str, value: int) -> None:
        with self._hint_lock:
            self._hints[model] = value

    # vectors -------------------------------------------------------------------------
    def put(
        self,
        model: str,
        rows: list[tuple[str, bytes]],
        dim: int,
        tokens: Sequence[bytes | None] | None = None,
        *,
        embedded_from: Sequence[str] | None = None,
    ) -> int:
        """Store vectors (and, when given, one token-states blob or None per row); returns
        how many were stored. ``embedded_from`` is the text each vector was computed from
        (as :meth:`backlog` gave it): a row whose exchange reads differently by the time
        of writing — a sync grew or rewrote it meanwhile — is not stored, and stays in the
        backlog to be embedded from its new text. Rows of exchanges that are gone are never
        stored."""
        if dim <= 0:
            raise StoreError(f"embedding dimension must be positive, not {dim}")
        if tokens is not None and len(tokens) != len(rows):
            raise StoreError(f"{len(tokens)} token-state blobs for {len(rows)} vectors")
        blobs = list(tokens) if tokens is not None else [None] * len(rows)
        if embedded_from is not None and len(embedded_from) != len(rows):
            raise StoreError(f"{len(embedded_from)} source texts for {len(rows)} vectors")
        for exchange_id, vec in rows:
            if len(vec) != dim * 4:
                raise StoreError(
                    f"embedding for {exchange_id!r} has {len(vec)} bytes, expected {dim * 4}"
                    f" ({dim} float32)"
                )
        with self._db.tx() as tx:
            stale = tx.run(
                "SELECT 1 FROM embeddings WHERE model = ? AND dim <> ? LIMIT 1", (model, dim)
            )
            if stale:  # the model changed its dimension: old vectors are useless
                tx.run("DELETE FROM embeddings WHERE model = ? AND dim <> ?", (model, dim))
                self._set_hint(model, 0)
                self._set_hint(f"{model}\0tokens", 0)
            if embedded_from is not None:
                keep = self._still_reading(tx, [xid for xid, _ in rows], embedded_from)
                rows = [row for row, kept in zip(rows, keep, strict=True) if kept]
                blobs = [blob for blob, kept in zip(blobs, keep, strict=True) if kept]
            tx.many(
                "INSERT INTO embeddings (model, exchange_id, dim, vec, tokens, recipe) "
                "SELECT ?, ?, ?, ?, ?, ? WHERE EXISTS (SELECT 1 FROM exchanges WHERE id = ?) "
                "ON CONFLICT (model, exchange_id) DO UPDATE SET dim = excluded.dim, "
                "vec = excluded.vec, tokens = excluded.tokens, recipe = excluded.recipe",
                [
                    (model, xid, dim, vec, blob, EMBED_RECIPE, xid)
                    for (xid, vec), blob in zip(rows, blobs, strict=True)
                ],
            )
            self._prune(tx, model)
        return len(rows)

    def _prune(self, tx: Tx, model: str) -> None:
        """Past ``2 × LOG_KEEP`` numbers of ``model`` in the log, drop all but the newest
        :data:`LOG_KEEP` and raise the mark (in the writer's transaction: on PostgreSQL it
        holds the model's generation row, so prunes of one model never interleave)."""
        rows = tx.run(
            "SELECT (SELECT max(seq) FROM embedding_changes WHERE model = ?), "
            "(SELECT pruned FROM embedding_generations WHERE model = ?)",
            (model, model),
        )
        end, mark = (int(v or 0) for v in rows[0]) if rows else (0, 0)
        if end - mark > 2 * LOG_KEEP:
            _forget(tx, model, end - LOG_KEEP)

    def _still_reading(self, tx: Tx, ids: list[str], texts: Sequence[str]) -> list[bool]:
        """Per id: does the exchange still read ``texts[n]``? The rows are read inside the
        writing transaction (on PostgreSQL locked against a concurrent sync's update)."""
        current: dict[str, str] = {}
        for start in range(0, len(ids), _CHUNK):
            chunk = ids[start : start + _CHUNK]
            marks = ", ".join("?" * len(chunk))
            for row in tx.run(
                "SELECT pk, id, user_text, assistant_text, tool_excerpt FROM exchanges "
                f"WHERE id IN ({marks}){self._lock}",
                chunk,
            ):
                current[row[1]] = _embed_text(row)
        return [current.get(xid) == text for xid, text in zip(ids, texts, strict=True)]

    def load(self, model: str) -> tuple[list[str], bytes, int]:
        """Every ``model`` vector: (exchange ids, their float32 rows end to end, dim)."""
        rows = self._db.rows(
            "SELECT exchange_id, dim, vec FROM embeddings WHERE model = ?", (model,)
        )
        if not rows:
            return [], b"", 0
        return [r[0] for r in rows], b"".join(bytes(r[2]) for r in rows), int(rows[0][1])

    def pages(self, model: str, size: int) -> Iterator[tuple[list[str], bytes, int]]:
        """Every ``model`` vector, ``size`` at a time in exchange-id order: (exchange ids,
        their float32 rows end to end, dim) per page, each page its own read — what
        writes a matrix file without holding the whole matrix."""
        after = ""
        while True:
            rows = self._db.rows(
                "SELECT exchange_id, dim, vec FROM embeddings WHERE model = ? AND "
                "exchange_id > ? ORDER BY exchange_id LIMIT ?",
                (model, after, size),
            )
            if not rows:
                return
            yield [r[0] for r in rows], b"".join(bytes(r[2]) for r in rows), int(rows[0][1])
            after = str(rows[-1][0])

    def count(self, model: str) -> int:
        """How many ``model`` vectors there are."""
        rows = self._db.rows("SELECT count(*) FROM embeddings WHERE model = ?", (model,))
        return int(rows[0][0]) if rows else 0

    def models(self) -> list[str]:
        """The models exchanges have vectors of: one index probe per model ever written
        (``embedding_generations`` names each), not a scan of the vectors."""
        rows = self._db.rows(
            "SELECT g.model FROM embedding_generations g WHERE EXISTS "
            "(SELECT 1 FROM embeddings e WHERE e.model = g.model)"
        )
        return sorted(str(r[0]) for r in rows)

    def generation(self, model: str) -> int:
        """Raised by every write to ``model``'s vectors (migration v6's triggers): equal
        numbers mean the same vectors."""
        rows = self._db.rows(
            "SELECT generation FROM embedding_generations WHERE model = ?", (model,)
        )
        return int(rows[0][0]) if rows else 0

    def times(
        self, model: str, exchange_ids: Sequence[str] | None = None
    ) -> list[tuple[str, datetime | None]]:
        """When each exchange with a vector for ``model`` (of ``exchange_ids``, when given)
        happened (its start, else its end; None when it has neither): what a date filter
        reads without loading exchanges."""
        sql = (
            "SELECT m.exchange_id, coalesce(x.started_at, x.ended_at) FROM embeddings m "
            "JOIN exchanges x ON x.id = m.exchange_id WHERE m.model = ?"
        )
        if exchange_ids is None:
            return [(r[0], from_iso(r[1])) for r in self._db.rows(sql, (model,))]
        wanted = list(dict.fromkeys(exchange_ids))
        out: list[tuple[str, datetime | None]] = []
        with self._db.ro() as tx:
            for start in range(0, len(wanted), _CHUNK):
                chunk = wanted[start : start + _CHUNK]
                marks = ", ".join("?" * len(chunk))
                rows = tx.run(f"{sql} AND m.exchange_id IN ({marks})", (model, *chunk))
                out += [(r[0], from_iso(r[1])) for r in rows]
        return out

    def token_states(self, model: str, exchange_ids: Sequence[str]) -> dict[str, bytes]:
        """The stored token states of these exchanges for ``model`` (those that have any)."""
        return self._by_id(model, exchange_ids, "tokens", " AND tokens IS NOT NULL")

    def vectors(self, model: str, exchange_ids: Sequence[str]) -> dict[str, bytes]:
        """The current ``model`` vectors (float32 bytes) of these exchanges that have one."""
        return self._by_id(model, exchange_ids, "vec", "")

    def _by_id(
        self, model: str, exchange_ids: Sequence[str], column: str, extra: str
    ) -> dict[str, bytes]:
        wanted = list(dict.fromkeys(exchange_ids))
        out: dict[str, bytes] = {}
        with self._db.ro() as tx:
            for start in range(0, len(wanted), _CHUNK):
                chunk = wanted[start : start + _CHUNK]
                marks = ", ".join("?" for _ in chunk)
                rows = tx.run(
                    f"SELECT exchange_id, {column} FROM embeddings WHERE model = ? AND "
                    f"exchange_id IN ({marks}){extra}",
                    (model, *chunk),
                )
                out.update((str(r[0]), bytes(r[1])) for r in rows)
        return out

    # the change log -------------------------------------------------------------------
    def log_end(self, model: str) -> int:
        """Where ``model``'s change log ends now: its highest sequence number, or the mark it
        was pruned to when higher (entries pruned away still count, so a read can tell
        whether anything was logged since — or pruned past it). Numbers of one model are
        committed in order (v23), so everything at or below it is already visible."""
        rows = self._db.rows(
            "SELECT (SELECT max(seq) FROM embedding_changes WHERE model = ?), "
            "(SELECT pruned FROM embedding_generations WHERE model = ?)",
            (model, model),
        )
        return max(int(v or 0) for v in rows[0]) if rows else 0

    def changes(self, model: str, after: int) -> tuple[int, list[str]]:
        """(where the log ends, the exchanges whose ``model`` vector was written or removed
        after ``after``), each once. Complete only while :meth:`pruned` is at most
        ``after``: ask that after this."""
        rows = self._db.rows(
            "SELECT seq, exchange_id FROM embedding_changes WHERE model = ? AND seq > ? "
            "ORDER BY seq",
            (model, after),
        )
        end = int(rows[-1][0]) if rows else after
        return end, list(dict.fromkeys(str(r[1]) for r in rows))

    def pruned(self, model: str) -> int:
        """The sequence number ``model``'s log was pruned up to (0: never)."""
        rows = self._db.rows("SELECT pruned FROM embedding_generations WHERE model = ?", (model,))
        return int(rows[0][0] or 0) if rows else 0

    def forget_changes(self, model: str, upto: int) -> None:
        """Drop the log entries a full read at ``upto`` covers (and raise the mark)."""
        with self._db.tx() as tx:
            _forget(tx, model, upto)


def _forget(tx: Tx, model: str, upto: int) -> None:
    tx.run("DELETE FROM embedding_changes WHERE model = ? AND seq <= ?", (model, upto))
    tx.run(
        "UPDATE embedding_generations SET pruned = ? WHERE model = ? AND pruned < ?",
        (upto, model, upto),
    )


def _embed_text(row: Any) -> str:
    return embedding_text(exchange_text_from_row(row))
