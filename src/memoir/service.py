"""What the adapters need beyond the front door: the one module the CLI and the MCP server
(and, next, the HTTP server and the worker) call besides :class:`memoir.Memoir`.

``Memoir``'s verbs are what a user calls (sync, search, remember, …). An adapter needs a
little more: to resolve a session prefix, to read a session's event window, to list the
API users, to know the archive's database file before opening it. Each of those is a
function here, named for what the caller wants, taking the open ``Memoir`` and returning
public values. Adapters never touch ``memoir.store`` (an import-linter contract in
pyproject.toml holds it so); this module is where they reach it.

Light by design: nothing heavy is imported at module top (``memoir --help`` stays fast,
``tests/test_light_imports.py``); each function imports what it reads when called.

``MemoryItem`` and ``Receipt`` name the public values of :mod:`memoir.model.results`
(``Memory``, ``MemoryReceipt``) for the adapters' typing.
"""

from __future__ import annotations

import functools
import threading
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from datetime import datetime

    from memoir.app import Memoir
    from memoir.config import Settings
    from memoir.ingest.observer import SyncObserver
    from memoir.ingest.rescan import RescanReport
    from memoir.ingest.verify import VerifyReport
    from memoir.jobs import Job, JobProgress
    from memoir.llm.ledger import UsageTotal
    from memoir.llm.offline.rank import SentenceScorer
    from memoir.llm.port import Model
    from memoir.memory.keyed import KeyedMemories
    from memoir.memory.memories import Memories, RecoveryReport
    from memoir.memory.sync_pass import MemoryPassProgress, MemoryPassReport
    from memoir.model import Exchange, Session
    from memoir.model.results import Memory as MemoryItem
    from memoir.model.results import MemoryReceipt as Receipt
    from memoir.search.backfill import BackfillResult
    from memoir.search.embedder import Embedder
    from memoir.store.parts.api import AppendResult
    from memoir.store.parts.users import UserInfo
    from memoir.summaries.port import SummaryStore
    from memoir.summaries.state import SummaryState
    from memoir.summaries.summary_pass import PassProgress, SummaryPassReport

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
    from memoir.store.query_text import words_of

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
    from memoir.search.session_ref import resolve_session

    return resolve_session(memoir.store.sessions, ref, user=memoir.user)


def _resolve(memoir: Memoir, ref: str) -> str:
    return session_id(memoir, ref)


def project(memoir: Memoir, ref: str) -> str:
    """The project of ``memoir``'s user's sessions ``ref`` names: its name, its folder or
    the folder's last part; an unknown one is ``NotFound``, not a silent "nothing"."""
    from memoir.ingest.detect import project_name
    from memoir.search.session_ref import resolve_project

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
    from memoir.wiring import memory_value

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
    from memoir.wiring import receipt_value

    return [receipt_value(r) for r in memoir.store.memory.receipts(session_id, owner=memoir.user)]


# model calls and embeddings --------------------------------------------------------------
def usage_report(memoir: Memoir, since: datetime | None = None) -> list[UsageTotal]:
    """``memoir``'s user's model calls and tokens, by day and model (since ``since``)."""
    from memoir.llm.ledger import usage_totals

    return usage_totals(memoir.store.usage.records(since=since, owner=memoir.user))


def embeddings_wait(memoir: Memoir, model: str, *, with_tokens: bool = False) -> bool:
    """Whether any exchange waits for a vector of ``model`` (or its token states, or a
    vector of an older recipe): what semantic ranking has nothing to rank for yet."""
    return bool(memoir.store.embeddings.backlog(model, 1, with_tokens=with_tokens))


def embedding_backlog(memoir: Memoir, model: str, *, with_tokens: bool = False) -> int:
    """How many exchanges still wait for a vector of ``model`` (or its token states)."""
    return memoir.store.embeddings.backlog_count(model, with_tokens=with_tokens)


# the home's parts, as the adapters wire them ----------------------------------------------
def model(memoir: Memoir) -> Model:
    """The configured model (``MEMOIR_LLM``), metered into the usage ledger and retried."""
    return memoir._model()


def fallback_model(memoir: Memoir) -> Model | None:
    """The refusal fallback (``MEMOIR_LLM_FALLBACK``), wrapped the same way, or None."""
    return memoir._fallback_model()


def memory_model(memoir: Memoir) -> Model:
    """The model memory extraction asks (the configured one)."""
    return memoir._memory_model()


def embedder(memoir: Memoir) -> Embedder | None:
    """The configured embedder (``MEMOIR_EMBEDDER``), or None when semantic search is off
    or its extra is not installed."""
    from memoir.wiring import embedder as configured

    return configured(memoir.settings)


