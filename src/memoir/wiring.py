"""How a home's parts are made and joined: the private wiring beneath :class:`memoir.Memoir`.

``Memoir`` (the front door) and :mod:`memoir.service` (what the adapters need beyond it)
both build on these functions. Each names what it needs — the settings, the store, a
model factory — and none takes the ``Memoir``, so the wiring sits below the front door
as the engines do. Nothing heavy is imported at module top.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from memoir.config import Settings, whole_number
from memoir.distribution import install_hint
from memoir.errors import ConfigError, NotFound
from memoir.private import tighten_home

if TYPE_CHECKING:
    from memoir.ingest.observer import SyncObserver
    from memoir.ingest.rescan import RescanReport
    from memoir.jobs import Job, JobProgress, JobService
    from memoir.llm.offline.rank import SentenceScorer
    from memoir.llm.port import Model
    from memoir.memory.memories import Memories, RecoveryReport
    from memoir.memory.recall import ItemEmbedder, Recalled
    from memoir.memory.runner import MemoryParts
    from memoir.memory.sync_pass import MemoryPassProgress, MemoryPassReport
    from memoir.memory.tasks import Outcome
    from memoir.model import Session
    from memoir.model.results import Appended, Memory, MemoryReceipt, RecallHit, Remembered
    from memoir.search.backfill import BackfillResult
    from memoir.search.embedder import Embedder
    from memoir.store import Store
    from memoir.store.memory_rows import MemoryItemRow, ReceiptRow
    from memoir.store.parts.api import AppendResult
    from memoir.store.parts.memory_items import ItemFilter
    from memoir.summaries.port import SummaryStore

__all__ = [
    "append_messages",
    "check_user",
    "create_session",
    "embed_pending",
    "embed_written",
    "embedder",
    "fallback_model",
    "instant",
    "item_embedder",
    "item_filter",
    "job_service",
    "memory_engine",
    "memory_from_sync",
    "memory_parts",
    "memory_project",
    "model",
    "recover_in_background",
    "remember_from_sync",
    "rescan_secrets",
    "run_summary_job",
    "stats",
    "summary_body",
    "summary_scorer",
    "summary_store",
    "sync_observer",
    "writing_embedder",
]

_log = logging.getLogger("memoir.app")


# plain checks ---------------------------------------------------------------------------
def check_user(name: object) -> str:
    """``name`` when it is a user's name (text, not blank); ``ConfigError`` otherwise."""
    if not isinstance(name, str) or not name.strip() or name != name.strip():
        raise ConfigError(
            f"a user is named by non-blank text without spaces at its ends, not {name!r}"
        )
    return name


def instant(value: datetime | str, option: str, *, end: bool = False) -> datetime:
    """A datetime as given, or text read as the CLI reads ``--after`` / ``--before``."""
    if isinstance(value, datetime):
        return value
    from memoir.search.dates import parse_when

    return parse_when(value, end_of_day=end, option=option)


# models and embedders -------------------------------------------------------------------
def model(settings: Settings, store: Store) -> Model:
    """The configured model (``MEMOIR_LLM``), every call metered into the store's usage
    ledger and retried (RateLimited / Transient) within ``llm_retry_budget`` attempts."""
    from memoir.llm.wiring import wrapped_model

    return wrapped_model(settings, store.usage)


def fallback_model(settings: Settings, store: Store) -> Model | None:
    """The refusal fallback (``MEMOIR_LLM_FALLBACK``), wrapped the same way, or None."""
    from memoir.llm.wiring import wrapped_fallback

    return wrapped_fallback(settings, store.usage)


def embedder(settings: Settings) -> Embedder | None:
    """The configured embedder (``MEMOIR_EMBEDDER``), or None when semantic search is
    off (``none``) or its extra is not installed (``auto``)."""
    from memoir.search.embedder import load_embedder

    return load_embedder(settings.embedder)


def writing_embedder(settings: Settings, store: Store) -> Embedder | None:
    """The configured embedder, for a call that stores what it makes: the test fake
    (``MEMOIR_EMBEDDER=hash``) is refused in a home holding real vectors."""
    made = embedder(settings)
    if settings.embedder == "hash" and not store.read_only:
        from memoir.search.embedder import check_fake_embedder

        stored = [*store.embeddings.models(), *store.memory_items.vector_models()]
        check_fake_embedder(settings.embedder, stored)
    return made


def item_embedder(settings: Settings, store: Store) -> ItemEmbedder | None:
    """The embedder recall ranks with (and stores item vectors of), when semantic search
    is configured and installed."""
    return None if settings.embedder == "none" else writing_embedder(settings, store)


