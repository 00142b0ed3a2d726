"""Search the caller's exchanges: the CLI's filters and modes, scoped to the caller's
sessions (the search filters by owner, so another user's exchange is never a candidate)."""

from __future__ import annotations

from typing import Any, Literal

from fastapi import APIRouter, Depends, Query

from memoir import service
from memoir.app import Memoir
from memoir.model import Harness
from memoir.search import SearchFilters, parse_when
from memoir.search.masking import mask_hits
from memoir.server.auth import current_user, memoir_of
from memoir.server.present import REVEAL
from memoir.server.routing import WHEN, WHEN_HELP, JsonRoute, errors

__all__ = ["router"]

router = APIRouter(prefix="/api", tags=["search"], route_class=JsonRoute)


@router.get("/search", responses=errors(404))
def search(
    q: str = Query(..., min_length=1, max_length=2000),
    mode: Literal["text", "vector", "hybrid"] | None = Query(None),
    project: str | None = Query(None, max_length=200),
    session: str | None = Query(None, max_length=200, description="A session id of yours."),
    harness: Harness | None = Query(None, description="Sessions from this harness only."),
    role: Literal["user", "assistant", "tool"] | None = Query(None),
    after: str | None = Query(None, pattern=WHEN, description=WHEN_HELP),
    before: str | None = Query(
        None, pattern=WHEN, description=f"{WHEN_HELP} (inclusive). Earlier than `after`: no hits."
    ),
    limit: int = Query(10, ge=1, le=100),
    reveal: bool = Query(False, description=REVEAL),
    user: str = Depends(current_user),
    memoir: Memoir = Depends(memoir_of),
) -> dict[str, Any]:
    if session is not None:  # an exact id or name of the caller's (no prefix matching here)
        session = memoir.user_session(user, session).id
    since = parse_when(after, option="after") if after else None
    until = parse_when(before, end_of_day=True, option="before") if before else None
    if since is not None and until is not None and since >= until:
        # an empty range holds nothing: no hits, not the library's refusal (422), since
        # the schema cannot state "after is earlier than before" and clients obey it
        return {"data": {"hits": []}}
    filters = SearchFilters(
        project=project,
        session_id=session,
        harness=str(harness) if harness is not None else None,
        role=role,
        after=since,
        before=until,
        user=user,
    )
    hits = memoir.search(q, filters=filters, mode=mode, limit=limit)
    if not reveal and hits:  # masked as shown; the store keeps the text as it was
        hits = mask_hits(hits, service.exchanges_by_id(memoir, [h.exchange_id for h in hits]))
    return {"data": {"hits": [h.to_json() for h in hits]}}
