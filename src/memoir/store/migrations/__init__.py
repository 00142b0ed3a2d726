"""Versioned schema migrations: ordered, named, each applied in one transaction.

Each version is a :class:`Migration` constant named for it (``V001_CORE`` ...) with the
statements for both backends, kept in order by range: versions 1-6 in ``v001_v006``,
7-13 in ``v007_v013``, 17-25 in ``v017_v025``, and 14-16 here: their data repairs
rewrite index rows through the backends' search modules, which import index helpers from
the range modules, so only this root (read by the runners) may import those back. The
``schema_version`` table records every applied version (number, name, time). A
migration with ``reindex`` rebuilds the full-text index rows of all exchanges inside
the same transaction (the index is derived data; a new index format ships as a
migration with ``reindex``). The runners live in the backends
(``sqlite_store.migrate``, ``postgres_store.migrate``).

A database with no schema yet that is going to the newest version (:func:`fresh`) runs
every migration in one transaction (on PostgreSQL each one's statements in one round
trip): it holds no rows, so a data repair (``*_after``) only runs its statements and
``reindex`` has nothing to rebuild, and one transaction instead of one per version opens a
new home in about a third of the time. Any other database, and one asked for an older
version, takes the migrations one by one.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import PurePath
from typing import Any, cast

from memoir.model import Session
from memoir.model.event import fill_times, time_of_ns
from memoir.model.harness import claude_folder, cwd_project, project_name
from memoir.store.codec import SESSION_COLS, dumps, from_iso, loads, session_from_row
from memoir.store.db import Tx
from memoir.store.migrations.v001_v006 import (
    V001_CORE,
    V002_SEARCH,
    V003_FILTER_TOKENS,
    V004_NEIGHBOUR_CONTEXT,
    V005_TOKEN_STATES,
    V006_EMBEDDING_GENERATIONS,
    Migration,
)
from memoir.store.migrations.v007_v013 import (
    V007_EMBEDDING_CHANGES,
    V008_ACCENT_FOLDING,
    V009_EMBEDDING_RECIPE,
    V010_MEMORY,
    V011_SERVICE,
    V012_CHECKPOINT_BOUNDARY,
    V013_MEMORY_RECALL,
)
from memoir.store.migrations.v017_v025 import (
    V017_SECRET_RESCAN,
    V018_INDEX_FOLDED_IN_PYTHON,
    V019_OWNER_INDEXES,
    V020_KEYED_ITEMS,
    V021_SESSION_NAMES,
    V022_OWNER_TOKENS,
    V023_EMBEDDING_LOG_EVERYWHERE,
    V024_ITEM_VECTOR_MODELS,
    V025_ITEM_OWNER_LOOKUP,
)

__all__ = [
    "CURRENT_VERSION",
    "MIGRATIONS",
    "V014_PROJECT_NAMES",
    "V015_USAGE_REDACTIONS",
    "V016_EVENT_TIMES",
    "Migration",
    "backfill",
    "fresh",
    "old_safe",
    "pending",
    "rederive",
    "rename",
]


# v14: project names kept as written (Unicode letters allowed); existing sessions'
# project names re-derived.
#
# Before v14 a project's name kept only ``A-Za-z0-9._@+=-`` of its folder's name (every
# other character became ``_``), so the folders ``проект`` and ``данные`` were both the
# project ``______``; a Codex session's cwd kept only ``A-Za-z0-9-``. Now names follow
# :func:`memoir.model.harness.project_name` and :func:`memoir.model.harness.cwd_project`.
#
# What is stored lets most names be re-derived (:func:`rederive`, pure): a session keeps
# its transcript's path (``source_path``) and its cwd. The source folder the sync walked is
# not stored, but the old name was the old safe form of one folder on that path, so the
# folders on the path whose old safe form is the stored name are the candidates; when they
# all give one new name, that is the project. A Codex session (or a Claude Code folder that
# is its cwd in Claude Code's spelling) is named from its cwd. A session whose name cannot
# be re-derived (no path, no candidate, candidates that disagree) keeps its name.
#
# A renamed session's project changes everywhere it is written: ``sessions``, its
# sources' ``parser_state`` (what a resumed sync names the session by), its memory items
# (``project``, and ``scope_key`` of project-scoped ones), the per-project memory switch
# (copied to the new name), and its full-text rows (the ``meta`` column names the project;
# rewritten with the backend's own ``reindex_session``) — all in the migration's
# transaction. Archived copies and summary files are not moved: a migration cannot reach the
# archive (on PostgreSQL several homes share one database, each with its own archive), and
# the archive is located through each source's recorded ``archive_path``, which still names
# the old folder; a rewritten transcript keeps its copy where it is (``ingest.plan``), and a
# summary is found by its session id in any project folder. New transcripts of the project
# are archived under its new name.

_V014_OLD_UNSAFE = re.compile(r"[^A-Za-z0-9._@+=-]")


def old_safe(name: str) -> str:
    """How Memoir before v14 made a folder's name into a project name (frozen here)."""
    return (_V014_OLD_UNSAFE.sub("_", name).strip(".") or "_")[:200]