def summary_scorer(settings: Settings) -> SentenceScorer | None:
    """How the offline summary ranks its sentences: the centrality of the embedder's
    vectors when ``MEMOIR_SUMMARY_SENTENCES=embedder`` and an embedder is configured
    and installed; None (lexical) otherwise."""
    from memoir.llm.offline.rank import embedding_scorer

    if settings.summary_sentences != "embedder":
        return None
    made = embedder(settings)
    return None if made is None else embedding_scorer(made.embed)


def embed_written(settings: Settings, store: Store, session_ids: Sequence[str]) -> int:
    """Embedding on write: embed the newest exchanges of ``session_ids`` that have no
    vector yet (at most ``memoir.search.backfill.WRITE_MAX``), so a search by meaning
    finds them the moment the write returns; how many were embedded. Nothing when
    ``MEMOIR_EMBED_ON_WRITE`` is off, no embedder is configured or installed, or the
    store is read-only. A failure is logged, never raised: the write is done, and
    ``memoir embed`` picks up what is left."""
    if not settings.embed_on_write or not session_ids or store.read_only:
        return 0
    from memoir.search.backfill import embed_written as embed

    try:
        made = writing_embedder(settings, store)
        if made is None:
            return 0
        return embed(store, made, session_ids)
    except Exception:  # any embedder or store failure: the write it follows stands
        _log.warning("embedding on write failed", exc_info=True)
        return 0


def embed_pending(
    settings: Settings,
    store: Store,
    *,
    max_items: int | None = None,
    batch: int | None = None,
    progress: Any = None,
) -> BackfillResult:
    """Embed the exchanges that have no vector (or no token states) yet, then those
    whose vector is from an older recipe, at most ``max_items``; takes the
    single-instance embed lock (``Busy`` when another process embeds), then writes the
    matrix files the next search maps. Raises ``ConfigError`` when no embedder is
    configured or installed."""
    from memoir.ingest.lock import embed_lock
    from memoir.search.backfill import DEFAULT_BATCH, embed_backlog
    from memoir.search.embedder import EmbeddingsUnavailable
    from memoir.search.vectors import prepare_files
    from memoir.store import ensure_writable

    if batch is not None:
        whole_number("batch", batch, 1)
    if max_items is not None:
        whole_number("max_items", max_items, 0)
    ensure_writable(store, "memoir embed")  # before the model runs on a batch
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


# summaries ------------------------------------------------------------------------------
def summary_store(settings: Settings, store: Store) -> SummaryStore:
    """Where this home keeps summaries (``MEMOIR_SUMMARY_STORE``): archive files beside
    the transcripts, or the store's summary rows."""
    from memoir.summaries.stores import open_summary_store

    return open_summary_store(settings, store)


def sync_observer(settings: Settings, store: Store) -> SyncObserver:
    """What a sync (or ``verify --repair``) tells as it rewrites or removes a
    conversation: the summaries' upkeep (marked stale, forgotten)."""
    from memoir.summaries.persist import SummaryUpkeep

    return SummaryUpkeep(settings.archive_dir, summary_store(settings, store), store)


def summary_body(settings: Settings, store: Store, session_id: str) -> str | None:
    """The readable summary of the stored session ``session_id`` (its header stripped),
    or None when it has none."""
    from memoir.summaries.persist import read_summary_body

    return read_summary_body(summary_store(settings, store), store, session_id)


def rescan_secrets(settings: Settings, store: Store, budget: int | None = None) -> RescanReport:
    """Re-scan derived text with this version's secret detector, a bounded share a run
    (``memoir.ingest.rescan``): after every sync, and by ``memoir verify --repair``. One
    process at a time (another's run is left to finish), and none on a read-only store."""
    from memoir.errors import Busy
    from memoir.ingest.rescan import BUDGET, RescanReport, rescan, state_report
    from memoir.secret_rules import detector_id

    if store.read_only:
        return RescanReport(detector_id(), skipped="the store is read-only")
    standing = state_report(store.rescan.states())
    if standing.finished:  # the common case: one query, no detector loaded
        return standing
    try:
        with store.claims.hold("secret-rescan", "a secret re-scan is running"):
            return rescan(store.rescan, summary_store(settings, store), budget=budget or BUDGET)
    except Busy as exc:
        return RescanReport(detector_id(), skipped=str(exc))


