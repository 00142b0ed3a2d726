"""What the SQLite and PostgreSQL backends share below their parts: the ingest
statements that are the same on both, the index helpers that read a session's exchanges
in order, and the read of the text search snippets quote.

As in the store's parts (:mod:`memoir.store.parts`), SQL here is written once with ``?``
placeholders. Functions that take a driver connection take a ``dialect`` too:
:func:`sqlite_sql` (as written) or :func:`pg_sql` (``%s``). What really differs (locking,
pools, FTS5 versus tsvector, primary keys) stays in the backend modules.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from functools import lru_cache
from typing import Any, Protocol

from memoir.errors import ConcurrentWrite, MigrationError, StoreError
from memoir.model import Exchange, Session
from memoir.store.codec import (
    EXCHANGE_COLS,
    SESSION_COLS,
    TimeEncoder,
    exchange_from_row,
    loads,
    prefixed,
    session_from_row,
    session_params,
)
from memoir.store.index_doc import MAX_COLUMN_CHARS, quoted_text, tools_text
from memoir.store.values import IngestBatch

__all__ = [
    "EVENT_INSERT",
    "SESSION_UPSERT_HEAD",
    "SKIPPED_INSERT",
    "SOURCE_UPSERT",
    "Connection",
    "Dialect",
    "check_batch",
    "check_source_unchanged",
    "check_version",
    "delete_session_tables",
    "exchange_pks",
    "indexed_sessions",
    "move_source",
    "ordered_exchanges",
    "pg_sql",
    "quoted_texts",
    "session_stream",
    "span_rows",
    "sqlite_sql",
    "upsert_session",
]

Dialect = Callable[[str], str]


class Connection(Protocol):
    """The part of ``sqlite3.Connection`` and ``psycopg.Connection`` used here."""

    def execute(self, sql: Any, params: Any = ..., /) -> Any: ...


def move_source(conn: Connection, dialect: Dialect, old: str, new: str) -> None:
    """A transcript indexed under ``old`` is now read at ``new``: the old source row goes
    (the caller writes the new one) and the old path's skipped lines follow it."""
    conn.execute(dialect("DELETE FROM sources WHERE path = ?"), (old,))
    conn.execute(dialect("UPDATE skipped_lines SET path = ? WHERE path = ?"), (new, old))


def check_version(version: int, current: int) -> None:
    """A database migrated past this Memoir's schema (``current``) is an error."""
    if version > current:
        raise MigrationError(
            f"the database is at schema v{version}, newer than this Memoir (v"
            f"{current}); upgrade memoir"
        )


def sqlite_sql(sql: str) -> str:
    """SQLite takes the ``?`` placeholders as written."""
    return sql


@lru_cache(maxsize=256)
def pg_sql(sql: str) -> str:
    """psycopg's placeholders (``%s``) for the ``?`` ones."""
    return sql.replace("?", "%s")


# ingest statements whose text is the same on both backends ------------------------------
# (the session upsert's head: each backend appends how it merges the two timestamps)
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
    source_offset, source_line, payload, text)
VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
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
    lock = " FOR UPDATE" if dialect is pg_sql else ""
    row = conn.execute(dialect(f'SELECT "offset" FROM sources WHERE path = ?{lock}'), (path,))
    found = row.fetchone()
    stored = int(found[0]) if found else 0
    if stored != batch.expected_offset:
        raise ConcurrentWrite(
            f"{path} was indexed to byte {stored:,} by another process while this one "
            f"read it from byte {batch.expected_offset:,}; its batch is dropped"
        )


def upsert_session(
    conn: Connection, dialect: Dialect, batch: IngestBatch, upsert: str, encode: TimeEncoder
) -> bool:
    """Check the batch and write its session row (``upsert``: the backend's statement);
    True when the stored session's project or harness changed (index rows name them)."""
    check_batch(batch)
    session = batch.session
    before = conn.execute(
        dialect("SELECT project, harness FROM sessions WHERE id = ?"), (session.id,)
    ).fetchone()
    conn.execute(upsert, session_params(session, encode))
    return before is not None and tuple(before) != (session.project, str(session.harness))


