"""Sessions owned by a user, and their summary jobs: what the HTTP service and the worker
need beyond the front door (a session named by a user, appends to it, the full summary
regeneration queued as a job, the job's handler, the worker). Each function takes the
open ``Memoir``; :mod:`memoir.service` re-exports them."""

from __future__ import annotations

import functools
import threading
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from memoir.app import Memoir
    from memoir.jobs import Job, JobProgress
    from memoir.model import Session
    from memoir.store.parts.events import AppendResult

__all__ = [
    "append_messages",
    "append_user_messages",
    "archive_session",
    "create_session",
    "regenerate_summary",
    "run_summary_job",
    "run_worker",
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