def summary_scorer(memoir: Memoir) -> SentenceScorer | None:
    """How the offline summary ranks its sentences (None: lexically)."""
    from memoir.wiring import summary_scorer as scorer

    return scorer(memoir.settings)


def summary_store(memoir: Memoir) -> SummaryStore:
    """Where the home keeps summaries (``MEMOIR_SUMMARY_STORE``)."""
    return memoir._summary_store()


def sync_observer(memoir: Memoir) -> SyncObserver:
    """What a sync (or ``verify --repair``) tells as it rewrites or removes a
    conversation: the summaries' upkeep."""
    from memoir.wiring import sync_observer as observer

    return observer(memoir.settings, memoir.store)


def memory_engine(memoir: Memoir) -> Memories:
    """The memory engine of the home (one per Memoir: its lane thread is shared)."""
    return memoir._memory_engine()


def keyed_memories(memoir: Memoir, user: str | None = None) -> KeyedMemories:
    """The JSON values ``user`` (None: ``memoir``'s user) keeps under a namespace and a
    key (:mod:`memoir.memory.keyed`; what LangGraph's store adapter runs on)."""
    from memoir.memory.keyed import KeyedMemories

    return KeyedMemories(
        memoir.store.keyed_items, memoir._who(user), embedder=memoir._item_embedder
    )


# summaries and embeddings ------------------------------------------------------------------
def summary_body(memoir: Memoir, session_id: str) -> str | None:
    """The readable summary of a session (its header stripped), or None: what a search
    shows beside each hit. ``session_id``: a stored id, or ``memoir``'s user's name."""
    return memoir._summary_body(session_id)


def summary_updated_at(memoir: Memoir, session_id: str) -> datetime | None:
    """When the session's summary was last written (None: never)."""
    from memoir.summaries.persist import summary_updated_at as updated_at

    return updated_at(memoir._summary_store(), memoir.store.summaries, memoir._named(session_id))


def summarize_pending(
    memoir: Memoir,
    *,
    limit: int | None = None,
    progress: Callable[[PassProgress], None] | None = None,
) -> SummaryPassReport:
    """The summary pass ``memoir sync`` runs after indexing: (re)summarize idle
    conversations that need it, fresh ones first, at most ``limit`` (default
    ``MEMOIR_SUMMARY_LIMIT``) model-backed summaries; ``progress`` is told which one is
    being summarized, and how many of how many, before each one."""
    from memoir.config import whole_number
    from memoir.summaries.model_source import closing_source
    from memoir.summaries.summary_pass import PassSettings, run_summary_pass

    limit = memoir.settings.summary_limit if limit is None else limit
    whole_number("limit", limit, 0)
    scorer = functools.partial(summary_scorer, memoir)
    with closing_source(memoir._model, memoir._fallback_model, scorer) as models:
        return run_summary_pass(
            memoir.store,
            memoir._summary_store(),
            PassSettings.from_settings(memoir.settings),
            models,
            limit=limit,
            progress=progress,
        )


def embed_pending(
    memoir: Memoir, *, max_items: int | None = None, batch: int | None = None, progress: Any = None
) -> BackfillResult:
    """Embed the exchanges waiting for a vector (``memoir embed``; see
    :func:`memoir.wiring.embed_pending`)."""
    from memoir.wiring import embed_pending as embed

    return embed(memoir.settings, memoir.store, max_items=max_items, batch=batch, progress=progress)


def embed_written(memoir: Memoir, session_ids: Sequence[str]) -> int:
    """Embedding on write of the newest exchanges of ``session_ids``; never raises."""
    from memoir.wiring import embed_written as embed

    return embed(memoir.settings, memoir.store, session_ids)


# checks of the home -----------------------------------------------------------------------
def stats(memoir: Memoir) -> dict[str, int | str]:
    """What ``memoir stats`` shows: the counts of what the store holds (sessions, events,
    exchanges, …), ``archive_files`` / ``archive_bytes``, ``backend``, and the
    conversations by summary state (``summaries_summarized``, ``summaries_pending``, …)."""
    from memoir.wiring import stats as counts

    return counts(memoir.settings, memoir.store)


def verify(memoir: Memoir, *, repair: bool = False) -> VerifyReport:
    """Check the index against the archive (``memoir.ingest.verify``), and the summaries
    against the policy (their findings are warnings); then the secret re-scan of derived
    text: where it stands, or, with ``repair``, a bounded run of it."""
    from memoir.ingest.verify import Problem
    from memoir.ingest.verify import verify as check
    from memoir.summaries.persist import summary_findings
    from memoir.summaries.policy import SummaryPolicy

    report = check(memoir.settings, memoir.store, observer=sync_observer(memoir), repair=repair)
    findings = summary_findings(
        memoir._summary_store(), SummaryPolicy.from_settings(memoir.settings)
    )
    report.warnings.extend(Problem(f.kind, f.where, f.detail) for f in findings)
    report.secret_rescan = secret_rescan(memoir, run=repair).as_dict()
    return report


