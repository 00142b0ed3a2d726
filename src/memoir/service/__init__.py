"""What the adapters need beyond the front door: the one module the CLI, the HTTP server,
the MCP server and the worker call besides :class:`memoir.Memoir`.

``Memoir``'s verbs are what a user calls (sync, search, remember, …). An adapter needs a
little more: to resolve a session prefix, to read a session's event window, to list the
API users, to know the archive's database file before opening it. Each of those is a
function here, named for what the caller wants, taking the open ``Memoir`` and returning
public values. Adapters never touch ``memoir.store`` (an import-linter contract in
pyproject.toml holds it so); this module is where they reach it.

Light by design: nothing heavy is imported at module top (``memoir --help`` stays fast,
``tests/test_light_imports.py``); each function imports what it reads when called.

``MemoryItem`` and ``Receipt`` name the public values of :mod:`memoir.model`
(``Memory``, ``MemoryReceipt``) for the adapters' typing.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from memoir.service.sessions import (
    append_messages,
    append_user_messages,
    archive_session,
    create_session,
    regenerate_summary,
    run_summary_job,
    run_worker,
    summary_job,
    user_session,
)
from memoir.service.upkeep import (
    embed_pending,
    embed_written,
    embedder,
    extract,
    fallback_model,
    keyed_memories,
    memory_engine,
    memory_from_sync,
    memory_model,
    memory_project,
    model,
    recover_memories,
    recover_memories_in_background,
    remember_from_sync,
    rescan_secrets,
    secret_rescan,
    set_incognito,
    set_memory,
    set_memory_from_sync,
    stats,
    summarize_pending,
    summary_body,
    summary_scorer,
    summary_store,
    summary_updated_at,
    sync_observer,
    verify,
)

if TYPE_CHECKING:
    from datetime import datetime

    from memoir.app import Memoir
    from memoir.config import Settings
    from memoir.llm.port import UsageTotal
    from memoir.model import Exchange, Session
    from memoir.model import Memory as MemoryItem
    from memoir.model import MemoryReceipt as Receipt
    from memoir.store.parts.jobs import UserInfo
    from memoir.summaries.state import SummaryState

__all__ = [
    "add_user",
    "append_messages",
    "append_user_messages",
    "archive_session",
    "create_session",
    "database_file",
    "embed_pending",
    "embed_written",
    "embedder",
    "embedding_backlog",
    "embeddings_wait",
    "ensure_writable",
    "exchanges_by_id",
    "exchanges_holding",
    "exchanges_of",
    "extract",
    "fallback_model",
    "find_session",
    "forget_item",
    "has_exchange",
    "has_words",
    "keyed_memories",
    "last_event",
    "memory_citations",
    "memory_engine",
    "memory_from_sync",
    "memory_item",
    "memory_items",
    "memory_model",
    "memory_project",
    "memory_receipts",
    "model",
    "new_key",
    "project",
    "project_folders",
    "projects",
    "read_only",
    "recent_sessions",
    "recover_memories",
    "recover_memories_in_background",
    "regenerate_summary",
    "remember_from_sync",
    "rescan_secrets",
    "revoke_keys",
    "rotate_key",
    "run_summary_job",
    "run_worker",
    "secret_rescan",
    "session_id",
    "set_incognito",
    "set_memory",
    "set_memory_from_sync",
    "stats",
    "summarize_pending",
    "summary_body",
    "summary_job",
    "summary_scorer",
    "summary_state",
    "summary_store",
    "summary_updated_at",
    "sync_observer",
    "usage_report",
    "user_session",
    "users",
    "verify",
]


# the home before it is opened, and the query text ----------------------------------------
def database_file(settings: Settings) -> Path | None:
    """The SQLite file ``settings`` name (None for a PostgreSQL URL): a command that only
    reads checks it exists before opening, so a mistyped home makes no empty database."""
    from memoir.store import sqlite_file

    return sqlite_file(settings)


def has_words(text: str) -> bool:
    """Whether ``text`` holds a word a search or a match could use (``""`` and ``"!?"`` do
    not)."""
    from memoir.store.search_text import words_of

    return bool(words_of(text))


def read_only(memoir: Memoir) -> bool:
    """Whether the open home refuses writes (a read-only home or database)."""
    return bool(memoir.store.read_only)


def ensure_writable(memoir: Memoir, command: str) -> None:
    """``ReadOnly`` naming ``command`` when the home refuses writes."""
    from memoir.store import ensure_writable as check

    check(memoir.store, command)


# sessions and projects of the Memoir's user ---------------------------------------------
def session_id(memoir: Memoir, ref: str) -> str:
    """The session of ``memoir``'s user ``ref`` names (an id or a unique prefix);
    ``NotFound`` for none, another user's included."""
    from memoir.search.request import resolve_session

    return resolve_session(memoir.store.sessions, ref, user=memoir.user)


