"""The routes that find things for the caller: search over exchanges, long-term memory, and
the caller's model usage (calls, failures and tokens by day and model).

Search: the CLI's filters and modes, scoped to the caller's sessions (the search filters by
owner, so another user's exchange is never a candidate).

Memories: list or recall items, read one with its history, the context block, forget (one
item, or by session, project or words), remember now. Every read and write is limited to
the caller's own items (an item belongs to the user whose session it came from).
"""

from __future__ import annotations

from dataclasses import asdict
from datetime import UTC, datetime, timedelta
from functools import partial
from typing import Any, Literal

from fastapi import APIRouter, Depends, Query
from pydantic import BaseModel, ConfigDict, Field, model_validator

from memoir import service
from memoir.app import Memoir
from memoir.errors import NotFound, UsageError
from memoir.memory.recall import item_json, quoted_exchanges
from memoir.model import Harness, Remembered
from memoir.search import SearchFilters, parse_when
from memoir.search.hits import mask_hits
from memoir.server.auth import current_user, memoir_of
from memoir.server.plumbing import ApiError
from memoir.server.schemas import REVEAL, WHEN, WHEN_HELP, JsonRoute, RememberBody, errors

__all__ = [
    "memories_router",
    "search_router",
    "usage_router",
]

search_router = APIRouter(prefix="/api", tags=["search"], route_class=JsonRoute)


@search_router.get("/search", responses=errors(404))
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
        session = service.user_session(memoir, user, session).id
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


memories_router = APIRouter(prefix="/api", tags=["memories"], route_class=JsonRoute)
_SELECTORS = ("session", "project", "matching")
Kind = Literal["fact", "preference", "decision", "plan", "constraint"]


class ForgetBody(BaseModel):
    """Exactly one selector: a session of yours, a project, or words every item must hold."""

    model_config = ConfigDict(
        extra="forbid",
        strict=True,
        json_schema_extra={"oneOf": [{"required": [k]} for k in _SELECTORS]},
    )
    session: str = Field(None, min_length=1, max_length=200)  # type: ignore[assignment]
    project: str = Field(None, min_length=1, max_length=500)  # type: ignore[assignment]
    matching: str = Field(None, min_length=1, max_length=2000)  # type: ignore[assignment]

    @model_validator(mode="after")
    def _one(self) -> ForgetBody:
        given = [k for k in _SELECTORS if getattr(self, k) is not None]
        if len(given) != 1:
            raise ValueError("name exactly one of session, project or matching")
        return self


def _when(raw: str | None) -> datetime | None:
    return None if raw is None else parse_when(raw, option="as_of")


@memories_router.get("/memories")
def list_memories(
    q: str | None = Query(None, max_length=2000, description="Recall: what to look for."),
    project: str | None = Query(None, max_length=500),
    kind: list[Kind] = Query([], description="Items of these kinds only."),
    scope: Literal["global", "project"] | None = Query(None),
    as_of: str | None = Query(None, pattern=WHEN, description=f"What held then: {WHEN_HELP}."),
    history: bool = Query(False, description="Superseded items too."),
    limit: int = Query(100, ge=1, le=1000),
    user: str = Depends(current_user),
    memoir: Memoir = Depends(memoir_of),
) -> dict[str, Any]:
    """The caller's items: ranked by recall when ``q`` is given, else newest first."""
    holding = partial(service.exchanges_holding, memoir)
    if q is not None and q.strip():
        hits = memoir.recall(
            q,
            project=project,
            kinds=list(kind),
            scope=scope,
            as_of=_when(as_of),
            history=history,
            limit=limit,
            user=user,
        )
        find = quoted_exchanges([h.item for h in hits], holding)
        rows = []
        for hit in hits:
            row = item_json(hit.item, find)
            row["score"] = round(hit.score, 6)
            rows.append(row)
        return {"data": {"memories": rows}}
    items = memoir.recall(
        "",
        project=project,
        kinds=list(kind),
        scope=scope,
        as_of=_when(as_of),
        history=history,
        limit=limit,
        user=user,
    )
    find = quoted_exchanges([h.item for h in items], holding)
    return {"data": {"memories": [item_json(h.item, find) for h in items]}}