def _v014_old_cwd(cwd: str) -> str:
    return old_safe(re.sub(r"[^A-Za-z0-9-]", "-", cwd.rstrip("/\\")) or "codex")


def rederive(project: str, harness: str, source_path: str | None, cwd: str | None) -> str:
    """The project a session stored as ``project`` has under v14's names (``project``
    itself when it cannot be told). Pure."""
    if cwd and harness == "codex" and _v014_old_cwd(cwd) == project:
        return cwd_project(cwd)
    if cwd and harness == "claude-code" and old_safe(claude_folder(cwd)) == project:
        return cwd_project(cwd, project)
    if not source_path:
        return project
    folders = PurePath(source_path).parent.parts
    found = {project_name(f) for f in folders if f not in ("/", "\\") and old_safe(f) == project}
    return found.pop() if len(found) == 1 else project


def rename(tx: Tx, *, backend: str) -> None:
    """Re-derive every session's project, and write the renamed ones' project wherever it
    is stored (see v14 above). ``tx`` is the backend's migration transaction."""
    renamed: list[tuple[Session, str]] = []
    for row in tx.run(f"SELECT {SESSION_COLS} FROM sessions"):
        session = session_from_row(row)
        new = rederive(session.project, session.harness.value, session.source_path, session.cwd)
        if new != session.project:
            renamed.append((session, new))
    if not renamed:
        return
    conn = cast(Any, tx).conn  # the backend's driver connection (its migration Tx)
    reindex_session: Callable[[Any, Session], None]
    if backend == "sqlite":
        from memoir.store import sqlite_search

        reindex_session = sqlite_search.reindex_session
    else:
        from memoir.store import postgres_search  # psycopg: only on PostgreSQL

        reindex_session = postgres_search.reindex_session
    moves: dict[str, set[str]] = {}
    for session, new in renamed:
        old = session.project
        moves.setdefault(old, set()).add(new)
        tx.run("UPDATE sessions SET project = ? WHERE id = ?", (new, session.id))
        for path, state in tx.run(
            "SELECT path, parser_state FROM sources WHERE session_id = ?", (session.id,)
        ):
            parsed = loads(state) or {}
            if isinstance(parsed, dict) and parsed.get("project") == old:
                parsed["project"] = new
                tx.run("UPDATE sources SET parser_state = ? WHERE path = ?", (dumps(parsed), path))
        tx.run(
            "UPDATE memory_items SET project = ?, scope_key = CASE WHEN scope = 'project' "
            "THEN ? ELSE scope_key END WHERE session_id = ? AND project = ?",
            (new, new, session.id, old),
        )
        reindex_session(conn, replace(session, project=new))
    for old, news in moves.items():
        switch = tx.run("SELECT disabled FROM memory_switches WHERE project = ?", (old,))
        for new in sorted(news):
            if switch and not tx.run("SELECT 1 FROM memory_switches WHERE project = ?", (new,)):
                tx.run(
                    "INSERT INTO memory_switches (project, disabled) VALUES (?, ?)",
                    (new, switch[0][0]),
                )
        if switch and not tx.run("SELECT 1 FROM sessions WHERE project = ?", (old,)):
            tx.run("DELETE FROM memory_switches WHERE project = ?", (old,))


