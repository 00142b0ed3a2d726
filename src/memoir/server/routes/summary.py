"""A session's summary, and its regeneration as a background job (``memoir.jobs``): a
duplicate request while a job is active gets the same job."""

from __future__ import annotations

import functools
import glob
from typing import Any

from fastapi import APIRouter, Depends, Query, Request

from memoir.app import Memoir
from memoir.errors import NotFound, SummaryError
from memoir.model import Harness, Session
from memoir.secrets import mask
from memoir.server.auth import Caller, caller, current_user, memoir_of, signed_in
from memoir.server.present import REVEAL, coverage_json
from memoir.server.routing import JsonRoute, errors
from memoir.summaries.port import answered_from_row, polled_summary

__all__ = ["router"]

router = APIRouter(prefix="/api/sessions", tags=["summaries"], route_class=JsonRoute)


@router.get("/{session_id}/summary")
def get_summary(
    session_id: str,
    request: Request,
    reveal: bool = Query(False, description=REVEAL),
    who: Caller = Depends(caller),
    memoir: Memoir = Depends(memoir_of),
) -> dict[str, Any]:
    """The stored summary (read from the database even when job admission is down) and
    the session's latest regeneration job, if any."""
    # one statement: the key, the session's owner, the summary row, the event count and
    # the newest job (a poll is one round trip to the database)
    poll = memoir.store.summaries.poll(session_id, key_hash=who.key_hash, user=who.user)
    if poll is None:  # a refusal: is the key live (404) or not (401)?
        user = who.user
        if user is None and who.key_hash is not None:
            user = memoir.store.users.user_for_hash(who.key_hash)
        signed_in(request, user)
        raise NotFound(f"no session {session_id!r}")
    signed_in(request, poll.user)
    session = poll.session
    session_id = session.id  # the stored id, when the caller named the session by its name
    if answered_from_row(memoir.settings.summary_store, session.harness):
        polled = polled_summary(poll)
        state, updated, unit, current = polled.state, polled.updated_at, polled.unit, polled.current
    else:  # a synced session: its summary is a file beside its archived transcript
        from memoir.summaries.persist import read_summary_state

        state = read_summary_state(memoir.summary_store(), memoir.store, session_id)
        updated = memoir.summary_updated_at(session_id)
        unit, current = _measure(memoir, session) if state.coverage is not None else ("events", 0)
    job = memoir.jobs().seen(poll.job) if poll.job is not None else None
    return {
        "data": {
            "summary": _shown(state.body.strip(), reveal) if state.has_body else None,
            "updated_at": updated.isoformat() if updated is not None else None,
            "model": state.model,
            "coverage": coverage_json(state.coverage, unit, current),
            "job": job.to_json() if job is not None else None,
        }
    }


def _shown(body: str, reveal: bool) -> str:
    """The summary as shown: its secrets masked unless ``reveal`` (the summarizer saw the
    transcript redacted, so this is a backstop for a summary written some other way)."""
    return body if reveal else _masked(body)


@functools.lru_cache(maxsize=512)
def _masked(body: str) -> str:
    """:func:`memoir.secrets.mask` of a summary, remembered by its text (a pure function
    of it): a summary polled again is not scanned again; a changed one is a new key."""
    return mask(body)


def _measure(memoir: Memoir, session: Session) -> tuple[str, int]:
    """The unit a summary's coverage counts in and how much of it there is now: bytes of
    the archived transcript where the summary files are kept beside it, else events."""
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


@router.post("/{session_id}/summary/regenerate", status_code=202, responses=errors(409))
def regenerate_summary(
    session_id: str,
    user: str = Depends(current_user),
    memoir: Memoir = Depends(memoir_of),
) -> dict[str, Any]:
    """Queue a full regeneration (202 with the job); while one is active, the same job.
    409 `summary_failed` up front for a session with no events (no job is queued)."""
    session_id = memoir.user_session(user, session_id).id
    if memoir.store.events.last_ordinal(session_id) == 0:
        raise SummaryError(f"nothing to summarize: session {session_id!r} has no events yet")
    job = memoir.regenerate_summary(user, session_id)
    return {"data": {"job": job.to_json()}}
