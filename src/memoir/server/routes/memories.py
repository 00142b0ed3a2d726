"""Long-term memory of the caller: list or search items, forget one, remember now."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Depends, Query

from memoir.app import Memoir
from memoir.errors import NotFound
from memoir.memory.present import exchange_finder, item_json
from memoir.memory.tasks import Outcome
from memoir.server.auth import current_user, memoir_of
from memoir.server.schemas import RememberBody

__all__ = ["router"]

router = APIRouter(prefix="/api", tags=["memories"])


def _owned(memoir: Memoir, user: str) -> set[str]:
    """Ids of the caller's sessions: an item is the caller's when it came from one."""
    ids: set[str] = set()
    after = None
    while True:
        page = memoir.store.api.sessions(user, after=after, limit=1000)
        ids.update(s.id for s in page)
        if len(page) < 1000 or page[-1].created_at is None:
            return ids
        after = (page[-1].created_at, page[-1].id)


@router.get("/memories")
def list_memories(
    q: str | None = Query(None, max_length=500, description="Words the item must contain."),
    project: str | None = Query(None, max_length=200),
    limit: int = Query(100, ge=1, le=1000),
    user: str = Depends(current_user),
    memoir: Memoir = Depends(memoir_of),
) -> dict[str, Any]:
    owned = _owned(memoir, user)
    items = [i for i in memoir.store.memory_items.find(project=project) if i.session_id in owned]
    if q:
        words = q.lower().split()
        items = [
            i for i in items if all(w in f"{i.content} {' '.join(i.keys)}".lower() for w in words)
        ]
    find = exchange_finder(memoir.store.exchanges.of)
    return {"data": {"memories": [item_json(i, find) for i in items[:limit]]}}


@router.delete("/memories/{item_id}")
def forget_memory(
    item_id: str, user: str = Depends(current_user), memoir: Memoir = Depends(memoir_of)
) -> dict[str, Any]:
    found = memoir.store.memory_items.get(item_id)
    if found is None or found.id != item_id or found.session_id not in _owned(memoir, user):
        raise NotFound(f"no memory item {item_id!r}")
    memoir.store.memory_items.forget(item_id)
    return {"data": {"forgotten": item_id}}


@router.post("/sessions/{session_id}/remember")
def remember(
    session_id: str,
    body: RememberBody | None = None,
    user: str = Depends(current_user),
    memoir: Memoir = Depends(memoir_of),
) -> dict[str, Any]:
    """Extract what the user asked to keep from this session now."""
    memoir.user_session(user, session_id)
    outcome = memoir.remember(session_id, body.turn if body is not None else None)
    return {"data": {"outcome": _outcome_json(memoir, outcome)}}


def _outcome_json(memoir: Memoir, outcome: Outcome) -> dict[str, Any]:
    find = exchange_finder(memoir.store.exchanges.of)
    return {
        "settled": outcome.settled,
        "items": [item_json(i, find) for i in outcome.items],
        "waiting": outcome.waiting,
        "error": outcome.error,
        "pending": outcome.pending is not None,
    }