V014_PROJECT_NAMES = Migration(
    14,
    "project-names",
    (),
    (),
    sqlite_after=lambda tx: rename(tx, backend="sqlite"),
    postgres_after=lambda tx: rename(tx, backend="postgres"),
)

# v15: the usage ledger counts the secrets redacted from each request.
# Old rows count none.
_V015_SQLITE: tuple[str, ...] = (
    "ALTER TABLE usage ADD COLUMN redacted INTEGER NOT NULL DEFAULT 0",
)

_V015_POSTGRES: tuple[str, ...] = (
    "ALTER TABLE usage ADD COLUMN redacted INTEGER NOT NULL DEFAULT 0",
)

V015_USAGE_REDACTIONS = Migration(15, "usage-redactions", _V015_SQLITE, _V015_POSTGRES)

# v16: no event without a time. Events get ``time_inferred``; stored events that have no
# time are given the nearest known one, as ingest now gives it.
#
# Before v16 an event the source gave no time (a Claude Code line without one, a generic
# JSON chat with none, a message appended over the API without one) was stored with none,
# and so were the exchanges made only of such events: date filters, "recent" orderings and
# the page passed them over. Ingest now infers a time for each
# (:func:`memoir.model.event.infer_times`); this migration does the same for what is
# stored, session by session, in the migration's transaction:
#
# - each event without a time takes the time of the nearest event before it in its
#   session that has one, else of the nearest after it, else the session's transcript file's
#   modification time as the last sync saw it (``sources.mtime_ns``), else the session's
#   last write (``updated_at``, then ``created_at``: an API session's events were stored
#   by then), else the time of the migration; it is marked ``time_inferred``;
# - the session's exchanges take their first and last event's times (``started_at``,
#   ``ended_at``, as :func:`memoir.model.build_exchanges` makes them), a session without
#   ``created_at`` / ``updated_at`` its first and last event's;
# - the full-text rows of a session whose exchanges changed are rewritten with the backend's
#   own ``reindex_session`` (the ``meta`` column carries the date, and SQLite's date-range
#   prefilter reads it there).
#
# Only sessions that hold an event without a time are read; a database without any does
# nothing beyond adding the column.
_V016_SQLITE: tuple[str, ...] = (
    "ALTER TABLE events ADD COLUMN time_inferred INTEGER NOT NULL DEFAULT 0",
)

_V016_POSTGRES: tuple[str, ...] = (
    "ALTER TABLE events ADD COLUMN time_inferred BOOLEAN NOT NULL DEFAULT FALSE",
)


def backfill(tx: Tx, *, backend: str, now: datetime | None = None) -> None:
    """Give every stored event without a time the nearest known one (see v16 above).
    ``tx`` is the backend's migration transaction."""
    sessions = [r[0] for r in tx.run("SELECT DISTINCT session_id FROM events WHERE ts IS NULL")]
    if not sessions:
        return
    conn = cast(Any, tx).conn  # the backend's driver connection (its migration Tx)
    reindex_session: Callable[[Any, Session], None]
    if backend == "sqlite":
        from memoir.store import sqlite_search

        reindex_session = sqlite_search.reindex_session
    else:
        from memoir.store import postgres_search  # psycopg: only on PostgreSQL

        reindex_session = postgres_search.reindex_session
    stamp = now or datetime.now(UTC)
    for sid in sorted(sessions):
        _v016_session(tx, conn, reindex_session, sid, stamp)