def stats(settings: Settings, store: Store) -> dict[str, int | str]:
    """What ``memoir stats`` shows: the counts of what the store holds, ``archive_files``
    / ``archive_bytes``, ``backend``, and the conversations by summary state."""
    from memoir.summaries.persist import summary_counts
    from memoir.summaries.policy import SummaryPolicy

    data: dict[str, int | str] = dict(store.stats())
    files = size = 0
    if settings.archive_dir.is_dir():
        for path in settings.archive_dir.glob("*/*.jsonl"):
            files += 1
            size += path.stat().st_size
    data["archive_files"], data["archive_bytes"] = files, size
    data["backend"] = store.backend
    policy = SummaryPolicy.from_settings(settings)
    for key, count in summary_counts(summary_store(settings, store), policy).items():
        data[f"summaries_{key}"] = count
    return data


def run_summary_job(
    settings: Settings,
    store: Store,
    models: Callable[[], Model],
    fallback: Callable[[], Model | None],
    job: Job,
    progress: JobProgress,
) -> None:
    """The handler of job kind ``summary``: the episodic summarizer's full run over the
    stored session (episodes cached, so a resumed job reuses what was done), its progress
    reported through the job, saved only while the job's claim holds. The session's
    summary claim is held for the save only: the job's claim in the store keeps two
    workers apart, and a worker stuck past its claim must not keep its replacement from
    saving."""
    from memoir.errors import SummaryError
    from memoir.store.claims import summary_claim
    from memoir.summaries.fenced import FencedSummaryStore, events_digest
    from memoir.summaries.model_source import closing_source
    from memoir.summaries.session import EpisodeSettings, summarize_session

    read = store.events.of(job.session_id)
    upto = read[-1].ordinal if read else 0
    taken = events_digest(read)

    def check() -> None:  # the claim still ours, and the events read still as they were
        progress.check()
        if events_digest(store.events.of(job.session_id, upto=upto)) != taken:
            raise SummaryError(
                "the conversation's events were edited or deleted while it was being "
                "summarized; regenerate again"
            )

    with closing_source(models, fallback) as source:
        summarize_session(
            store,
            FencedSummaryStore(
                summary_store(settings, store),
                check,
                lambda: store.claims.hold(*summary_claim(job.session_id)),
            ),
            job.session_id,
            models=source,
            episodes=EpisodeSettings.from_settings(settings),
            mode="full",
            progress=progress,
            job_id=job.id,
            claim=False,
        )


def job_service(settings: Settings, store: Store) -> JobService:
    """A job service over this store: admission in Redis when ``MEMOIR_REDIS_URL`` is set,
    else a bounded in-process LRU; the intervals ``MEMOIR_JOB_*_S``."""
    from memoir.jobs import JobService, JobTiming, LocalAdmission, RedisAdmission
    from memoir.jobs.admission import Admission

    admission: Admission = (
        RedisAdmission(settings.redis_url) if settings.redis_url else LocalAdmission()
    )
    return JobService(store.jobs, admission, JobTiming.from_settings(settings))


# long-term memory -----------------------------------------------------------------------
def memory_parts(store: Store) -> MemoryParts:
    from memoir.memory.runner import MemoryParts

    return MemoryParts(
        store.sessions, store.events, store.checkpoints, store.memory, store.memory_items
    )


def memory_engine(settings: Settings, store: Store, memory_model: Callable[[], Model]) -> Memories:
    """The memory engine of a home: its lanes, its runner with ``memory_model()``."""
    from memoir.llm.tokens import counter_for, encoding_for_model
    from memoir.memory.memories import Memories
    from memoir.memory.runner import Runner

    made = memory_model()
    parts = memory_parts(store)
    counter = counter_for(encoding_for_model(made.name))
    runner = Runner(parts, made, counter, embedder=lambda: item_embedder(settings, store))
    return Memories(parts, store.claims, runner)


def memory_project(store: Store, ref: str, owner: str) -> str:
    """The project ``ref`` names, as ``--project`` takes it: its name, its folder or the
    folder's last part, or the exact project name of a memory item of ``owner``'s (one
    imported from another home). ``NotFound`` when it names none."""
    from memoir.ingest.detect import project_name
    from memoir.search.session_ref import resolve_project
    from memoir.store.parts.memory_items import ItemFilter

    try:
        return resolve_project(store.sessions, ref, safe=project_name, user=owner)
    except NotFound:
        mine = ItemFilter(owner=owner, project=ref, history=True)
        if store.memory_items.ids(mine, limit=1):
            return ref
        raise


