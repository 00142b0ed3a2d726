"""Store methods whose SQL is the same on both backends: embeddings, the usage ledger, the
cache, summary rows, checkpoints and traces.

SQL here uses ``?`` placeholders; a backend supplies :class:`Tx` (one transaction: run
statements, encode timestamps) and converts the placeholders to its driver's style.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Sequence
from contextlib import AbstractContextManager
from datetime import UTC, datetime
from typing import Any, Protocol

from memoir.errors import StoreError
from memoir.llm.port import UsageRecord
from memoir.store.codec import SESSION_COLS, dumps, from_iso, loads, prefixed, session_from_row
from memoir.store.index_doc import EMBED_RECIPE, embedding_text
from memoir.store.port import CheckpointRow, SessionInfo, SummaryRow, TraceRow

__all__ = ["SideTablesMixin", "Tx"]


class Tx(Protocol):
    def run(self, sql: str, params: Sequence[Any] = ()) -> list[Any]: ...
    def many(self, sql: str, rows: Sequence[Sequence[Any]]) -> None: ...
    def time(self, value: datetime | None) -> Any: ...


_USAGE_COLS = (
    "at, provider, model, purpose, outcome, input_tokens, output_tokens, latency_ms, "
    "user_name, session_id, job_id, request_id"
)
_SUMMARY_COLS = (
    "session_id, kind, body, covered, last_exchange, attempts, last_attempt_ms, "
    "resummary_attempts, resummary_last_attempt_ms, model, message, updated_at"
)
_CHECKPOINT_COLS = (
    "id, session_id, created_at, watermark, memory_boundary, disposition, previous_id, data"
)


class SideTablesMixin:
    """Mixed into both stores. ``_tx()`` is a write transaction, ``_ro()`` a read."""

    _hint_lock = threading.Lock()
    # per model: every exchange with pk <= hint has a vector (SQLite only: pks of new or
    # changed exchanges only grow there; PostgreSQL sequences commit out of order)
    _backlog_hints: dict[str, int]
    _use_backlog_hint = False

    def _tx(self) -> AbstractContextManager[Tx]:
        raise NotImplementedError

    def _ro(self) -> AbstractContextManager[Tx]:
        raise NotImplementedError

    # sessions -----------------------------------------------------------------------
    def list_sessions(
        self, *, project: str | None = None, limit: int | None = None
    ) -> list[SessionInfo]:
        """Most recently active first. The order key (the time of a session's last
        exchange) is one index seek per session; counts are computed for the page only."""
        where, params = ("WHERE s.project = ?", [project]) if project is not None else ("", [])
        page = f"LIMIT {max(0, int(limit))}" if limit is not None else ""
        sql = (
            f"SELECT {prefixed(SESSION_COLS, 'p')}, "
            "(SELECT count(*) FROM exchanges x WHERE x.session_id = p.id), "
            "(SELECT count(*) FROM events v WHERE v.session_id = p.id), "
            "coalesce((SELECT coalesce(x.started_at, x.ended_at) FROM exchanges x "
            "WHERE x.session_id = p.id ORDER BY x.first_ordinal LIMIT 1), p.created_at), "
            "p.last_at FROM ("
            f"SELECT {prefixed(SESSION_COLS, 's')}, coalesce((SELECT "
            "coalesce(x.ended_at, x.started_at) FROM exchanges x WHERE x.session_id = s.id "
            "ORDER BY x.first_ordinal DESC LIMIT 1), s.updated_at) AS last_at "
            f"FROM sessions s {where} "
            f"ORDER BY last_at DESC NULLS LAST, s.id {page}"
            ") p ORDER BY p.last_at DESC NULLS LAST, p.id"
        )
        with self._ro() as tx:
            rows = tx.run(sql, params)
        return [
            SessionInfo(
                session=session_from_row(r[:12]),
                exchanges=int(r[12]),
                events=int(r[13]),
                first_at=from_iso(r[14]),
                last_at=from_iso(r[15]),
            )
            for r in rows
        ]

    # embeddings ---------------------------------------------------------------------
    def embedding_backlog(
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
        with self._ro() as tx:
            rows = tx.run(
                "SELECT e.pk, e.id, e.user_text, e.assistant_text, e.tool_excerpt "
                "FROM exchanges e WHERE e.pk > ? AND NOT EXISTS (SELECT 1 FROM embeddings m "
                f"WHERE m.model = ? AND m.exchange_id = e.id{complete}) ORDER BY e.pk LIMIT ?",
                (hint, model, limit),
            )
            if self._use_backlog_hint:
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

    def embedding_backlog_count(self, model: str, *, with_tokens: bool = False) -> int:
        """How many exchanges :meth:`embedding_backlog` would hand out in all (a progress
        bar's total; two counts, not a read of the rows)."""
        complete = " AND m.tokens IS NOT NULL" if with_tokens else ""
        with self._ro() as tx:
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
        if not self._use_backlog_hint:
            return 0
        with self._hint_lock:
            return self.__dict__.setdefault("_backlog_hints", {}).get(model, 0)

    def _set_hint(self, model: str, value: int) -> None:
        with self._hint_lock:
            self.__dict__.setdefault("_backlog_hints", {})[model] = value

    def put_embeddings(
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
        (as :meth:`embedding_backlog` gave it): a row whose exchange reads differently by
        the time of writing — a sync grew or rewrote it meanwhile — is not stored, and
        stays in the backlog to be embedded from its new text. Rows of exchanges that are
        gone are never stored."""
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
        with self._tx() as tx:
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
        return len(rows)

    def _still_reading(self, tx: Tx, ids: list[str], texts: Sequence[str]) -> list[bool]:
        """Per id: does the exchange still read ``texts[n]``? The rows are read inside the
        writing transaction (on PostgreSQL locked against a concurrent sync's update)."""
        lock = " FOR SHARE" if getattr(self, "backend", "") == "postgres" else ""
        current: dict[str, str] = {}
        for start in range(0, len(ids), 500):
            chunk = ids[start : start + 500]
            marks = ", ".join("?" * len(chunk))
            for row in tx.run(
                "SELECT pk, id, user_text, assistant_text, tool_excerpt FROM exchanges "
                f"WHERE id IN ({marks}){lock}",
                chunk,
            ):
                current[row[1]] = _embed_text(row)
        return [current.get(xid) == text for xid, text in zip(ids, texts, strict=True)]

    def load_embeddings(self, model: str) -> tuple[list[str], bytes, int]:
        with self._ro() as tx:
            rows = tx.run("SELECT exchange_id, dim, vec FROM embeddings WHERE model = ?", (model,))
        if not rows:
            return [], b"", 0
        return [r[0] for r in rows], b"".join(bytes(r[2]) for r in rows), int(rows[0][1])

    def embedding_generation(self, model: str) -> int:
        """Raised by every write to ``model``'s vectors (migration v6's triggers): equal
        numbers mean the same vectors."""
        with self._ro() as tx:
            rows = tx.run("SELECT generation FROM embedding_generations WHERE model = ?", (model,))
        return int(rows[0][0]) if rows else 0

    def embedded_times(self, model: str) -> list[tuple[str, datetime | None]]:
        """When each exchange with a vector for ``model`` happened (its start, else its end;
        None when it has neither): what a date filter reads without loading exchanges."""
        with self._ro() as tx:
            rows = tx.run(
                "SELECT m.exchange_id, coalesce(x.started_at, x.ended_at) FROM embeddings m "
                "JOIN exchanges x ON x.id = m.exchange_id WHERE m.model = ?",
                (model,),
            )
        return [(r[0], from_iso(r[1])) for r in rows]

    def load_token_states(self, model: str, exchange_ids: Sequence[str]) -> dict[str, bytes]:
        """The stored token states of these exchanges for ``model`` (those that have any)."""
        wanted = list(dict.fromkeys(exchange_ids))
        out: dict[str, bytes] = {}
        with self._ro() as tx:
            for start in range(0, len(wanted), 500):
                chunk = wanted[start : start + 500]
                marks = ", ".join("?" for _ in chunk)
                rows = tx.run(
                    "SELECT exchange_id, tokens FROM embeddings WHERE model = ? AND "
                    f"exchange_id IN ({marks}) AND tokens IS NOT NULL",
                    (model, *chunk),
                )
                out.update((r[0], bytes(r[1])) for r in rows)
        return out

    # usage ledger and cache ---------------------------------------------------------
    def record_usage(self, record: UsageRecord) -> None:
        with self._tx() as tx:
            tx.run(
                f"INSERT INTO usage ({_USAGE_COLS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (
                    tx.time(record.at),
                    record.provider,
                    record.model,
                    record.purpose,
                    record.outcome,
                    record.input_tokens,
                    record.output_tokens,
                    float(record.latency_ms),
                    record.user,
                    record.session,
                    record.job_id,
                    record.request_id,
                ),
            )

    def usage_records(self, since: datetime | None = None) -> list[UsageRecord]:
        with self._ro() as tx:
            if since is None:
                rows = tx.run(f"SELECT {_USAGE_COLS} FROM usage ORDER BY at, id")
            else:
                rows = tx.run(
                    f"SELECT {_USAGE_COLS} FROM usage WHERE at >= ? ORDER BY at, id",
                    (tx.time(since),),
                )
        return [_usage(r) for r in rows]

    def cache_get(self, key: str) -> str | None:
        with self._ro() as tx:
            rows = tx.run(
                "SELECT value FROM cache WHERE key = ? AND expires_at > ?", (key, time.time())
            )
        return rows[0][0] if rows else None

    def cache_put(self, key: str, value: str, ttl_seconds: float) -> None:
        now = time.time()
        with self._tx() as tx:
            tx.run("DELETE FROM cache WHERE expires_at <= ?", (now,))
            if ttl_seconds <= 0:
                tx.run("DELETE FROM cache WHERE key = ?", (key,))
                return
            tx.run(
                "INSERT INTO cache (key, value, expires_at) VALUES (?, ?, ?) ON CONFLICT (key) "
                "DO UPDATE SET value = excluded.value, expires_at = excluded.expires_at",
                (key, value, now + ttl_seconds),
            )

    # summaries, checkpoints, traces -----------------------------------------------------
    def get_summary_row(self, session_id: str) -> SummaryRow | None:
        with self._ro() as tx:
            rows = tx.run(
                f"SELECT {_SUMMARY_COLS} FROM summaries WHERE session_id = ?", (session_id,)
            )
        return _summary(rows[0]) if rows else None

    def put_summary_row(self, row: SummaryRow) -> None:
        updated = row.updated_at or datetime.now(UTC)
        with self._tx() as tx:
            tx.run(
                f"INSERT INTO summaries ({_SUMMARY_COLS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, "
                "?, ?) ON CONFLICT (session_id) DO UPDATE SET kind = excluded.kind, "
                "body = excluded.body, covered = excluded.covered, "
                "last_exchange = excluded.last_exchange, attempts = excluded.attempts, "
                "last_attempt_ms = excluded.last_attempt_ms, "
                "resummary_attempts = excluded.resummary_attempts, "
                "resummary_last_attempt_ms = excluded.resummary_last_attempt_ms, "
                "model = excluded.model, message = excluded.message, "
                "updated_at = excluded.updated_at",
                (
                    row.session_id,
                    row.kind,
                    row.body,
                    row.covered,
                    row.last_exchange,
                    row.attempts,
                    row.last_attempt_ms,
                    row.resummary_attempts,
                    row.resummary_last_attempt_ms,
                    row.model,
                    row.message,
                    tx.time(updated),
                ),
            )

    def summary_rows(self) -> list[SummaryRow]:
        with self._ro() as tx:
            rows = tx.run(f"SELECT {_SUMMARY_COLS} FROM summaries ORDER BY session_id")
        return [_summary(r) for r in rows]

    def put_checkpoint(self, row: CheckpointRow) -> None:
        with self._tx() as tx:
            tx.run(
                f"INSERT INTO checkpoints ({_CHECKPOINT_COLS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?) "
                "ON CONFLICT (id) DO UPDATE SET session_id = excluded.session_id, "
                "created_at = excluded.created_at, watermark = excluded.watermark, "
                "memory_boundary = excluded.memory_boundary, "
                "disposition = excluded.disposition, previous_id = excluded.previous_id, "
                "data = excluded.data",
                (
                    row.id,
                    row.session_id,
                    tx.time(row.created_at),
                    row.watermark,
                    row.memory_boundary,
                    row.disposition,
                    row.previous_id,
                    dumps(row.data),
                ),
            )

    def checkpoints(self, session_id: str) -> list[CheckpointRow]:
        with self._ro() as tx:
            rows = tx.run(
                f"SELECT {_CHECKPOINT_COLS} FROM checkpoints WHERE session_id = ? "
                "ORDER BY created_at, id",
                (session_id,),
            )
        return [_checkpoint(r) for r in rows]

    def record_trace(self, row: TraceRow) -> None:
        with self._tx() as tx:
            tx.run(
                "INSERT INTO traces (session_id, kind, at, data) VALUES (?, ?, ?, ?)",
                (row.session_id, row.kind, tx.time(row.at), dumps(row.data)),
            )

    def traces(self, session_id: str | None = None, kind: str | None = None) -> list[TraceRow]:
        clauses, params = _where(session_id=session_id, kind=kind)
        with self._ro() as tx:
            rows = tx.run(
                f"SELECT session_id, kind, at, data FROM traces{clauses} ORDER BY at, id", params
            )
        return [
            TraceRow(session_id=r[0], kind=r[1], at=_time(r[2]), data=loads(r[3])) for r in rows
        ]


def _where(**equal: str | None) -> tuple[str, list[Any]]:
    pairs = [(k, v) for k, v in equal.items() if v is not None]
    if not pairs:
        return "", []
    return " WHERE " + " AND ".join(f"{k} = ?" for k, _ in pairs), [v for _, v in pairs]


def _time(value: Any) -> datetime:
    parsed = from_iso(value)
    assert parsed is not None
    return parsed


def _embed_text(row: Any) -> str:
    from memoir.model import Exchange

    return embedding_text(
        Exchange(
            id=row[1],
            session_id="",
            first_ordinal=0,
            last_ordinal=0,
            user_text=row[2],
            assistant_text=row[3],
            tool_names=(),
            started_at=None,
            ended_at=None,
            tool_excerpt=row[4],
        )
    )


def _usage(r: Any) -> UsageRecord:
    return UsageRecord(
        at=_time(r[0]),
        provider=r[1],
        model=r[2],
        purpose=r[3],
        outcome=r[4],
        input_tokens=int(r[5]),
        output_tokens=int(r[6]),
        latency_ms=float(r[7]),
        user=r[8],
        session=r[9],
        job_id=r[10],
        request_id=r[11],
    )


def _summary(r: Any) -> SummaryRow:
    return SummaryRow(
        session_id=r[0],
        kind=r[1],
        body=r[2],
        covered=int(r[3]),
        last_exchange=r[4],
        attempts=int(r[5]),
        last_attempt_ms=int(r[6]),
        resummary_attempts=r[7],
        resummary_last_attempt_ms=r[8],
        model=r[9],
        message=r[10],
        updated_at=from_iso(r[11]),
    )


def _checkpoint(r: Any) -> CheckpointRow:
    return CheckpointRow(
        id=r[0],
        session_id=r[1],
        created_at=_time(r[2]),
        watermark=int(r[3]),
        memory_boundary=int(r[4]),
        disposition=r[5],
        previous_id=r[6],
        data=loads(r[7]),
    )
