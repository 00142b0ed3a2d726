"""A session's summary, and its regeneration as a background job (``memoir.jobs``): a
duplicate request while a job is active gets the same job."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Depends

from memoir.app import Memoir
from memoir.server.auth import current_user, memoir_of

__all__ = ["router"]

router = APIRouter(prefix="/api/sessions", tags=["summaries"])


@router.get("/{session_id}/summary")
def get_summary(
    session_id: str, user: str = Depends(current_user), memoir: Memoir = Depends(memoir_of)
) -> dict[str, Any]:
    """The stored summary (read from the database even when job admission is down) and
    the session's latest regeneration job, if any."""
    from memoir.summaries.persist import read_summary_state

    memoir.user_session(user, session_id)
    state = read_summary_state(memoir.summary_store(), memoir.store, session_id)
    updated = memoir.summary_updated_at(session_id)
    coverage = state.coverage
    job = memoir.summary_job(user, session_id)
    return {
        "data": {
            "summary": state.body.strip() if state.has_body else None,
            "updated_at": updated.isoformat() if updated is not None else None,
            "model": state.model,
            "coverage": None
            if coverage is None
            else {"amount": coverage.amount, "last_exchange": coverage.last_exchange},
            "job": job.to_json() if job is not None else None,
        }
    }


@router.post("/{session_id}/summary/regenerate", status_code=202)
def regenerate_summary(
    session_id: str,
    user: str = Depends(current_user),
    memoir: Memoir = Depends(memoir_of),
) -> dict[str, Any]:
    """Queue a full regeneration (202 with the job); while one is active, the same job."""
    job = memoir.regenerate_summary(user, session_id)
    return {"data": {"job": job.to_json()}}