def item_filter(
    scope: str | None,
    project: str | None,
    kinds: Sequence[str],
    as_of: datetime | None,
    history: bool,
    user: str | None,
) -> ItemFilter:
    from memoir.memory.values import ItemKind, Scope
    from memoir.store.parts.memory_items import ItemFilter

    if scope is not None and scope not in {s.value for s in Scope}:
        raise ConfigError(f"scope must be global or project, not {scope!r}")
    known = {k.value for k in ItemKind}
    bad = [k for k in kinds if k not in known]
    if bad:
        raise ConfigError(f"unknown kind {bad[0]!r}; kinds: {', '.join(sorted(known))}")
    if as_of is not None and as_of.tzinfo is None:
        as_of = as_of.replace(tzinfo=UTC)
    return ItemFilter(
        owner=user,
        projects=(project,) if project is not None and scope != "project" else None,
        project=project if scope == "project" else None,
        scope=scope,
        kinds=tuple(kinds),
        as_of=as_of,
        history=history,
    )


def memory_from_sync(settings: Settings) -> tuple[bool, str]:
    """Whether ``memoir sync`` extracts memories from the sessions it syncs, and why:
    ``MEMOIR_MEMORY_FROM_SYNC`` (or the argument) when set, else off while ``memoir
    memories off`` has it stored in the home, else on."""
    origin = settings.origins.get("memory_from_sync", "default")
    if origin.startswith(("env", "argument")):
        return settings.memory_from_sync, origin
    if settings.memory_sync_switch.exists():
        return False, "stored by `memoir memories off`"
    return True, "default"


def remember_from_sync(
    settings: Settings,
    store: Store,
    engine: Callable[[], Memories],
    *,
    limit: int | None = None,
    progress: Callable[[MemoryPassProgress], None] | None = None,
) -> MemoryPassReport:
    """The memory pass ``memoir sync`` runs after its summary pass: the new ranges of
    synced sessions gone quiet (the summaries' quiescence rule), newest first, at most
    ``limit`` (default ``MEMOIR_MEMORY_LIMIT``) through their lanes; denied ones settle
    as denials (``memoir.memory.sync_pass``). Off (nothing read): the report's ``off``
    says why."""
    from memoir.ingest.plan import excluded
    from memoir.memory.sync_pass import MemoryPassReport, run_memory_pass
    from memoir.store import ensure_writable
    from memoir.summaries.policy import SummaryPolicy, is_quiescent

    limit = settings.memory_limit if limit is None else limit
    whole_number("limit", limit, 0)
    on, why = memory_from_sync(settings)
    if not on:
        return MemoryPassReport(off=why)
    ensure_writable(store, "memory from sync")
    policy, now = SummaryPolicy.from_settings(settings), int(time.time() * 1000)
    patterns = settings.exclude_projects
    return run_memory_pass(
        memory_parts(store),
        engine,
        limit=limit,
        quiet=lambda at: is_quiescent(at, policy, now),
        excluded=lambda project: excluded(project, patterns),
        progress=progress,
    )


def recover_in_background(
    store: Store, recover: Callable[[], RecoveryReport]
) -> threading.Thread | None:
    """Run ``recover`` on a daemon thread (what a long-lived process does at start-up);
    None on a read-only store."""
    if store.read_only:
        return None

    def run() -> None:
        try:
            recover()
        except Exception:  # a process's start-up never fails by its memory backlog
            _log.exception("memory recovery at start-up failed")

    thread = threading.Thread(target=run, name="memoir-memory-recovery", daemon=True)
    thread.start()
    return thread


# sessions fed from code -----------------------------------------------------------------
def create_session(
    store: Store,
    user: str,
    *,
    session_id: str | None = None,
    project: str | None = None,
    incognito: bool = False,
    memory_disabled: bool = False,
) -> tuple[Session, bool]:
    """A session fed over the API, owned by ``user``: (the session, whether it is new).
    ``session_id`` is a name of ``user``'s: the session is stored under
    :func:`~memoir.model.session.named_session_id` of the user and the name, with the
    name, so every user has names of their own (two users' ``chat-1`` are two sessions).
    A name (or an id) ``user`` has already returns that session as it is. Without one,
    Memoir chooses the id (32 hex digits) and the session has no name."""
    import uuid

    from memoir.model import Harness, Session, SessionFlags
    from memoir.model.session import named_session_id
    from memoir.store import ensure_writable

    ensure_writable(store, "creating a session")
    if session_id is not None:
        found = store.sessions.get(session_id, user=user)
        if found is not None:
            return found, False
    now = datetime.now(UTC)
    wanted = Session(
        id=named_session_id(user, session_id) if session_id else uuid.uuid4().hex,
        project=project or "api",
        harness=Harness.API,
        user=user,
        flags=SessionFlags(incognito=incognito, memory_disabled=memory_disabled),
        created_at=now,
        updated_at=now,
        name=session_id or None,
    )
    stored, created = store.api.create(wanted)
    if stored.user != user:  # a digest collision: no name a client chooses reaches it
        raise ConfigError(f"session {session_id!r} cannot be created; choose another name")
    return stored, created


