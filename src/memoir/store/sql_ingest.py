"""What the SQLite and PostgreSQL backends share of ingest: one batch's writes and a
session's deletion (the steps and statements that are the same on both). The dialect each
speaks is :class:`memoir.store.db.Dialect`; what their search modules share is
:mod:`memoir.store.search_sql`.

As in the store's parts (:mod:`memoir.store.parts`), SQL here is written once with ``?``
placeholders. Functions that take a driver connection take a :class:`Dialect` too:
:data:`~memoir.store.db.SQLITE` (placeholders as written, timestamps as ISO text) or
:data:`~memoir.store.db.POSTGRES` (``%s``, ``timestamptz``, row locks). What really differs
(locking, pools, FTS5 versus tsvector, primary keys) stays in the backend modules, handed
to :func:`apply_batch` as an :class:`IngestWrites`.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from memoir.errors import ConcurrentWrite, StoreError
from memoir.model import Exchange, Session
from memoir.store.codec import (
    event_params,
    exchange_params,
    session_params,
    skipped_params,
    source_params,
)
from memoir.store.db import CHUNK, Connection, Dialect
from memoir.store.values import IngestBatch, StoredTail

__all__ = [
    "EVENT_INSERT",
    "SESSION_UPSERT_HEAD",
    "SKIPPED_INSERT",
    "SOURCE_UPSERT",
    "ExchangeChange",
    "IndexWrites",
    "IngestWrites",
    "apply_batch",
    "check_batch",
    "check_source_unchanged",
    "delete_session_content",
    "delete_session_rows",
    "delete_session_tables",
    "exchange_changes",
    "move_source",
    "upsert_session",
]


# backend appends how it merges the two timestamps)
SESSION_UPSERT_HEAD = """
INSERT INTO sessions (id, project, harness, user_name, source_path, cwd, incognito,
    archived, subagent, memory_disabled, created_at, updated_at)
VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
ON CONFLICT (id) DO UPDATE SET
    project = excluded.project,
    harness = excluded.harness,
    user_name = excluded.user_name,
    source_path = coalesce(excluded.source_path, sessions.source_path),
    cwd = coalesce(excluded.cwd, sessions.cwd),
    incognito = (sessions.incognito OR excluded.incognito),
    archived = (sessions.archived OR excluded.archived),
    subagent = (sessions.subagent OR excluded.subagent),
    memory_disabled = (sessions.memory_disabled OR excluded.memory_disabled),
"""
EVENT_INSERT = """
INSERT INTO events (session_id, ordinal, kind, author, ts, tool_name, call_id,
    source_offset, source_line, payload, text, time_inferred)
VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
ON CONFLICT (session_id, ordinal) DO NOTHING
"""
SOURCE_UPSERT = """
INSERT INTO sources (path, session_id, harness, size, "offset", line_count, mtime_ns,
    prefix_hash, tail_hash, archive_path, parser_state)
VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
ON CONFLICT (path) DO UPDATE SET
    session_id = excluded.session_id, harness = excluded.harness, size = excluded.size,
    "offset" = excluded."offset", line_count = excluded.line_count,
    mtime_ns = excluded.mtime_ns, prefix_hash = excluded.prefix_hash,
    tail_hash = excluded.tail_hash, archive_path = excluded.archive_path,
    parser_state = excluded.parser_state