@memories_router.get("/memories/context")
def memory_context(
    project: str | None = Query(None, max_length=500),
    budget: int = Query(800, ge=0, le=100_000, description="At most this many tokens."),
    q: str | None = Query(None, max_length=2000, description="Rank by this instead."),
    user: str = Depends(current_user),
    memoir: Memoir = Depends(memoir_of),
) -> dict[str, Any]:
    """The block an agent prepends to its system prompt, within ``budget`` tokens."""
    block = memoir.context(project=project, budget_tokens=budget, query=q, user=user)
    return {"data": block.as_json()}


def _own(memoir: Memoir, user: str, item_id: str) -> Any:
    found = service.memory_item(memoir.as_user(user), item_id)
    if found is None:
        raise NotFound(f"no memory item {item_id!r}")
    return found


@memories_router.get("/memories/{item_id}")
def read_memory(
    item_id: str, user: str = Depends(current_user), memoir: Memoir = Depends(memoir_of)
) -> dict[str, Any]:
    """One item with its quotes (each naming its exchange) and its history."""
    item = _own(memoir, user, item_id)
    before = [i for i in memoir.memories.history(item.id, user=user) if i.id != item.id]
    data, *history = service.memories_json(memoir, [item, *before])
    return {"data": {"memory": {**data, "history": history}}}


@memories_router.delete("/memories/{item_id}")
def forget_memory(
    item_id: str, user: str = Depends(current_user), memoir: Memoir = Depends(memoir_of)
) -> dict[str, Any]:
    """Forget the item and what it superseded; its evidence is never extracted again."""
    item = _own(memoir, user, item_id)
    gone = memoir.forget(item=item.id, user=user)
    return {"data": {"forgotten": item.id, "items": [i.id for i in gone]}}


@memories_router.post("/memories/forget", responses=errors(404))
def forget_memories(
    body: ForgetBody, user: str = Depends(current_user), memoir: Memoir = Depends(memoir_of)
) -> dict[str, Any]:
    """Forget every item of a session, of a project, or holding all the given words."""
    if body.session is not None:
        service.user_session(memoir, user, body.session)  # 404 unless the caller's (id or name)
    gone = memoir.forget(
        session=body.session, project=body.project, matching=body.matching, user=user
    )
    return {"data": {"items": [i.id for i in gone]}}


@memories_router.post("/sessions/{session_id}/remember", responses=errors(409))
def remember(
    session_id: str,
    body: RememberBody | None = None,
    user: str = Depends(current_user),
    memoir: Memoir = Depends(memoir_of),
) -> dict[str, Any]:
    """Extract what the user asked to keep from this session now."""
    session_id = service.user_session(memoir, user, session_id).id
    turn = body.turn if body is not None else None
    try:
        outcome = memoir.as_user(user).remember(session_id, turn)
    except UsageError as exc:  # a turn that is no user message of it: nothing there (404)
        if turn is None:
            raise
        raise ApiError(404, "not_found", str(exc).removeprefix("--")) from None
    return {"data": {"outcome": _outcome_json(memoir, outcome)}}


def _outcome_json(memoir: Memoir, outcome: Remembered) -> dict[str, Any]:
    return {
        "settled": outcome.settled,
        "items": service.memories_json(memoir, list(outcome.items)),
        "waiting": outcome.waiting,
        "error": outcome.error,
        "pending": outcome.pending,
    }


usage_router = APIRouter(prefix="/api", tags=["usage"], route_class=JsonRoute)


@usage_router.get("/usage")
def usage(
    days: int = Query(0, ge=0, le=3650, description="Only the last N days (0: all)."),
    user: str = Depends(current_user),
    memoir: Memoir = Depends(memoir_of),
) -> dict[str, Any]:
    """Calls made for the caller (recorded with its name) or for its sessions."""
    since = datetime.now(UTC) - timedelta(days=days) if days else None
    totals = service.usage_report(memoir.as_user(user), since)
    return {
        "data": {
            "totals": [asdict(t) for t in totals],
            "calls": sum(t.calls for t in totals),
            "failed": sum(t.failed for t in totals),
            "input_tokens": sum(t.input_tokens for t in totals),
            "output_tokens": sum(t.output_tokens for t in totals),
        }
    }