def project(memoir: Memoir, ref: str) -> str:
    """The project of ``memoir``'s user's sessions ``ref`` names: its name, its folder or
    the folder's last part; an unknown one is ``NotFound``, not a silent "nothing"."""
    from memoir.ingest.discover import project_name
    from memoir.search.request import resolve_project

    return resolve_project(memoir.store.sessions, ref, safe=project_name, user=memoir.user)


def find_session(memoir: Memoir, session_id: str) -> Session | None:
    """The session with this exact id when it is ``memoir``'s user's, else None."""
    return memoir.store.sessions.get(session_id, user=memoir.user)


def has_exchange(memoir: Memoir, exchange_id: str) -> bool:
    """Whether an exchange with this exact id (``SESSION:N``) is stored."""
    return memoir.store.exchanges.get(exchange_id) is not None


def recent_sessions(memoir: Memoir, limit: int) -> list[Session]:
    """``memoir``'s user's sessions, the most recently active first, at most ``limit``."""
    return [info.session for info in memoir.store.sessions.recent(limit=limit, user=memoir.user)]


def projects(memoir: Memoir) -> list[tuple[str, str | None, int]]:
    """``(name, folder, sessions)`` of each of ``memoir``'s user's projects."""
    return memoir.store.sessions.projects(user=memoir.user)


def project_folders(memoir: Memoir) -> dict[str, str | None]:
    """Project name → the folder its sessions ran in, for ``memoir``'s user."""
    return dict(memoir.store.sessions.project_paths(user=memoir.user))


# reading a session (ids already resolved) ------------------------------------------------
def exchanges_of(memoir: Memoir, session_id: str) -> list[Exchange]:
    """The exchanges of the session with this exact id, in order."""
    return memoir.store.exchanges.of(session_id)


def exchanges_holding(
    memoir: Memoir, events: Sequence[tuple[str, int]]
) -> dict[tuple[str, int], str]:
    """The id of the exchange holding each (session id, event ordinal), read at once
    (events no exchange holds are left out)."""
    return memoir.store.exchanges.holding(list(events))


def exchanges_by_id(memoir: Memoir, exchange_ids: Sequence[str]) -> dict[str, Exchange]:
    """The stored exchanges these ids name (missing ones left out)."""
    return memoir.store.exchanges.many(list(exchange_ids))


def last_event(memoir: Memoir, session_id: str) -> int:
    """The number of the session's last event (0 for none)."""
    return memoir.store.events.last_ordinal(session_id)


def summary_state(memoir: Memoir, session_id: str) -> SummaryState:
    """Where the session's summary stands (its coverage, whether it is stale)."""
    from memoir.summaries.persist import read_summary_state

    return read_summary_state(memoir._summary_store(), memoir.store, session_id)


# memory items of the Memoir's user -------------------------------------------------------
def memory_item(memoir: Memoir, item_id: str) -> MemoryItem | None:
    """The item with this id when it is ``memoir``'s user's, else None."""
    from memoir.verbs import memory_value

    found = memoir.store.memory_items.get(item_id, owner=memoir.user)
    return None if found is None else memory_value(found)


def memory_items(
    memoir: Memoir,
    *,
    project: str | None = None,
    session_id: str | None = None,
    kind: str | None = None,
    limit: int = 50,
    history: bool = False,
) -> list[MemoryItem]:
    """``memoir``'s user's items passing the filters, newest first (``history``: the
    superseded ones too)."""
    return memoir.memories.list(
        project=project, session_id=session_id, kind=kind, limit=limit, history=history
    )