def secret_rescan(memoir: Memoir, *, run: bool) -> RescanReport:
    """With ``run``, :func:`rescan_secrets`; else where the re-scan stands (read only)."""
    from memoir.ingest.rescan import state_report

    return rescan_secrets(memoir) if run else state_report(memoir.store.rescan.states())


def rescan_secrets(memoir: Memoir, budget: int | None = None) -> RescanReport:
    """Re-scan derived text with this version's secret detector, a bounded share a run
    (after every sync, and by ``memoir verify --repair``)."""
    from memoir.wiring import rescan_secrets as rescan

    return rescan(memoir.settings, memoir.store, budget)


# memory upkeep: recovery, the sync pass, the switches ---------------------------------------
def extract(
    memoir: Memoir,
    session_id: str,
    *,
    anchor: str,
    turn: int | None = None,
    note: str | None = None,
) -> str:
    """Queue an extraction the agent judged worth it (``anchor``: its tool-call id);
    ``"accepted"`` at once, run in the background after the turn."""
    return memory_engine(memoir).extract(
        _resolve(memoir, session_id), anchor=anchor, turn=turn, note=note
    )


def memory_project(memoir: Memoir, ref: str, *, user: str | None = None) -> str:
    """The project ``ref`` names, as ``--project`` takes it, among ``user``'s sessions and
    memory items (None: ``memoir``'s user's); ``NotFound`` when it names none."""
    from memoir.wiring import memory_project as named

    return named(memoir.store, ref, memoir._who(user))


def recover_memories(memoir: Memoir) -> RecoveryReport:
    """Run memory work left unsettled (checkpoints past the cursor, queued operations,
    pending failures): what ``memoir sync`` does before it returns."""
    ensure_writable(memoir, "memory recovery")
    return memory_engine(memoir).recover()


def recover_memories_in_background(memoir: Memoir) -> threading.Thread | None:
    """Start memory recovery on a daemon thread (what ``memoir serve`` and ``memoir
    worker`` do at start-up); None on a read-only store."""
    from memoir.wiring import recover_in_background

    return recover_in_background(memoir.store, functools.partial(recover_memories, memoir))


def memory_from_sync(memoir: Memoir) -> tuple[bool, str]:
    """Whether ``memoir sync`` extracts memories from the sessions it syncs, and why."""
    from memoir.wiring import memory_from_sync as switch

    return switch(memoir.settings)


def set_memory_from_sync(memoir: Memoir, enabled: bool) -> tuple[bool, str]:
    """Switch memory from sync off (or on again) for the home, as ``memoir memories off``
    / ``on`` do; the switch now in effect, and why (an environment variable outranks what
    is stored)."""
    switch = memoir.settings.memory_sync_switch
    if enabled:
        switch.unlink(missing_ok=True)
    else:
        from memoir.private import private_file

        memoir.settings.ensure_home()
        with private_file(switch, "wb") as out:
            out.write(b"memory from sync is off: `memoir memories on` removes this file\n")
    return memory_from_sync(memoir)


def remember_from_sync(
    memoir: Memoir,
    *,
    limit: int | None = None,
    progress: Callable[[MemoryPassProgress], None] | None = None,
) -> MemoryPassReport:
    """The memory pass ``memoir sync`` runs after its summary pass (see
    :func:`memoir.wiring.remember_from_sync`)."""
    from memoir.wiring import remember_from_sync as run

    return run(memoir.settings, memoir.store, memoir._memory_engine, limit=limit, progress=progress)


def set_incognito(memoir: Memoir, session: str, incognito: bool = True) -> None:
    """Mark a session incognito (or not): nothing said in it while incognito is ever
    extracted into memory or sent to a memory model."""
    _set_flags(memoir, session, incognito=incognito)


def set_memory(
    memoir: Memoir, enabled: bool, *, session: str | None = None, project: str | None = None
) -> None:
    """Switch memory extraction off (or on again) for one session or one project. Ranges
    extracted while it was off stay denied for ever."""
    from memoir.errors import ConfigError

    if (session is None) == (project is None):
        raise ConfigError("give exactly one of session or project")
    if project is not None:
        name = memory_project(memoir, project)
        memoir.store.memory_items.switch_project(name, disabled=not enabled)
        return
    assert session is not None
    _set_flags(memoir, session, memory_disabled=not enabled)


