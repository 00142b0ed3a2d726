"""Sessions owned by a user, read and written, and their summary jobs: what the HTTP
service and the worker need beyond the front door (a session named by a user, appends to
it, its listings and pages, the poll of its summary, the full summary regeneration queued
as a job, the job's handler, the worker). Each function takes the open ``Memoir``;
:mod:`memoir.service` re-exports them.
"""

from __future__ import annotations

import functools
import threading
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypeVar

from memoir.service.upkeep import memory_project, summary_store

if TYPE_CHECKING:
    from datetime import datetime

    from memoir.app import Memoir
    from memoir.jobs import Job, JobProgress
    from memoir.model import Event, Exchange, RecentKey, RecentPage, RecentQuery, Session
    from memoir.store.parts import AppendResult
    from memoir.summaries.state import SummaryState

__all__ = [
    "SessionSummary",
    "append_messages",
    "append_user_messages",
    "archive_session",
    "awaits_store",
    "create_session",
    "events_of",
    "events_page",
    "exchanges_page",
    "on_loop",
    "regenerate_summary",
    "run_summary_job",
    "run_worker",
    "session_listing",
    "session_summary",
    "sessions_created",
    "set_incognito",
    "set_memory",
    "start_workers",
    "summary_job",
    "user_session",
]


def _writable(memoir: Memoir, command: str) -> None:
    from memoir.store import ensure_writable

    ensure_writable(memoir.store, command)


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
    memoir: Memoir,
    user: str,
    session_id: str,
    messages: Sequence[Mapping[str, Any]],
    *,
    key_hash: str | None = None,
) -> AppendResult:
    """:func:`append_messages` with the whole result: ``added``, ``skipped`` and the
    session's ``last_ordinal`` as this append left it (what the HTTP API answers). With
    ``key_hash``, the append checks that ``user``'s API key of that hash is live in the
    statement that locks the session, and finds nothing (``NotFound``) when it is not."""
    from memoir.wiring import append_messages as append

    return append(memoir.settings, memoir.store, user, session_id, messages, key_hash=key_hash)


def awaits_store(memoir: Memoir) -> bool:
    """Whether a call that blocks on ``memoir``'s store alone may run on an event loop
    with :func:`on_loop` (PostgreSQL: each wait on the server is awaited); if not (SQLite,
    whose waits are a file's), it belongs on a thread, but for a short read: an SQLite
    reader of the write-ahead log does not wait for writers."""
    return bool(getattr(memoir.store, "awaits_waits", False))


T = TypeVar("T")


async def on_loop(fn: Callable[..., T], memoir: Memoir, /, *args: Any) -> T:
    """``fn(memoir, *args)`` run on this event loop's thread, its waits on the store
    awaited (:func:`memoir.store.run_on_loop`): no hand-off to a thread. Only for a call
    that blocks on nothing but the store (see :func:`awaits_store`). No more such calls
    run at once than the store's pool has connections (``Store.loop_gate``): the others
    wait their turn on the loop, not for a connection."""
    from memoir.store import run_on_loop

    gate = memoir.store.loop_gate
    if gate is None:
        return await run_on_loop(fn, memoir, *args)
    async with gate.of_loop():
        return await run_on_loop(fn, memoir, *args)


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
    _writable(memoir, "regenerating a summary")
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
    """The handler of job kind ``summary``: the episodic summarizer's full run over the
    stored session (episodes cached, so a resumed job reuses what was done), its progress
    reported through the job, saved only while the job's claim holds. The session's
    summary claim is held for the save only: the job's claim in the store keeps two
    workers apart, and a worker stuck past its claim must not keep its replacement from
    saving."""
    from memoir.errors import SummaryError
    from memoir.store.db import summary_claim
    from memoir.summaries.port import FencedSummaryStore, events_digest
    from memoir.summaries.session import EpisodeSettings, closing_source, summarize_session

    store = memoir.store
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

    with closing_source(memoir._model, memoir._fallback_model) as source:
        summarize_session(
            store,
            FencedSummaryStore(
                memoir._summary_store(),
                check,
                lambda: store.claims.hold(*summary_claim(job.session_id)),
            ),
            job.session_id,
            models=source,
            episodes=EpisodeSettings.from_settings(memoir.settings),
            mode="full",
            progress=progress,
            job_id=job.id,
            claim=False,
        )


