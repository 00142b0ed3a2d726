"""A session's summary, and its regeneration as a background job (``memoir.jobs``): a
duplicate request while a job is active gets the same job."""

from __future__ import annotations

import glob
from typing import Any

from fastapi import APIRouter, Depends, Query

from memoir.app import Memoir
from memoir.errors import SummaryError
from memoir.model import Harness, Session
from memoir.secrets import mask
from memoir.server.auth import current_user, memoir_of
from memoir.server.present import REVEAL, coverage_json
from memoir.server.routing import JsonRoute, errors

__all__ = ["router"]

router = APIRouter(prefix="/api/sessions", tags=["summaries"], route_class=JsonRoute)


@router.get("/{session_id}/summary")
def get_summary(
    session_id: str,
    reveal: bool = Query(False, description=REVEAL),
    user: str = Depends(current_user),
    memoir: Memoir = Depends(memoir_of),
) -> dict[str, Any]:
    """The stored summary (read from the database even when job admission is down) and
    the session's latest regeneration job, if any."""
    from memoir.summaries.persist import read_summary_state

    session = memoir.user_session(user, session_id)
    session_id = session.id
    state = read_summary_state(memoir.summary_store(), memoir.store, session_id)
    updated = memoir.summary_updated_at(session_id)
    coverage = state.coverage
    job = memoir.summary_job(user, session_id)
    unit, current = _measure(memoir, session) if coverage is not None else ("events", 0)
    return {
        "data": {
            "summary": _shown(state.body.strip(), reveal) if state.has_body else None,
            "updated_at": updated.isoformat() if updated is not None else None,
            "model": state.model,
            "coverage": coverage_json(coverage, unit, current),
            "job": job.to_json() if job is not None else None,
        }
    }


def _shown(body: str, reveal: bool) -> str:
    """The summary as shown: its secrets masked unless ``reveal`` (the summarizer saw the
    transcript redacted, so this is a backstop for a summary written some other way)."""
    return body if reveal else mask(body)


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