def forget_item(memoir: Memoir, item_id: str) -> None:
    """Forget the item with this exact id (one the caller has read as the user's)."""
    memoir.store.memory_items.forget(item_id)


def memory_citations(memoir: Memoir, session_id: str) -> dict[int, list[str]]:
    """Event number → the live memory items quoting it, for one session."""
    return memoir.store.memory_items.cited(session_id)


def memory_receipts(memoir: Memoir, session_id: str | None = None) -> list[Receipt]:
    """What each of ``memoir``'s user's memory operations settled on (of one session)."""
    from memoir.verbs import receipt_value

    return [receipt_value(r) for r in memoir.store.memory.receipts(session_id, owner=memoir.user)]


# model calls and embeddings --------------------------------------------------------------
def usage_report(memoir: Memoir, since: datetime | None = None) -> list[UsageTotal]:
    """``memoir``'s user's model calls and tokens, by day and model (since ``since``)."""
    from memoir.llm.port import usage_totals

    return usage_totals(memoir.store.usage.records(since=since, owner=memoir.user))


def embeddings_wait(memoir: Memoir, model: str, *, with_tokens: bool = False) -> bool:
    """Whether any exchange waits for a vector of ``model`` (or its token states, or a
    vector of an older recipe): what semantic ranking has nothing to rank for yet."""
    return bool(memoir.store.embeddings.backlog(model, 1, with_tokens=with_tokens))


def embedding_backlog(memoir: Memoir, model: str, *, with_tokens: bool = False) -> int:
    """How many exchanges still wait for a vector of ``model`` (or its token states)."""
    return memoir.store.embeddings.backlog_count(model, with_tokens=with_tokens)


# API users and their keys (the service's; every key is returned once, never stored) -----
def add_user(memoir: Memoir, name: str, *, label: str = "") -> str:
    """Create user ``name`` (an existing one is kept); a new API key for it."""
    return memoir.store.users.add(name, label=label)


def new_key(memoir: Memoir, name: str, *, label: str = "") -> str:
    """A new API key for an existing user (or the local owner)."""
    return memoir.store.users.new_key(name, label=label)


def rotate_key(memoir: Memoir, name: str, *, label: str = "") -> str:
    """A new API key for ``name``, every earlier one revoked in the same transaction."""
    return memoir.store.users.rotate(name, label=label)


def users(memoir: Memoir) -> list[UserInfo]:
    """Every API user with its count of live keys, by name."""
    return memoir.store.users.list()


def revoke_keys(memoir: Memoir, name: str) -> int:
    """Revoke every key of ``name``; how many were live."""
    return memoir.store.users.revoke(name)


# what the HTTP server needs ---------------------------------------------------------------
# Every route acts for its caller: it calls these with ``memoir.as_user(caller)`` (a view of
# the server's one Memoir), or with a key's hash before the caller is known.
if TYPE_CHECKING:
    from memoir.jobs import Job
    from memoir.model import Event, RecentKey, RecentPage, RecentQuery

__all__ += [
    "SessionSummary",
    "events_of",
    "events_page",
    "exchanges_page",
    "key_hash",
    "schema_version",
    "session_listing",
    "session_summary",
    "sessions_created",
    "user_for_key_hash",
]


def key_hash(key: str) -> str:
    """The hash an API key is stored and looked up by (the key itself is never stored)."""
    from memoir.store.parts.jobs import hash_key

    return hash_key(key)


def user_for_key_hash(memoir: Memoir, key_hash: str) -> str | None:
    """The user of the live API key with this hash; None for an unknown or revoked key."""
    return memoir.store.users.user_for_hash(key_hash)


def schema_version(memoir: Memoir) -> int:
    """The database's schema version: a query it must answer (what readiness asks)."""
    return memoir.store.schema_version()


def sessions_created(
    memoir: Memoir,
    query: RecentQuery,
    *,
    after: tuple[datetime, str] | None = None,
    limit: int = 50,
) -> list[Session]:
    """``memoir``'s user's sessions passing ``query`` in the order they were created (then
    by id), those past ``after`` (the created time and id of the previous page's last)."""
    return memoir.store.sessions.created_order(memoir.user, query, after=after, limit=limit)


