"""Compaction: the context to send next, below the window's threshold; a summary writes a
checkpoint (which queues the memory extraction of what it covers)."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Depends

from memoir import service
from memoir.app import Memoir
from memoir.server.auth import current_user, memoir_of
from memoir.server.routing import JsonRoute, errors
from memoir.server.schemas import CompactBody

__all__ = ["router"]

router = APIRouter(prefix="/api/sessions", tags=["compaction"], route_class=JsonRoute)


@router.post("/{session_id}/compact", responses=errors(409))
def compact(
    session_id: str,
    body: CompactBody,
    user: str = Depends(current_user),
    memoir: Memoir = Depends(memoir_of),
) -> dict[str, Any]:
    """Compact `messages` (default: the session's stored events) for a model with this
    context `window`: the new messages, and the checkpoint id when one was written."""
    session = memoir.user_session(user, session_id)
    session_id = session.id
    compactor = memoir.compactor()
    if body.messages is None:
        events = service.events_of(memoir, session_id)
        result = compactor.compact_events(events, window=body.window, session_id=session_id)
    else:
        result = compactor.compact(
            body.messages, window=body.window, session_id=session_id, flags=session.flags
        )
    out = result.to_json()
    out.setdefault("messages", result.messages)
    out["checkpoint_id"] = result.checkpoint_id
    return {"data": out}
