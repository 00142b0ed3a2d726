"""The home's upkeep, for the adapters: its parts (models, embedder, summary store, memory
engine), the sync-time passes (summaries, embeddings, memory; each also as the report a
sync prints, its error in it), the checks (stats, verify, the secret re-scan), and the
switch of memory from sync. Each function takes the open ``Memoir``;
:mod:`memoir.service` re-exports them. Nothing heavy is imported at module top.
"""

from __future__ import annotations

import functools
import logging
import threading
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from datetime import datetime

    from memoir.app import Memoir
    from memoir.ingest.archive import RescanReport
    from memoir.ingest.batches import SyncObserver
    from memoir.ingest.verify import VerifyReport
    from memoir.llm.port import Model
    from memoir.llm.transcript import SentenceScorer
    from memoir.memory import MemoryPassProgress, MemoryPassReport
    from memoir.memory.keyed import KeyedMemories
    from memoir.memory.memories import Memories, RecoveryReport
    from memoir.search import BackfillResult
    from memoir.search.embedders import Embedder
    from memoir.summaries.port import SummaryStore
    from memoir.summaries.summary_pass import PassProgress, SummaryPassReport

__all__ = [
    "embed_after_sync",
    "embed_pending",
    "embed_written",
    "embedder",
    "extract",
    "fallback_model",
    "keyed_memories",
    "memory_engine",
    "memory_from_sync",
    "memory_model",
    "memory_project",
    "model",
    "recover_after_sync",
    "recover_memories",
    "recover_memories_in_background",
    "remember_after_sync",
    "remember_from_sync",
    "rescan_secrets",
    "secret_rescan",
    "set_memory_from_sync",
    "stats",
    "summarize_after_sync",
    "summarize_pending",
    "summary_body",
    "summary_scorer",
    "summary_store",
    "summary_updated_at",
    "sync_observer",
    "verify",
]


def _writable(memoir: Memoir, command: str) -> None:
    from memoir.store import ensure_writable

    ensure_writable(memoir.store, command)