def append_messages(
    settings: Settings,
    store: Store,
    user: str,
    session_id: str,
    messages: Sequence[Mapping[str, Any]],
) -> AppendResult:
    """Append chat messages to ``user``'s session ``session_id`` (its id or its name):
    ``added``, ``skipped`` and the session's ``last_ordinal`` as this append left it. A
    message whose id is stored already is skipped; concurrent appends to one session take
    turns in the store; what was added is embedded on write."""
    from memoir.ingest.api_messages import api_messages
    from memoir.model import Harness
    from memoir.store import ensure_writable
    from memoir.store.values import ApiMessage

    ensure_writable(store, "appending events")
    if not isinstance(session_id, str):
        raise NotFound(f"no session {session_id!r}")
    made: Sequence[ApiMessage] = []
    malformed: Exception | None = None
    try:  # a malformed message is told after the session's errors, as it always was
        made = api_messages(session_id, messages)
    except Exception as exc:  # raised again by check()
        malformed = exc
    stored: list[str] = []  # the id of the session the name found

    def check(found: Session) -> None:  # on the row the append locks: no read of its own
        if found.harness is not Harness.API:
            raise ConfigError(
                f"session {session_id!r} is read from a {found.harness.value} transcript; "
                "messages are appended only to sessions fed from code or the HTTP API"
            )
        if malformed is not None:
            raise malformed
        stored.append(found.id)

    result = store.api.append(session_id, made, user=user, check=check)
    if result.added:
        embed_written(settings, store, stored)
    return result


# the front door's values, from the engines' and the store's ------------------------------
def memory_value(row: MemoryItemRow) -> Memory:
    """The public value of a stored memory item (its quotes kept, the store's keys not)."""
    from memoir.model.results import Memory, MemorySource

    return Memory(
        id=row.id,
        session_id=row.session_id,
        project=row.project,
        scope=row.scope,
        kind=row.kind,
        content=row.content,
        keys=tuple(row.keys),
        operation_id=row.operation_id,
        created_at=row.created_at,
        temporal=dict(row.temporal),
        observed_at=row.observed_at,
        first_observed_at=row.first_observed_at,
        valid_from=row.valid_from,
        valid_until=row.valid_until,
        superseded_by=row.superseded_by,
        forgotten_at=row.forgotten_at,
        sources=tuple(
            MemorySource(s.session_id, s.ordinal, s.quote, s.operation_id) for s in row.sources
        ),
    )


def memory_values(rows: Iterable[MemoryItemRow]) -> list[Memory]:
    return [memory_value(row) for row in rows]


def receipt_value(row: ReceiptRow) -> MemoryReceipt:
    from memoir.model.results import MemoryReceipt

    return MemoryReceipt(
        operation_id=row.operation_id,
        session_id=row.session_id,
        trigger=row.trigger,
        outcome=row.outcome,
        range_after=row.range_after,
        range_through=row.range_through,
        created_at=row.created_at,
        reason=row.reason,
        checkpoint_id=row.checkpoint_id,
        prompt=row.prompt,
        model=row.model,
        items=row.items,
        dropped=row.dropped,
        model_calls=row.model_calls,
        input_tokens=row.input_tokens,
    )


def remembered(outcome: Outcome) -> Remembered:
    from memoir.model.results import Remembered

    return Remembered(
        receipt=None if outcome.receipt is None else receipt_value(outcome.receipt),
        items=tuple(memory_values(outcome.items)),
        pending=outcome.pending is not None,
        waiting=outcome.waiting,
        error=outcome.error,
    )


def recall_hits(found: Iterable[Recalled]) -> list[RecallHit]:
    from memoir.model.results import RecallHit

    return [RecallHit(memory_value(r.item), r.score, r.text_rank, r.vector_rank) for r in found]


def appended(result: AppendResult) -> Appended:
    from memoir.model.results import Appended

    return Appended(result.added, result.skipped, result.last_ordinal)