def _set_flags(memoir: Memoir, session: str, **flags: bool) -> None:
    from dataclasses import replace

    sid = _resolve(memoir, session)
    found = memoir.store.sessions.get(sid)
    assert found is not None
    memoir.store.sessions.set_flags(sid, replace(found.flags, **flags))


# sessions owned by a user, and their summary jobs (the HTTP service) ------------------------
def user_session(memoir: Memoir, user: str, session_id: str) -> Session:
    """The session ``session_id`` names when ``user`` owns it — its id, or the name
    ``user`` gave it —; ``NotFound`` otherwise (another user's session is not told apart
    from one that does not exist). Use the returned session's ``id`` from here."""
    from memoir.errors import NotFound

    found = (
        memoir.store.sessions.get(session_id, user=user) if isinstance(session_id, str) else None
    )
    if found is None:
        raise NotFound(f"no session {session_id!r}")
    return found


def create_session(
    memoir: Memoir,
    user: str,
    *,
    session_id: str | None = None,
    project: str | None = None,
    incognito: bool = False,
    memory_disabled: bool = False,
) -> tuple[Session, bool]:
    """A session fed over the API, owned by ``user``: (the session, whether it is new);
    see :func:`memoir.wiring.create_session`."""
    from memoir.wiring import create_session as create

    return create(
        memoir.store,
        user,
        session_id=session_id,
        project=project,
        incognito=incognito,
        memory_disabled=memory_disabled,
    )


def append_messages(
    memoir: Memoir, user: str, session_id: str, messages: Sequence[Mapping[str, Any]]
) -> tuple[int, int]:
    """Append OpenAI-style messages to a session of ``user``: (added, skipped)."""
    result = append_user_messages(memoir, user, session_id, messages)
    return result.added, result.skipped


def append_user_messages(
    memoir: Memoir, user: str, session_id: str, messages: Sequence[Mapping[str, Any]]
) -> AppendResult:
    """:func:`append_messages` with the whole result: ``added``, ``skipped`` and the
    session's ``last_ordinal`` as this append left it (what the HTTP API answers)."""
    from memoir.wiring import append_messages as append

    return append(memoir.settings, memoir.store, user, session_id, messages)


def archive_session(memoir: Memoir, user: str, session_id: str) -> Session:
    """Mark a session of ``user`` archived (kept and searchable, never extracted)."""
    from dataclasses import replace

    found = user_session(memoir, user, session_id)
    flags = replace(found.flags, archived=True)
    memoir.store.sessions.set_flags(found.id, flags)
    return replace(found, flags=flags)


def regenerate_summary(memoir: Memoir, user: str, session_id: str) -> Job:
    """Queue a full regeneration of the summary of ``user``'s session (job kind
    ``summary``), or return the one already queued or running. ``NotFound`` for a session
    ``user`` does not own; ``OversizedHistory`` beyond ``MEMOIR_EPISODE_MAX_FULL_TOKENS``
    or past the 24 episodes a full run takes at most; ``AdmissionUnavailable`` while the
    configured Redis cannot be reached."""
    from memoir.jobs import Job
    from memoir.summaries.session import EpisodeSettings, check_full_regeneration

    session_id = user_session(memoir, user, session_id).id
    ensure_writable(memoir, "regenerating a summary")
    active = memoir.store.jobs.active(user, session_id, "summary")
    if active is not None:  # a duplicate: not measured again
        return Job.from_row(active)
    check_full_regeneration(
        memoir.store, session_id, EpisodeSettings.from_settings(memoir.settings)
    )
    return memoir.jobs().request("summary", user, session_id)


def summary_job(memoir: Memoir, user: str, session_id: str) -> Job | None:
    """The newest summary job of ``user``'s session (whatever its state), or None (None
    too for a session ``user`` does not have)."""
    found = memoir.store.sessions.get(session_id, user=user)
    return None if found is None else memoir.jobs().latest(user, found.id, "summary")


def run_summary_job(
    memoir: Memoir, job: Job, progress: JobProgress, abort: threading.Event
) -> None:
    """The handler of job kind ``summary`` (:func:`memoir.wiring.run_summary_job`)."""
    from memoir.wiring import run_summary_job as run

    run(memoir.settings, memoir.store, memoir._model, memoir._fallback_model, job, progress)


def run_worker(memoir: Memoir, stop: threading.Event, *, worker_id: str | None = None) -> None:
    """Run a job worker until ``stop`` is set (``memoir worker``, ``memoir serve
    --workers``): resumes abandoned jobs first, then takes queued ones; a job running when
    ``stop`` is set is told to stop and released to the queue unless it finishes."""
    from memoir.jobs import Worker

    handler = functools.partial(run_summary_job, memoir)
    Worker(memoir.jobs(), {"summary": handler}, worker_id=worker_id).run(stop)


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