def _session(memoir: Memoir, ref: str) -> str:
    return memoir.store.sessions.resolve(ref, user=memoir.user)


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
    """How the offline summary ranks its sentences: the centrality of the embedder's
    vectors when ``MEMOIR_SUMMARY_SENTENCES=embedder`` and an embedder is configured and
    installed; None (lexical) otherwise."""
    from memoir.llm.transcript import embedding_scorer

    if memoir.settings.summary_sentences != "embedder":
        return None
    made = embedder(memoir)
    return None if made is None else embedding_scorer(made.embed)


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
    from memoir.memory.item_store import memory_parts
    from memoir.memory.keyed import KeyedMemories

    return KeyedMemories(
        memory_parts(memoir.store).keyed, memoir._who(user), embedder=memoir._item_embedder
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
    from memoir.summaries.session import closing_source
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
    """Embed the exchanges that have no vector (or no token states) yet, then those whose
    vector is from an older recipe, at most ``max_items`` (``memoir embed``); takes the
    single-instance embed lock (``Busy`` when another process embeds), then writes the
    matrix files the next search maps. ``ConfigError`` when no embedder is configured or
    installed."""
    from memoir.config import whole_number
    from memoir.errors import ConfigError, install_hint
    from memoir.home_files import tighten_home
    from memoir.ingest.archive import embed_lock
    from memoir.search import DEFAULT_BATCH, embed_backlog
    from memoir.search.embedders import EmbeddingsUnavailable
    from memoir.search.vectors import prepare_files
    from memoir.wiring import writing_embedder

    if batch is not None:
        whole_number("batch", batch, 1)
    if max_items is not None:
        whole_number("max_items", max_items, 0)
    settings, store = memoir.settings, memoir.store
    _writable(memoir, "memoir embed")  # before the model runs on a batch
    tighten_home(settings.home)  # a home an older Memoir left open to others
    made = writing_embedder(settings, store)
    if made is None:
        if settings.embedder == "none":
            raise ConfigError("MEMOIR_EMBEDDER=none: semantic search is switched off")
        raise EmbeddingsUnavailable(
            f"semantic search needs the embeddings extra: {install_hint('embeddings')}"
        )
    busy = "another memoir embed is running"
    # the home's lock, and the store's: homes sharing a database embed its backlog once
    with embed_lock(settings.home), store.claims.hold("embed", busy):
        result = embed_backlog(
            store, made, batch=batch or DEFAULT_BATCH, max_items=max_items, progress=progress
        )
        # the next search maps the matrix from a file (vectors embedded on write since it
        # was written included; nothing is written while a patch will do)
        prepare_files(store, made.name)
    return result


def embed_written(memoir: Memoir, session_ids: Sequence[str]) -> int:
    """Embedding on write of the newest exchanges of ``session_ids``; never raises."""
    from memoir.wiring import embed_written as embed

    return embed(memoir.settings, memoir.store, session_ids)


# checks of the home -----------------------------------------------------------------------
def stats(memoir: Memoir) -> dict[str, int | str]:
    """What ``memoir stats`` shows: the counts of what the store holds (sessions, events,
    exchanges, …), ``archive_files`` / ``archive_bytes``, ``backend``, and the
    conversations by summary state (``summaries_summarized``, ``summaries_pending``, …)."""
    from memoir.summaries.persist import summary_counts
    from memoir.summaries.state import SummaryPolicy

    settings, store = memoir.settings, memoir.store
    data: dict[str, int | str] = dict(store.stats())
    files = size = 0
    if settings.archive_dir.is_dir():
        for path in settings.archive_dir.glob("*/*.jsonl"):
            files += 1
            size += path.stat().st_size
    data["archive_files"], data["archive_bytes"] = files, size
    data["backend"] = store.backend
    policy = SummaryPolicy.from_settings(settings)
    for key, count in summary_counts(memoir._summary_store(), policy).items():
        data[f"summaries_{key}"] = count
    return data


def verify(memoir: Memoir, *, repair: bool = False) -> VerifyReport:
    """Check the index against the archive (``memoir.ingest.verify``), and the summaries
    against the policy (their findings are warnings); then the secret re-scan of derived
    text: where it stands, or, with ``repair``, a bounded run of it."""
    from memoir.ingest.verify import Problem
    from memoir.ingest.verify import verify as check
    from memoir.summaries.persist import summary_findings
    from memoir.summaries.state import SummaryPolicy

    report = check(memoir.settings, memoir.store, observer=sync_observer(memoir), repair=repair)
    findings = summary_findings(
        memoir._summary_store(), SummaryPolicy.from_settings(memoir.settings)
    )
    report.warnings.extend(Problem(f.kind, f.where, f.detail) for f in findings)
    report.secret_rescan = secret_rescan(memoir, run=repair).as_dict()
    return report


def secret_rescan(memoir: Memoir, *, run: bool) -> RescanReport:
    """With ``run``, :func:`rescan_secrets`; else where the re-scan stands (read only)."""
    from memoir.ingest.archive import state_report

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
        _session(memoir, session_id), anchor=anchor, turn=turn, note=note
    )


def memory_project(memoir: Memoir, ref: str, *, user: str | None = None) -> str:
    """The project ``ref`` names, as ``--project`` takes it, among ``user``'s sessions and
    memory items (None: ``memoir``'s user's); ``NotFound`` when it names none."""
    from memoir.wiring import memory_project as named

    return named(memoir.store, ref, memoir._who(user))


def recover_memories(memoir: Memoir) -> RecoveryReport:
    """Run memory work left unsettled (checkpoints past the cursor, queued operations,
    pending failures): what ``memoir sync`` does before it returns."""
    _writable(memoir, "memory recovery")
    return memory_engine(memoir).recover()


def recover_memories_in_background(memoir: Memoir) -> threading.Thread | None:
    """Start memory recovery on a daemon thread (what ``memoir serve`` and ``memoir
    worker`` do at start-up); None on a read-only store."""
    if memoir.store.read_only:
        return None

    def recover() -> None:
        try:
            recover_memories(memoir)
        except Exception:  # a process's start-up never fails by its memory backlog
            logging.getLogger("memoir.app").exception("memory recovery at start-up failed")

    thread = threading.Thread(target=recover, name="memoir-memory-recovery", daemon=True)
    thread.start()
    return thread


def memory_from_sync(memoir: Memoir) -> tuple[bool, str]:
    """Whether ``memoir sync`` extracts memories from the sessions it syncs, and why:
    ``MEMOIR_MEMORY_FROM_SYNC`` (or the argument) when set, else off while ``memoir
    memories off`` has it stored in the home, else on."""
    settings = memoir.settings
    origin = settings.origins.get("memory_from_sync", "default")
    if origin.startswith(("env", "argument")):
        return settings.memory_from_sync, origin
    if settings.memory_sync_switch.exists():
        return False, "stored by `memoir memories off`"
    return True, "default"


