"""How a home's parts are made and joined: the private wiring beneath :class:`memoir.Memoir`.

``Memoir`` (the front door) and :mod:`memoir.service` (what the adapters need beyond it)
both build on these functions. Each names what it needs — the settings, the store, a
model factory — and none takes the ``Memoir``, so the wiring sits below the front door
as the engines do. Nothing heavy is imported at module top.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping, Sequence
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from memoir.config import Settings
from memoir.errors import ConfigError, NotFound

if TYPE_CHECKING:
    from memoir.ingest.archive import RescanReport
    from memoir.ingest.batches import SyncObserver
    from memoir.jobs import JobService
    from memoir.llm.port import Model
    from memoir.memory.memories import Memories
    from memoir.memory.recall import ItemEmbedder
    from memoir.model import Session
    from memoir.search.embedders import Embedder
    from memoir.store import Store
    from memoir.store.parts import AppendResult
    from memoir.store.values import ItemFilter
    from memoir.summaries.port import SummaryStore

__all__ = [
    "append_messages",
    "check_user",
    "create_session",
    "embed_written",
    "embedder",
    "fallback_model",
    "instant",
    "item_embedder",
    "item_filter",
    "job_service",
    "memory_engine",
    "memory_project",
    "model",
    "rescan_secrets",
    "summary_body",
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
    from memoir.search.request import parse_when

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
    from memoir.search.embedders import load_embedder

    return load_embedder(settings.embedder)


def writing_embedder(settings: Settings, store: Store) -> Embedder | None:
    """The configured embedder, for a call that stores what it makes: the test fake
    (``MEMOIR_EMBEDDER=hash``) is refused in a home holding real vectors."""
    from memoir.memory.item_store import memory_parts

    made = embedder(settings)
    if settings.embedder == "hash" and not store.read_only:
        from memoir.search.embedders import check_fake_embedder

        stored = [*store.embeddings.models(), *memory_parts(store).items.vector_models()]
        check_fake_embedder(settings.embedder, stored)
    return made


def item_embedder(settings: Settings, store: Store) -> ItemEmbedder | None:
    """The embedder recall ranks with (and stores item vectors of), when semantic search
    is configured and installed."""
    return None if settings.embedder == "none" else writing_embedder(settings, store)


def embed_written(settings: Settings, store: Store, session_ids: Sequence[str]) -> int:
    """Embedding on write: embed the newest exchanges of ``session_ids`` that have no
    vector yet (at most ``memoir.search.WRITE_MAX``), so a search by meaning
    finds them the moment the write returns; how many were embedded. Nothing when
    ``MEMOIR_EMBED_ON_WRITE`` is off, no embedder is configured or installed, or the
    store is read-only. A failure is logged, never raised: the write is done, and
    ``memoir embed`` picks up what is left."""
    if not settings.embed_on_write or not session_ids or store.read_only:
        return 0
    from memoir.store import offload

    return offload(_embed_written, settings, store, session_ids)  # a model: off the loop


def _embed_written(settings: Settings, store: Store, session_ids: Sequence[str]) -> int:
    from memoir.search import embed_written as embed

    try:
        made = writing_embedder(settings, store)
        if made is None:
            return 0
        return embed(store, made, session_ids)
    except Exception:  # any embedder or store failure: the write it follows stands
        _log.warning("embedding on write failed", exc_info=True)
        return 0


# summaries ------------------------------------------------------------------------------
def summary_store(settings: Settings, store: Store) -> SummaryStore:
    """Where this home keeps summaries (``MEMOIR_SUMMARY_STORE``): archive files beside
    the transcripts, or the store's summary rows."""
    from memoir.summaries.persist import open_summary_store

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
    (``memoir.ingest.verify``): after every sync, and by ``memoir verify --repair``. One
    process at a time (another's run is left to finish), and none on a read-only store."""
    from memoir.errors import Busy
    from memoir.ingest.archive import BUDGET, RescanReport, rescan, state_report
    from memoir.memory.item_store import memory_parts
    from memoir.secrets.rules import detector_id

    if store.read_only:
        return RescanReport(detector_id(), skipped="the store is read-only")
    standing = state_report(store.rescan.states())
    if standing.finished:  # the common case: one query, no detector loaded
        return standing
    try:
        with store.claims.hold("secret-rescan", "a secret re-scan is running"):
            return rescan(
                store.rescan,
                summary_store(settings, store),
                budget=budget or BUDGET,
                forget_in=memory_parts(store).items.forget_in,
            )
    except Busy as exc:
        return RescanReport(detector_id(), skipped=str(exc))


def job_service(settings: Settings, store: Store) -> JobService:
    """A job service over this store: admission in Redis when ``MEMOIR_REDIS_URL`` is set,
    else a bounded in-process LRU; the intervals ``MEMOIR_JOB_*_S``."""
    from memoir.jobs import JobService, JobTiming, LocalAdmission, RedisAdmission
    from memoir.jobs.service import Admission

    admission: Admission = (
        RedisAdmission(settings.redis_url) if settings.redis_url else LocalAdmission()
    )
    return JobService(store.jobs, admission, JobTiming.from_settings(settings))


# long-term memory -----------------------------------------------------------------------
def memory_engine(settings: Settings, store: Store, memory_model: Callable[[], Model]) -> Memories:
    """The memory engine of a home: its lanes, its runner with ``memory_model()``."""
    from memoir.llm import counter_for, encoding_for_model
    from memoir.memory.item_store import memory_parts
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
    from memoir.ingest.discover import project_name
    from memoir.memory.item_store import memory_parts
    from memoir.search.request import resolve_project
    from memoir.store.values import ItemFilter

    try:
        return resolve_project(store.sessions, ref, safe=project_name, user=owner)
    except NotFound:
        mine = ItemFilter(owner=owner, project=ref, history=True)
        if memory_parts(store).items.ids(mine, limit=1):
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
    from memoir.store.values import ItemFilter

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
    :func:`~memoir.model.event.named_session_id` of the user and the name, with the
    name, so every user has names of their own (two users' ``chat-1`` are two sessions).
    A name (or an id) ``user`` has already returns that session as it is. Without one,
    Memoir chooses the id (32 hex digits) and the session has no name."""
    import uuid

    from memoir.model import Harness, Session, SessionFlags
    from memoir.model.event import named_session_id
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
    *,
    key_hash: str | None = None,
) -> AppendResult:
    """Append chat messages to ``user``'s session ``session_id`` (its id or its name):
    ``added``, ``skipped`` and the session's ``last_ordinal`` as this append left it. A
    message whose id is stored already is skipped; concurrent appends to one session take
    turns in the store; what was added is embedded on write. With ``key_hash``, only while
    ``user``'s API key of that hash is live (else ``NotFound``, as for another's session)."""
    from memoir.ingest.reader import api_messages
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

    result = store.api.append(session_id, made, user=user, key_hash=key_hash, check=check)
    if result.added:
        embed_written(settings, store, stored)
    return result