def run_worker(memoir: Memoir, stop: threading.Event, *, worker_id: str | None = None) -> None:
    """Run a job worker until ``stop`` is set (``memoir worker``, ``memoir serve
    --workers``): resumes abandoned jobs first, then takes queued ones; a job running when
    ``stop`` is set is told to stop and released to the queue unless it finishes."""
    from memoir.jobs import Worker

    handler = functools.partial(run_summary_job, memoir)
    Worker(memoir.jobs(), {"summary": handler}, worker_id=worker_id).run(stop)


def start_workers(memoir: Memoir, count: int, stop: threading.Event) -> list[threading.Thread]:
    """``count`` workers (:func:`run_worker`) on daemon threads of this process, until
    ``stop`` is set (``memoir serve --workers N``)."""
    threads = []
    for n in range(count):
        thread = threading.Thread(
            target=run_worker,
            args=(memoir, stop),
            # no name: each worker takes host:pid:random (two replicas never share one)
            name=f"memoir-worker-{n + 1}",
            daemon=True,
        )
        thread.start()
        threads.append(thread)
    return threads


# a session's flags, a project's memory switch -------------------------------------------
def set_incognito(memoir: Memoir, session: str, incognito: bool = True) -> None:
    """Mark a session incognito (or not): nothing said in it while incognito is ever
    extracted into memory or sent to a memory model."""
    _set_flags(memoir, session, incognito=incognito)


def set_memory(
    memoir: Memoir, enabled: bool, *, session: str | None = None, project: str | None = None
) -> str:
    """Switch memory extraction off (or on again) for one session or one project (an id
    or a unique prefix; a name, a folder or its last part); the session id or the project
    name switched. Ranges extracted while it was off stay denied for ever."""
    from memoir.errors import ConfigError
    from memoir.memory.item_store import memory_parts

    if (session is None) == (project is None):
        raise ConfigError("give exactly one of session or project")
    if project is not None:
        name = memory_project(memoir, project)
        memory_parts(memoir.store).items.switch_project(name, disabled=not enabled)
        return name
    assert session is not None
    return _set_flags(memoir, session, memory_disabled=not enabled)


def _set_flags(memoir: Memoir, session: str, **flags: bool) -> str:
    from dataclasses import replace

    sid = memoir.store.sessions.resolve(session, user=memoir.user)
    found = memoir.store.sessions.get(sid)
    assert found is not None
    memoir.store.sessions.set_flags(sid, replace(found.flags, **flags))
    return sid


# reading a user's sessions (the HTTP server's listings and pages) ----------------------
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
    from memoir.store import offload
    from memoir.summaries.port import answered_from_row, polled_summary

    poll = memoir.store.summaries.poll(session_id, key_hash=key_hash, user=user)
    if poll is None:
        return None
    session = poll.session
    if answered_from_row(memoir.settings.summary_store, session.harness):
        polled = polled_summary(poll)
        state, updated, unit, current = polled.state, polled.updated_at, polled.unit, polled.current
    else:  # a synced session: its summary is a file beside its archived transcript
        state, updated, unit, current = offload(_from_files, memoir, session)
    job = memoir.jobs().seen(poll.job) if poll.job is not None else None
    return SessionSummary(poll.user, session, state, updated, unit, current, job)


def _from_files(memoir: Memoir, session: Session) -> tuple[SummaryState, datetime | None, str, int]:
    """The summary of a synced session kept as files: its state, when it was written,
    and what it covers (read on a thread when called on an event loop)."""
    from memoir.summaries.persist import read_summary_state, summary_updated_at

    summaries = summary_store(memoir)
    state = read_summary_state(summaries, memoir.store, session.id)
    updated = summary_updated_at(summaries, memoir.store.summaries, session.id)
    unit, current = _measure(memoir, session) if state.coverage is not None else ("events", 0)
    return state, updated, unit, current


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