def set_memory_from_sync(memoir: Memoir, enabled: bool) -> tuple[bool, str]:
    """Switch memory from sync off (or on again) for the home, as ``memoir memories off``
    / ``on`` do; the switch now in effect, and why (an environment variable outranks what
    is stored)."""
    switch = memoir.settings.memory_sync_switch
    if enabled:
        switch.unlink(missing_ok=True)
    else:
        from memoir.home_files import private_file

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
    """The memory pass ``memoir sync`` runs after its summary pass: the new ranges of
    synced sessions gone quiet (the summaries' quiescence rule), newest first, at most
    ``limit`` (default ``MEMOIR_MEMORY_LIMIT``) through their lanes; denied ones settle as
    denials (``memoir.memory``). Off (nothing read): the report's ``off`` says
    why."""
    import time

    from memoir.config import whole_number
    from memoir.ingest.plan import excluded
    from memoir.memory import MemoryPassReport, run_memory_pass
    from memoir.memory.item_store import memory_parts
    from memoir.summaries.state import SummaryPolicy, is_quiescent

    settings = memoir.settings
    limit = settings.memory_limit if limit is None else limit
    whole_number("limit", limit, 0)
    on, why = memory_from_sync(memoir)
    if not on:
        return MemoryPassReport(off=why)
    _writable(memoir, "memory from sync")
    policy, now = SummaryPolicy.from_settings(settings), int(time.time() * 1000)
    patterns = settings.exclude_projects
    return run_memory_pass(
        memory_parts(memoir.store),
        memoir._memory_engine,
        limit=limit,
        quiet=lambda at: is_quiescent(at, policy, now),
        excluded=lambda project: excluded(project, patterns),
        progress=progress,
    )


# the passes a sync runs once its lock is let go: reports, never errors ---------------------


def summarize_after_sync(
    memoir: Memoir, limit: int, progress: Callable[[PassProgress], None] | None = None
) -> dict[str, Any]:
    """:func:`summarize_pending`'s report as a dict. An error — a store failure, or (in a
    detached sync, which checks nothing up front: nobody is there to read a start-up
    error, and agents delete their transcripts) a model that cannot be used — is in it,
    never raised: the archive and index written before it stay."""
    from memoir.errors import MemoirError

    try:
        report = summarize_pending(memoir, limit=limit, progress=progress)
    except MemoirError as exc:
        return _failed(exc)
    out = dict(report.as_dict())
    if report.stopped:  # the model cannot be used now: said once, no conversation charged
        out["error"] = f"the summary pass stopped: {report.stopped}"
        out["setting"] = report.stopped_by_setting
    return out


def remember_after_sync(
    memoir: Memoir, limit: int, progress: Callable[[MemoryPassProgress], None] | None = None
) -> dict[str, Any] | None:
    """:func:`remember_from_sync`'s report as a dict, or None on a read-only store. An
    error — a store failure, a model that cannot be built or used — is in it, never
    raised: the sync is done."""
    from memoir.errors import MemoirError

    if memoir.store.read_only:
        return None
    try:
        report = remember_from_sync(memoir, limit=limit, progress=progress)
    except MemoirError as exc:
        return _failed(exc)
    out = dict(report.as_dict())
    if report.stopped:
        out["error"] = f"the memory pass stopped: {report.stopped}"
        out["setting"] = True
    return out


def recover_after_sync(memoir: Memoir) -> dict[str, Any] | None:
    """:func:`recover_memories`' report as a dict, or None on a read-only store; an error
    is in it, never raised."""
    from dataclasses import asdict

    from memoir.errors import MemoirError

    if memoir.store.read_only:
        return None
    try:
        return dict(asdict(recover_memories(memoir)))
    except MemoirError as exc:
        return {"error": str(exc)}


def embed_after_sync(memoir: Memoir) -> dict[str, Any] | None:
    """:func:`embed_pending`'s catch-up as a dict, or None when no embedder is configured
    or installed; ``busy`` when another process embeds. An error is in it, never raised:
    the sync is done."""
    from memoir.errors import Busy, MemoirError

    try:
        if embedder(memoir) is None:
            return None
        result = embed_pending(memoir)
    except Busy:
        return {"busy": True, "embedded": 0}
    except MemoirError as exc:  # a bad MEMOIR_EMBEDDER: the command exits 2, as for summaries
        return _failed(exc)
    return {"model": result.model, "embedded": result.embedded, "complete": result.complete}


def _failed(exc: Exception) -> dict[str, Any]:
    """A pass's error as its report: ``setting`` when a setting is at fault."""
    from memoir.errors import ConfigError

    if isinstance(exc, ConfigError):
        return {"error": str(exc), "setting": True}
    return {"error": str(exc)}