def delete_session_tables(conn: Connection, dialect: Dialect, session_id: str) -> None:
    """The last step of deleting a session (its events and exchanges already gone): its
    sources' skipped lines, sources, summaries, checkpoints, traces and the session row."""
    conn.execute(
        dialect(
            "DELETE FROM skipped_lines WHERE path IN "
            "(SELECT path FROM sources WHERE session_id = ?)"
        ),
        (session_id,),
    )
    for table in ("sources", "summaries", "checkpoints", "traces"):
        conn.execute(dialect(f"DELETE FROM {table} WHERE session_id = ?"), (session_id,))
    conn.execute(dialect("DELETE FROM sessions WHERE id = ?"), (session_id,))


# index helpers: a session's exchanges in order -------------------------------------------
_EXCHANGE_COLS = prefixed(EXCHANGE_COLS, "e")
_SESSION_COLS = prefixed(SESSION_COLS, "s")
_REBUILD_PAGE = 2000


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
    keys = conn.execute(
        dialect(
            "SELECT pk, id FROM exchanges WHERE session_id = ? AND first_ordinal BETWEEN ? AND ? "
            "ORDER BY first_ordinal"
        ),
        (session_id, lo, hi),
    ).fetchall()
    pks = {str(i): int(pk) for pk, i in keys}
    known = {x.id: x for x in changed}
    if len(keys) > len(known):  # unchanged exchanges between changed ones
        between = " AND e.first_ordinal BETWEEN ? AND ?"
        for _, x in ordered_exchanges(conn, dialect, session_id, between, (lo, hi)):
            known.setdefault(x.id, x)
    before = ordered_exchanges(
        conn,
        dialect,
        session_id,
        " AND e.first_ordinal < ? ORDER BY e.first_ordinal DESC LIMIT 2",
        (lo,),
    )
    after = ordered_exchanges(
        conn,
        dialect,
        session_id,
        " AND e.first_ordinal > ? ORDER BY e.first_ordinal LIMIT 2",
        (hi,),
    )
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
_QUOTED_PAGE = 500  # pks per statement, well under either driver's parameter limit


def exchange_pks(conn: Connection, dialect: Dialect, exchange_ids: Sequence[str]) -> dict[int, str]:
    """pk → id of these exchanges (those that exist): the rows snippets are made for."""
    out: dict[int, str] = {}
    for at in range(0, len(exchange_ids), _QUOTED_PAGE):
        page = tuple(exchange_ids[at : at + _QUOTED_PAGE])
        marks = ", ".join("?" * len(page))
        rows = conn.execute(
            dialect(f"SELECT pk, id FROM exchanges WHERE id IN ({marks})"), page
        ).fetchall()
        out.update((int(pk), xid) for pk, xid in rows)
    return out


def quoted_texts(
    conn: Connection, dialect: Dialect, pks: Sequence[int], column: str | None
) -> dict[int, str]:
    """What a snippet of each exchange quotes (:func:`~memoir.store.index_doc.quoted_text`),
    by pk: read from its stored text, never the index's CJK-segmented copy. Each column is
    read only as far as the index reads it."""
    out: dict[int, str] = {}
    for at in range(0, len(pks), _QUOTED_PAGE):
        page = tuple(pks[at : at + _QUOTED_PAGE])
        marks = ", ".join("?" * len(page))
        rows = conn.execute(
            dialect(f"SELECT {_QUOTED_COLS} FROM exchanges WHERE pk IN ({marks})"), page
        ).fetchall()
        for pk, user, assistant, names, excerpt in rows:
            tools = tools_text(loads(names) or (), excerpt)
            out[int(pk)] = quoted_text(user, assistant, tools, column)
    return out
