"""Sessions of the caller: create, list, get, archive; append and read events and
exchanges."""

from __future__ import annotations

import hashlib
import hmac
from datetime import datetime
from typing import Any, Literal

from fastapi import APIRouter, Depends, Query, Response

from memoir import service
from memoir.app import Memoir
from memoir.model import Harness, RecentKey, RecentQuery
from memoir.search import parse_when
from memoir.server.auth import current_user, memoir_of
from memoir.server.present import (
    REVEAL,
    decode_cursor,
    encode_cursor,
    event_json,
    exchange_json,
    no_page,
    page_after,
    session_info_json,
    session_json,
)
from memoir.server.routing import OPAQUE, ORDINAL, WHEN, WHEN_HELP, JsonRoute, errors
from memoir.server.schemas import EventsBody, NewSession

__all__ = ["router"]

router = APIRouter(prefix="/api/sessions", tags=["sessions"], route_class=JsonRoute)


@router.post(
    "",
    status_code=201,
    responses={200: {"description": "Yours of that id already: the session as it is."}},
)
def create_session(
    body: NewSession,
    response: Response,
    user: str = Depends(current_user),
    memoir: Memoir = Depends(memoir_of),
) -> dict[str, Any]:
    """Create a session (201), or return yours of that name as it is (200). `id` is your
    name for it: the session is stored under an id of Memoir's (the `id` answered) with
    that `name`; either works wherever a session id does."""
    session, created = memoir.create_session(
        user,
        session_id=body.id,
        project=body.project,
        incognito=body.incognito,
        memory_disabled=body.memory_disabled,
    )
    if not created:
        response.status_code = 200
    return {"data": {"session": session_json(session)}}


@router.get("", responses=errors(404))
def list_sessions(
    cursor: str | None = Query(
        None,
        pattern=OPAQUE,
        description="`next_cursor` of the previous page (404 for one this API did not give you).",
    ),
    limit: int = Query(50, ge=1, le=500),
    order: Literal["created", "recent"] = Query(
        "created",
        description="`created`: in the order they were created; `recent`: the most recently "
        "active first, each with its exchange and event counts, with the total and the "
        "projects and harnesses to filter by. The filters apply in both orders.",
    ),
    project: str | None = Query(None, max_length=200, description="Of this project only."),
    harness: Harness | None = Query(None, description="From this harness only."),
    after: str | None = Query(None, pattern=WHEN, description=f"Active on or after: {WHEN_HELP}."),
    before: str | None = Query(
        None, pattern=WHEN, description=f"Active on or before: {WHEN_HELP}."
    ),
    user: str = Depends(current_user),
    memoir: Memoir = Depends(memoir_of),
) -> dict[str, Any]:
    query = RecentQuery(
        project=project,
        harness=harness.value if harness is not None else None,
        since=parse_when(after, option="after") if after else None,
        until=parse_when(before, end_of_day=True, option="before") if before else None,
    )
    if order == "recent":
        return _recent(memoir, user, cursor, limit, query)
    after_key = None
    if cursor is not None:
        value = decode_cursor(cursor)
        try:
            after_key = (datetime.fromisoformat(value[0]), str(value[1]))
        except (TypeError, ValueError, IndexError, KeyError):
            raise no_page() from None
    mine = memoir.as_user(user)
    sessions = service.sessions_created(mine, query, after=after_key, limit=limit + 1)
    page, more = sessions[:limit], len(sessions) > limit
    last = page[-1] if page else None
    next_cursor = (
        encode_cursor([last.created_at.isoformat(), last.id])
        if more and last is not None and last.created_at is not None
        else None
    )
    return {"data": {"sessions": [session_json(s) for s in page]}, "next_cursor": next_cursor}


def _recent(
    memoir: Memoir,
    user: str,
    cursor: str | None,
    limit: int,
    query: RecentQuery,
) -> dict[str, Any]:
    """The caller's sessions, most recently active first, filtered: the owner, the filters,
    the order, the page, the total and the facets are the database's queries. The cursor is
    a keyset (the last session's activity time and id) bound to the caller: another
    user's cursor is refused as one this API never gave."""
    key = None if cursor is None else _recent_key(cursor, user)
    page = service.session_listing(memoir.as_user(user), query, limit=limit, after=key)
    last = page.last_key
    return {
        "data": {
            "sessions": [session_info_json(i) for i in page.sessions],
            "total": page.total,
            "facets": {"projects": list(page.projects), "harnesses": list(page.harnesses)},
        },
        "next_cursor": _recent_cursor(last, user) if page.more and last is not None else None,
    }


