"""v14: project names kept as written (Unicode letters allowed); existing sessions'
project names re-derived.

Before v14 a project's name kept only ``A-Za-z0-9._@+=-`` of its folder's name (every
other character became ``_``), so the folders ``проект`` and ``данные`` were both the
project ``______``; a Codex session's cwd kept only ``A-Za-z0-9-``. Now names follow
:func:`memoir.model.harness.project_name` and :func:`memoir.model.harness.cwd_project`.

What is stored lets most names be re-derived (:func:`rederive`, pure): a session keeps
its transcript's path (``source_path``) and its cwd. The source folder the sync walked is
not stored, but the old name was the old safe form of one folder on that path, so the
folders on the path whose old safe form is the stored name are the candidates; when they
all give one new name, that is the project. A Codex session (or a Claude Code folder that
is its cwd in Claude Code's spelling) is named from its cwd. A session whose name cannot
be re-derived (no path, no candidate, candidates that disagree) keeps its name.

A renamed session's project changes everywhere it is written: ``sessions``, its
sources' ``parser_state`` (what a resumed sync names the session by), its memory items
(``project``, and ``scope_key`` of project-scoped ones), the per-project memory switch
(copied to the new name), and its full-text rows (the ``meta`` column names the project;
rewritten with the backend's own ``reindex_session``) — all in the migration's
transaction. Archived copies and summary files are not moved: a migration cannot reach the
archive (on PostgreSQL several homes share one database, each with its own archive), and
the archive is located through each source's recorded ``archive_path``, which still names
the old folder; a rewritten transcript keeps its copy where it is (``ingest.plan``), and a
summary is found by its session id in any project folder. New transcripts of the project
are archived under its new name.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import replace
from pathlib import PurePath
from typing import Any, cast

from memoir.model import Session
from memoir.model.harness import claude_folder, cwd_project, project_name
from memoir.store.codec import SESSION_COLS, dumps, loads, session_from_row
from memoir.store.db import Tx

__all__ = ["NAME", "POSTGRES", "REINDEX", "SQLITE", "VERSION", "old_safe", "rederive", "rename"]

VERSION = 14
NAME = "project-names"
REINDEX = False

SQLITE: tuple[str, ...] = ()

POSTGRES: tuple[str, ...] = ()

_OLD_UNSAFE = re.compile(r"[^A-Za-z0-9._@+=-]")


def old_safe(name: str) -> str:
    """How Memoir before v14 made a folder's name into a project name (frozen here)."""
    return (_OLD_UNSAFE.sub("_", name).strip(".") or "_")[:200]


def _old_cwd(cwd: str) -> str:
    return old_safe(re.sub(r"[^A-Za-z0-9-]", "-", cwd.rstrip("/\\")) or "codex")


def rederive(project: str, harness: str, source_path: str | None, cwd: str | None) -> str:
    """The project a session stored as ``project`` has under v14's names (``project``
    itself when it cannot be told). Pure."""
    if cwd and harness == "codex" and _old_cwd(cwd) == project:
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
    is stored (see the module). ``tx`` is the backend's migration transaction."""
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