def _v016_session(
    tx: Tx, conn: Any, reindex_session: Callable[[Any, Session], None], sid: str, now: datetime
) -> None:
    """One session's events, exchanges, session row and index rows (see v16 above)."""
    rows = tx.run("SELECT ordinal, ts FROM events WHERE session_id = ? ORDER BY ordinal", (sid,))
    ordinals = [int(r[0]) for r in rows]
    own = [from_iso(r[1]) for r in rows]
    found = tx.run(f"SELECT {SESSION_COLS} FROM sessions WHERE id = ?", (sid,))
    session = session_from_row(found[0]) if found else None  # None: orphaned events
    filled = fill_times(own, before=None, fallback=_v016_fallback(tx, sid, session, now))
    tx.many(
        "UPDATE events SET ts = ?, time_inferred = ? WHERE session_id = ? AND ordinal = ?",
        [
            (tx.time(at), True, sid, n)
            for n, mine, at in zip(ordinals, own, filled, strict=True)
            if mine is None
        ],
    )
    at_ordinal = dict(zip(ordinals, filled, strict=True))
    changed = False
    for pk, first, last, started, ended in tx.run(
        "SELECT pk, first_ordinal, last_ordinal, started_at, ended_at FROM exchanges "
        "WHERE session_id = ?",
        (sid,),
    ):
        span = [at_ordinal[n] for n in range(int(first), int(last) + 1) if n in at_ordinal]
        if not span:
            continue
        if (from_iso(started), from_iso(ended)) != (span[0], span[-1]):
            tx.run(
                "UPDATE exchanges SET started_at = ?, ended_at = ? WHERE pk = ?",
                (tx.time(span[0]), tx.time(span[-1]), pk),
            )
            changed = True
    if session is None:
        return
    if session.created_at is None or session.updated_at is None:
        tx.run(
            "UPDATE sessions SET created_at = coalesce(created_at, ?), "
            "updated_at = coalesce(updated_at, ?) WHERE id = ?",
            (tx.time(filled[0]), tx.time(filled[-1]), sid),
        )
    if changed:
        reindex_session(conn, session)


def _v016_fallback(tx: Tx, sid: str, session: Session | None, now: datetime) -> datetime:
    """The time a session's events that have no known neighbour take (see v16 above)."""
    found = tx.run("SELECT max(mtime_ns) FROM sources WHERE session_id = ?", (sid,))
    mtime_ns = found[0][0] if found else None
    if mtime_ns:
        return time_of_ns(int(mtime_ns))
    if session is None:
        return now
    return session.updated_at or session.created_at or now


V016_EVENT_TIMES = Migration(
    16,
    "event-times",
    _V016_SQLITE,
    _V016_POSTGRES,
    sqlite_after=lambda tx: backfill(tx, backend="sqlite"),
    postgres_after=lambda tx: backfill(tx, backend="postgres"),
)


MIGRATIONS: tuple[Migration, ...] = (
    V001_CORE,
    V002_SEARCH,
    V003_FILTER_TOKENS,
    V004_NEIGHBOUR_CONTEXT,
    V005_TOKEN_STATES,
    V006_EMBEDDING_GENERATIONS,
    V007_EMBEDDING_CHANGES,
    V008_ACCENT_FOLDING,
    V009_EMBEDDING_RECIPE,
    V010_MEMORY,
    V011_SERVICE,
    V012_CHECKPOINT_BOUNDARY,
    V013_MEMORY_RECALL,
    V014_PROJECT_NAMES,
    V015_USAGE_REDACTIONS,
    V016_EVENT_TIMES,
    V017_SECRET_RESCAN,
    V018_INDEX_FOLDED_IN_PYTHON,
    V019_OWNER_INDEXES,
    V020_KEYED_ITEMS,
    V021_SESSION_NAMES,
    V022_OWNER_TOKENS,
    V023_EMBEDDING_LOG_EVERYWHERE,
    V024_ITEM_VECTOR_MODELS,
    V025_ITEM_OWNER_LOOKUP,
)
CURRENT_VERSION = MIGRATIONS[-1].version


def pending(current: int, target: int | None = None) -> list[Migration]:
    """Migrations to apply, in order, to go from ``current`` to ``target`` (default: the
    newest)."""
    goal = CURRENT_VERSION if target is None else target
    return [m for m in MIGRATIONS if current < m.version <= goal]


def fresh(current: int, target: int | None = None) -> bool:
    """A database at ``current`` going to ``target`` is created in one batch (see the
    module's doc): it has no schema yet and is going to the newest version."""
    return current == 0 and (target is None or target == CURRENT_VERSION)