def _owner_tag(user: str) -> str:
    """What binds a cursor to its caller: a digest of the user's name (the name itself is
    not in the cursor)."""
    return hashlib.sha256(user.encode("utf-8", "surrogatepass")).hexdigest()[:16]


def _recent_cursor(key: RecentKey, user: str) -> str:
    at, sid = key
    return encode_cursor({"at": at.isoformat() if at else None, "id": sid, "u": _owner_tag(user)})


def _recent_key(cursor: str, user: str) -> RecentKey:
    """The keyset ``cursor`` holds; 422 for one this API did not give ``user``."""
    value = decode_cursor(cursor)
    refused = no_page()
    if not isinstance(value, dict) or set(value) != {"at", "id", "u"}:
        raise refused
    at, sid, tag = value["at"], value["id"], value["u"]
    if (
        not isinstance(sid, str)
        or not isinstance(tag, str)
        or (at is not None and not isinstance(at, str))
    ):
        raise refused
    if not hmac.compare_digest(tag, _owner_tag(user)):
        raise refused
    try:
        when = None if at is None else datetime.fromisoformat(at)
    except ValueError:
        raise refused from None
    if when is not None and when.tzinfo is None:
        raise refused
    return (when, sid)


@router.get("/{session_id}")
def get_session(
    session_id: str, user: str = Depends(current_user), memoir: Memoir = Depends(memoir_of)
) -> dict[str, Any]:
    session = memoir.user_session(user, session_id)
    out = session_json(session)
    out["events"] = service.last_event(memoir, session.id)
    return {"data": {"session": out}}


@router.post("/{session_id}/archive")
def archive_session(
    session_id: str, user: str = Depends(current_user), memoir: Memoir = Depends(memoir_of)
) -> dict[str, Any]:
    return {"data": {"session": session_json(memoir.archive_session(user, session_id))}}


@router.post("/{session_id}/events")
def append_events(
    session_id: str,
    body: EventsBody,
    user: str = Depends(current_user),
    memoir: Memoir = Depends(memoir_of),
) -> dict[str, Any]:
    """Append OpenAI-style messages. A message whose `id` this session has stored already
    is skipped: retry a batch freely."""
    messages = [m.model_dump(exclude_none=True) for m in body.messages]
    done = memoir.append_user_messages(user, session_id, messages)
    return {
        "data": {"added": done.added, "skipped": done.skipped, "last_ordinal": done.last_ordinal}
    }


@router.get("/{session_id}/events")
def read_events(
    session_id: str,
    after: int | None = Query(
        None, ge=0, description="Events with an ordinal past this one (0: from the start)."
    ),
    cursor: str | None = Query(
        None,
        pattern=ORDINAL,
        description="`next_cursor` of the previous page (with `after`: past both).",
    ),
    limit: int = Query(200, ge=1, le=1000),
    reveal: bool = Query(False, description=REVEAL),
    user: str = Depends(current_user),
    memoir: Memoir = Depends(memoir_of),
) -> dict[str, Any]:
    session_id = memoir.user_session(user, session_id).id
    start = page_after(after, cursor)
    page, more = service.events_page(memoir, session_id, after=start, limit=limit)
    return {
        "data": {"events": [event_json(e, reveal=reveal) for e in page]},
        "next_cursor": str(page[-1].ordinal) if more else None,
    }


@router.get("/{session_id}/exchanges")
def read_exchanges(
    session_id: str,
    after: int | None = Query(
        None, ge=0, description="Exchanges opening past this ordinal (0: from the start)."
    ),
    cursor: str | None = Query(
        None,
        pattern=ORDINAL,
        description="`next_cursor` of the previous page (with `after`: past both).",
    ),
    limit: int = Query(100, ge=1, le=1000),
    reveal: bool = Query(False, description=REVEAL),
    user: str = Depends(current_user),
    memoir: Memoir = Depends(memoir_of),
) -> dict[str, Any]:
    session_id = memoir.user_session(user, session_id).id
    start = page_after(after, cursor)
    page, more = service.exchanges_page(memoir, session_id, after=start, limit=limit)
    return {
        "data": {"exchanges": [exchange_json(x, reveal=reveal) for x in page]},
        "next_cursor": str(page[-1].first_ordinal) if more else None,
    }