"""
SKIPPED_INSERT = """
INSERT INTO skipped_lines (path, line, "offset", reason, detail) VALUES (?, ?, ?, ?, ?)
ON CONFLICT (path, line) DO NOTHING
"""


@dataclass(frozen=True, slots=True)
class ExchangeChange:
    """An exchange of a batch that is new (``old_pk`` None) or grew since it was stored
    (``old_pk``: its row's primary key until now), with its row's parameters."""

    exchange: Exchange
    params: tuple[Any, ...]
    old_pk: int | None


class IndexWrites(Protocol):
    """What a backend's search module writes of the full-text index (each function takes
    its driver's connection): rows dropped by exchange pk or by session, a session's rows
    rewritten (its project or harness changed), a span's rows written (exchanges just added
    or grown, with their neighbours, whose ``context`` column quotes them)."""

    def delete_index(self, conn: Any, pks: list[int]) -> None: ...
    def delete_session_index(self, conn: Any, session_id: str) -> None: ...
    def reindex_session(self, conn: Any, session: Session) -> None: ...
    def reindex_span(
        self, conn: Any, session: Session, changed: list[Exchange], read: Any = None
    ) -> None: ...


@dataclass(frozen=True, slots=True)
class IngestWrites:
    """What a backend's ingest writes its own way (each callable takes its driver's
    connection): the session upsert (how the two timestamps merge), statements run many
    times (``many``), the exchange rows with their primary keys (``store_exchanges``:
    SQLite numbers them itself, PostgreSQL's sequence does), and the full-text index."""

    dialect: Dialect
    session_upsert: str
    many: Callable[[Any, str, list[tuple[Any, ...]]], None]
    store_exchanges: Callable[[Any, list[ExchangeChange]], None]
    index: IndexWrites
    # sends the reads of an index span (``sql_index.send_span_read``) with the batch's
    # other reads, before its exchanges are written (a pipeline's wait less), or None
    send_span_read: Callable[[Any, str, int, int], Callable[[], Any]] | None = None
    # the index span's read (``sql_index.SpanRead``) made of rows read ahead (lo, hi, the
    # stored exchanges of the span, their neighbours), where ``send_span_read`` is given
    span_read: Callable[[int, int, list[Any], list[Any]], Any] | None = None
    # writes the events' rows (:data:`EVENT_INSERT`'s parameters) in one statement
    # (PostgreSQL: the columns as arrays); None: ``many`` runs EVENT_INSERT per row
    insert_events: Callable[[Any, list[tuple[Any, ...]]], None] | None = None


def apply_batch(conn: Connection, batch: IngestBatch, writes: IngestWrites) -> None:
    """Write one ingest batch inside the caller's transaction (see
    :mod:`memoir.store.sqlite_store` for the rules both backends keep)."""
    d = writes.dialect
    check_source_unchanged(conn, d, batch)
    # the two reads (the session as stored, the stored shapes of the batch's exchanges)
    # are sent with the first writes and read after them: in a pipeline, one wait. An
    # append read them already (``batch.stored``): no read, no wait, where they cover it
    known = None if batch.reset else batch.stored
    if known is None:
        stored = _send_session_upsert(conn, d, batch, writes.session_upsert)
    else:
        check_batch(batch)
        conn.execute(writes.session_upsert, session_params(batch.session, d.time))
    session = batch.session
    if batch.reset:
        path = batch.source.path if batch.source else session.source_path
        delete_session_content(conn, writes, session.id, path)
    if batch.moved_from is not None and batch.source is not None:
        move_source(conn, d, batch.moved_from, batch.source.path)
    if batch.events:
        rows = [event_params(e, d.time) for e in batch.events]
        if writes.insert_events is not None:
            writes.insert_events(conn, rows)
        else:
            writes.many(conn, d(EVENT_INSERT), rows)
    unique = {x.id: x for x in batch.exchanges}
    ahead = None if known is None else _read_ahead(known, list(unique.values()))
    shapes = (
        [] if batch.reset or ahead else _send_shapes(conn, d, session.id, list(unique.values()))
    )
    span: Callable[[], Any] | None = None
    if writes.send_span_read is not None and unique and not batch.reset and not ahead:
        firsts = [x.first_ordinal for x in unique.values()]
        span = writes.send_span_read(conn, session.id, min(firsts), max(firsts))
    if known is None:
        renamed = _renamed(stored, session)
    else:
        renamed = (known.session.project, known.session.harness) != (
            session.project,
            session.harness,
        )
    if renamed and not batch.reset:
        writes.index.reindex_session(conn, session)  # the index's meta column names them
    if batch.exchanges:
        if ahead:
            existing, parts = ahead
            read = writes.span_read(*parts) if writes.span_read is not None else None
        else:
            existing = {row[0]: tuple(row[1:]) for cur in shapes for row in cur.fetchall()}
            read = span() if span is not None else None  # read with the shapes: no own wait
        changes = _changes(d, unique, existing)
        grown = [c for c in changes if c.old_pk is not None]
        if grown:  # their index rows and embeddings describe the old text
            writes.index.delete_index(conn, [c.old_pk for c in grown if c.old_pk is not None])
            writes.many(
                conn,
                d("DELETE FROM embeddings WHERE exchange_id = ?"),
                [(c.exchange.id,) for c in grown],
            )
        writes.store_exchanges(conn, changes)
        writes.index.reindex_span(conn, session, [c.exchange for c in changes], read)
    if batch.source is not None:
        conn.execute(d(SOURCE_UPSERT), source_params(batch.source))
    if batch.skipped:
        writes.many(conn, d(SKIPPED_INSERT), [skipped_params(s) for s in batch.skipped])


def _read_ahead(
    known: StoredTail, exchanges: list[Exchange]
) -> tuple[dict[str, tuple[Any, ...]], tuple[int, int, list[Any], list[Any]]] | None:
    """What the batch's write would read, from what its append read already (``known``):
    the stored shapes of ``exchanges`` (:func:`_stored_shapes`) and the index span's
    rows (lo, hi, the span's stored (pk, id, first ordinal), the (pk, exchange) of its
    neighbours: :class:`~memoir.store.search_sql.SpanRead`'s fields); None when ``known``
    may miss some.
    ``known`` holds the session's last three exchanges, or all of them. A batch's span
    starts at its first exchange, ``lo``: every stored exchange from ``lo`` on, and the two
    before ``lo``, are among the last three when ``lo`` is past the second of them."""
    if not exchanges:
        return None
    rows = known.exchanges
    firsts = [x.first_ordinal for x in exchanges]
    lo, hi = min(firsts), max(firsts)
    if len(rows) >= 3 and lo <= rows[1][1].first_ordinal:
        return None
    ids = {x.id for x in exchanges}
    shapes = {
        x.id: (pk, x.last_ordinal, len(x.user_text), len(x.assistant_text), len(x.tool_excerpt))
        for pk, x in rows
        if x.id in ids
    }
    stored = [(pk, x.id, x.first_ordinal) for pk, x in rows if lo <= x.first_ordinal <= hi]
    before = [(pk, x) for pk, x in rows if x.first_ordinal < lo][-2:]
    after = [(pk, x) for pk, x in rows if x.first_ordinal > hi][:2]
    return shapes, (lo, hi, stored, before[::-1] + after)


def exchange_changes(
    conn: Connection, dialect: Dialect, exchanges: Sequence[Exchange], *, fresh: bool
) -> list[ExchangeChange]:
    """The exchanges of a batch to write, in batch order (the last of each id): those not
    stored yet and those stored with another last ordinal or other text lengths. One
    already stored alike is left out (re-applying a batch writes nothing new). ``fresh``:
    the session's exchanges were just deleted, every one is new."""
    unique = {x.id: x for x in exchanges}
    sid = next(iter(unique.values())).session_id if unique else ""
    existing = {} if fresh else _stored_shapes(conn, dialect, sid, list(unique.values()))
    return _changes(dialect, unique, existing)


def _changes(
    dialect: Dialect, unique: dict[str, Exchange], existing: dict[str, tuple[Any, ...]]
) -> list[ExchangeChange]:
    """:func:`exchange_changes` of the stored shapes ``existing`` (:func:`_stored_shapes`)."""
    out: list[ExchangeChange] = []
    for x in unique.values():
        params = exchange_params(x, dialect.time)
        old = existing.get(x.id)
        if old is None:
            out.append(ExchangeChange(x, params, None))
        elif tuple(old[1:]) != (x.last_ordinal, len(params[9]), len(params[10]), len(params[11])):
            out.append(ExchangeChange(x, params, int(old[0])))
    return out


def _stored_shapes(
    conn: Connection, dialect: Dialect, session_id: str, exchanges: list[Exchange]
) -> dict[str, tuple[Any, ...]]:
    """id → (pk, last ordinal, length of each text) of the stored exchanges of the ids of
    ``exchanges`` (exchanges of the session ``session_id``)."""
    cursors = _send_shapes(conn, dialect, session_id, exchanges)
    return {row[0]: tuple(row[1:]) for cur in cursors for row in cur.fetchall()}


# the session and the span of first ordinals are named as well as the ids (an exchange's
# id is its session's and its first ordinal's, model.exchange_id): PostgreSQL then walks
# the (session, first ordinal) index over the span whatever it knows of the table (with
# the ids alone, a plan made while the table was new and small read all of it per batch)
_SHAPES = (
    "SELECT id, pk, last_ordinal, length(user_text), length(assistant_text), "
    "length(tool_excerpt) FROM exchanges WHERE session_id = ? AND first_ordinal BETWEEN ? "
    "AND ? AND id IN ({marks})"
)


def _send_shapes(
    conn: Connection, dialect: Dialect, session_id: str, exchanges: list[Exchange]
) -> list[Any]:
    """The cursors of :func:`_stored_shapes`' statements, all sent, none read yet."""
    out: list[Any] = []
    for at in range(0, len(exchanges), CHUNK):
        page = exchanges[at : at + CHUNK]
        firsts = [x.first_ordinal for x in page]
        marks = ", ".join("?" * len(page))
        params = (session_id, min(firsts), max(firsts), *(x.id for x in page))
        out.append(conn.execute(dialect(_SHAPES.format(marks=marks)), params))
    return out


def check_batch(batch: IngestBatch) -> None:
    """Every event and exchange of a batch belongs to its session."""
    sid = batch.session.id
    others = {e.session_id for e in batch.events} | {x.session_id for x in batch.exchanges}
    others.discard(sid)
    if others:
        raise StoreError(
            f"ingest batch for session {sid!r} holds rows of session {sorted(others)[0]!r}"
        )


def check_source_unchanged(conn: Connection, dialect: Dialect, batch: IngestBatch) -> None:
    """Refuse a batch whose source another process indexed since it was read (see
    ``IngestBatch.expected_offset``). On PostgreSQL the row is locked for the rest of the
    transaction (``FOR UPDATE``), so two replicas writing the same file take turns and the
    second sees the first's offset; SQLite's ``BEGIN IMMEDIATE`` already serializes."""
    if batch.source is None or batch.expected_offset is None:
        return
    path = batch.moved_from or batch.source.path
    row = conn.execute(
        dialect(f'SELECT "offset" FROM sources WHERE path = ?{dialect.row_lock}'), (path,)
    )
    found = row.fetchone()
    stored = int(found[0]) if found else 0
    if stored != batch.expected_offset:
        raise ConcurrentWrite(
            f"{path} was indexed to byte {stored:,} by another process while this one "
            f"read it from byte {batch.expected_offset:,}; its batch is dropped"
        )


def upsert_session(conn: Connection, dialect: Dialect, batch: IngestBatch, upsert: str) -> bool:
    """Check the batch and write its session row (``upsert``: the backend's statement);
    True when the stored session's project or harness changed (index rows name them)."""
    return _renamed(_send_session_upsert(conn, dialect, batch, upsert), batch.session)


def _send_session_upsert(
    conn: Connection, dialect: Dialect, batch: IngestBatch, upsert: str
) -> Any:
    """Check the batch, read its session row as stored and write it (``upsert``); the
    cursor of the read, not yet read (SQLite's cursor holds its one row from the execute
    on; in a pipeline the row arrives when it is read)."""
    check_batch(batch)
    session = batch.session
    found = conn.execute(
        dialect("SELECT project, harness FROM sessions WHERE id = ?"), (session.id,)
    )
    conn.execute(upsert, session_params(session, dialect.time))
    return found


def _renamed(found: Any, session: Session) -> bool:
    """Whether the session row read by :func:`_send_session_upsert` names another project
    or harness than ``session``."""
    before = found.fetchone()
    return before is not None and tuple(before) != (session.project, str(session.harness))


def move_source(conn: Connection, dialect: Dialect, old: str, new: str) -> None:
    """A transcript indexed under ``old`` is now read at ``new``: the old source row goes
    (the caller writes the new one) and the old path's skipped lines follow it."""
    conn.execute(dialect("DELETE FROM sources WHERE path = ?"), (old,))
    conn.execute(dialect("UPDATE skipped_lines SET path = ? WHERE path = ?"), (new, old))


# deleting a session -----------------------------------------------------------------------
def delete_session_content(
    conn: Connection, writes: IngestWrites, session_id: str, path: str | None
) -> None:
    """A session's events, exchanges, their index rows and embeddings (and the skipped
    lines of its source at ``path``)."""
    d = writes.dialect
    writes.index.delete_session_index(conn, session_id)
    conn.execute(
        d(
            "DELETE FROM embeddings WHERE exchange_id IN "
            "(SELECT id FROM exchanges WHERE session_id = ?)"
        ),
        (session_id,),
    )
    conn.execute(d("DELETE FROM exchanges WHERE session_id = ?"), (session_id,))
    conn.execute(d("DELETE FROM events WHERE session_id = ?"), (session_id,))
    if path is not None:
        conn.execute(d("DELETE FROM skipped_lines WHERE path = ?"), (path,))


def delete_session_rows(conn: Connection, writes: IngestWrites, session_id: str) -> bool:
    """Everything stored for a session except usage records (the session row locked
    first where the dialect locks rows); False when it is unknown."""
    d = writes.dialect
    found = conn.execute(d(f"SELECT 1 FROM sessions WHERE id = ?{d.row_lock}"), (session_id,))
    if found.fetchone() is None:
        return False
    delete_session_content(conn, writes, session_id, None)
    delete_session_tables(conn, d, session_id)
    return True


def delete_session_tables(conn: Connection, dialect: Dialect, session_id: str) -> None:
    """The last step of deleting a session (its events and exchanges already gone): its
    sources' skipped lines, sources, summaries, checkpoints, traces, everything memory
    derived from it (items and their quotes, cursor, queue, pending failure, denial
    markers, receipts) and the session row."""
    conn.execute(
        dialect(
            "DELETE FROM skipped_lines WHERE path IN "
            "(SELECT path FROM sources WHERE session_id = ?)"
        ),
        (session_id,),
    )
    # an item keeps the quotes other sessions gave it (a merge); one left with none goes
    touched = [
        r[0]
        for r in conn.execute(
            dialect(
                "SELECT id FROM memory_items WHERE session_id = ? UNION SELECT item_id FROM "
                "memory_sources WHERE session_id = ?"
            ),
            (session_id, session_id),
        ).fetchall()
    ]
    conn.execute(dialect("DELETE FROM memory_sources WHERE session_id = ?"), (session_id,))
    for item_id in touched:
        left = conn.execute(
            dialect("SELECT session_id FROM memory_sources WHERE item_id = ? ORDER BY n LIMIT 1"),
            (item_id,),
        ).fetchone()
        if left is None:
            conn.execute(dialect("DELETE FROM memory_vectors WHERE item_id = ?"), (item_id,))
            conn.execute(dialect("DELETE FROM memory_items WHERE id = ?"), (item_id,))
        else:
            conn.execute(
                dialect("UPDATE memory_items SET session_id = ? WHERE id = ?"), (left[0], item_id)
            )
    for table in (
        "sources",
        "summaries",
        "checkpoints",
        "traces",
        "memory_cursors",
        "memory_ops",
        "memory_pending",
        "memory_denials",
        "memory_receipts",
    ):
        conn.execute(dialect(f"DELETE FROM {table} WHERE session_id = ?"), (session_id,))
    conn.execute(dialect("DELETE FROM sessions WHERE id = ?"), (session_id,))