def session_listing(
    memoir: Memoir, query: RecentQuery, *, limit: int, after: RecentKey | None = None
) -> RecentPage:
    """A page of ``memoir``'s user's sessions passing ``query``, the most recently active
    first, past ``after``; with the total and the projects and harnesses to filter by."""
    return memoir.store.sessions.listing(memoir.user, query, limit=limit, after=after, counted=True)


def events_of(memoir: Memoir, session_id: str) -> list[Event]:
    """Every event of the session with this exact id, in order."""
    return memoir.store.events.of(session_id)


def events_page(
    memoir: Memoir, session_id: str, *, after: int, limit: int
) -> tuple[list[Event], bool]:
    """At most ``limit`` events of the session past ordinal ``after``, and whether more
    follow. Ordinals are dense (1, 2, 3 …): the page is the range ``after..after+limit``,
    and past the last ordinal nothing is read (an ``after`` of any size is an empty page)."""
    last = memoir.store.events.last_ordinal(session_id)
    if after >= last:
        return [], False
    page = memoir.store.events.of(session_id, after=after, upto=min(after + limit, last))[:limit]
    return page, bool(page) and last > page[-1].ordinal


def exchanges_page(
    memoir: Memoir, session_id: str, *, after: int, limit: int
) -> tuple[list[Exchange], bool]:
    """At most ``limit`` exchanges of the session opening past ordinal ``after``, and
    whether more follow."""
    rest = [x for x in memoir.store.exchanges.of(session_id) if x.first_ordinal > after]
    return rest[:limit], len(rest) > limit


@dataclass(frozen=True, slots=True)
class SessionSummary:
    """A poll of a session's summary as its caller sees it: whose the session is, where
    its summary stands, when it was written, what its coverage counts (``unit``:
    "events", or "bytes" of the archived transcript) and how much of that there is now,
    and the session's newest summary job."""

    user: str
    session: Session
    state: SummaryState
    updated_at: datetime | None
    unit: str
    current: int
    job: Job | None


def session_summary(
    memoir: Memoir, session_id: str, *, key_hash: str | None = None, user: str | None = None
) -> SessionSummary | None:
    """The summary of session ``session_id`` (an id or a name) of the caller: the user of
    the live key with ``key_hash``, else ``user``. The key, the owner, the summary row, the
    event count and the newest job are one statement (a poll is one round trip), read even
    while job admission is down. None when the key is not live or the session is not the
    caller's (:func:`user_for_key_hash` tells which)."""
    from memoir.summaries.persist import read_summary_state, summary_updated_at
    from memoir.summaries.port import answered_from_row, polled_summary

    poll = memoir.store.summaries.poll(session_id, key_hash=key_hash, user=user)
    if poll is None:
        return None
    session = poll.session
    if answered_from_row(memoir.settings.summary_store, session.harness):
        polled = polled_summary(poll)
        state, updated, unit, current = polled.state, polled.updated_at, polled.unit, polled.current
    else:  # a synced session: its summary is a file beside its archived transcript
        summaries = summary_store(memoir)
        state = read_summary_state(summaries, memoir.store, session.id)
        updated = summary_updated_at(summaries, memoir.store.summaries, session.id)
        unit, current = _measure(memoir, session) if state.coverage is not None else ("events", 0)
    job = memoir.jobs().seen(poll.job) if poll.job is not None else None
    return SessionSummary(poll.user, session, state, updated, unit, current, job)


def _measure(memoir: Memoir, session: Session) -> tuple[str, int]:
    """The unit a summary's coverage counts in and how much of it there is now: bytes of
    the archived transcript where the summary files are kept beside it, else events."""
    import glob

    from memoir.model import Harness

    if memoir.settings.summary_store != "database" and session.harness != Harness.API:
        archive = memoir.settings.archive_dir
        path = archive / session.project / f"{session.id}.jsonl"
        if not path.is_file():  # a transcript that moved to another project's folder
            path = next(iter(sorted(archive.glob(f"*/{glob.escape(session.id)}.jsonl"))), path)
        try:
            return "bytes", path.stat().st_size
        except OSError:
            pass
    return "events", memoir.store.events.last_ordinal(session.id)
