"""The routes about the caller's sessions, one router per resource.

- sessions: create, list, get, archive; append and read events and exchanges;
- summaries: a session's summary, and its regeneration as a background job
  (``memoir.jobs``): a duplicate request while a job is active gets the same job;
- compaction: the context to send next, below the window's threshold; a summary writes a
  checkpoint (which queues the memory extraction of what it covers).
"""

from __future__ import annotations

import base64
import binascii
import functools
import hashlib
import hmac
import json
import re
from datetime import datetime
from typing import Any, Literal

from fastapi import APIRouter, Depends, Query, Request, Response
from fastapi.concurrency import run_in_threadpool

from memoir import service
from memoir.app import Memoir
from memoir.errors import NotFound, SummaryError
from memoir.model import Harness, RecentKey, RecentQuery
from memoir.search import parse_when
from memoir.secrets import mask
from memoir.server.auth import (
    Caller,
    ReadsItsOwn,
    caller,
    current_user,
    key_gone,
    memoir_of,
    signed_in,
    user_to_check,
)
from memoir.server.plumbing import ApiError, parse_json
from memoir.server.schemas import (
    OPAQUE,
    ORDINAL,
    REVEAL,
    WHEN,
    WHEN_HELP,
    CompactBody,
    EventsBody,
    JsonRoute,
    NewSession,
    errors,
    event_json,
    exchange_json,
    session_info_json,
    session_json,
)
from memoir.summaries.state import Coverage

__all__ = [
    "compact_router",
    "coverage_json",
    "decode_cursor",
    "encode_cursor",
    "no_page",
    "page_after",
    "sessions_router",
    "summary_router",
]

sessions_router = APIRouter(prefix="/api/sessions", tags=["sessions"], route_class=JsonRoute)


@sessions_router.post(
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
    session, created = service.create_session(
        memoir,
        user,
        session_id=body.id,
        project=body.project,
        incognito=body.incognito,
        memory_disabled=body.memory_disabled,
    )
    if not created:
        response.status_code = 200
    return {"data": {"session": session_json(session)}}


@sessions_router.get("", responses=errors(404))
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


@sessions_router.get("/{session_id}")
def get_session(
    session_id: str, user: str = Depends(current_user), memoir: Memoir = Depends(memoir_of)
) -> dict[str, Any]:
    session = service.user_session(memoir, user, session_id)
    out = session_json(session)
    out["events"] = service.last_event(memoir, session.id)
    return {"data": {"session": out}}


@sessions_router.post("/{session_id}/archive")
def archive_session(
    session_id: str, user: str = Depends(current_user), memoir: Memoir = Depends(memoir_of)
) -> dict[str, Any]:
    return {"data": {"session": session_json(service.archive_session(memoir, user, session_id))}}


async def append_events(
    session_id: str,
    body: EventsBody,
    request: Request,
    who: Caller = Depends(caller),
) -> dict[str, Any]:
    """Append OpenAI-style messages. A message whose `id` this session has stored already
    is skipped: retry a batch freely."""
    memoir: Memoir = request.app.state.memoir
    if service.awaits_store(memoir):  # PostgreSQL: on the loop, no hand-off to a thread
        return await service.on_loop(_append_events, memoir, session_id, body, request, who)
    return await run_in_threadpool(_append_events, memoir, session_id, body, request, who)


sessions_router.add_api_route(
    "/{session_id}/events", append_events, methods=["POST"], route_class_override=ReadsItsOwn
)


def _append_events(
    memoir: Memoir, session_id: str, body: EventsBody, request: Request, who: Caller
) -> dict[str, Any]:
    # a key seen before is checked by the append's own statement; else looked up here
    # (not a trip of its own)
    user, check = user_to_check(request, who)
    messages = body.model_dump(exclude_none=True)["messages"]
    try:
        done = service.append_user_messages(memoir, user, session_id, messages, key_hash=check)
    except NotFound:
        if check is not None:
            key_gone(request, who)  # 401 for a key revoked since it was seen
        raise
    return {
        "data": {"added": done.added, "skipped": done.skipped, "last_ordinal": done.last_ordinal}
    }


@sessions_router.get("/{session_id}/events")
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
    session_id = service.user_session(memoir, user, session_id).id
    start = page_after(after, cursor)
    page, more = service.events_page(memoir, session_id, after=start, limit=limit)
    return {
        "data": {"events": [event_json(e, reveal=reveal) for e in page]},
        "next_cursor": str(page[-1].ordinal) if more else None,
    }


@sessions_router.get("/{session_id}/exchanges")
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
    session_id = service.user_session(memoir, user, session_id).id
    start = page_after(after, cursor)
    page, more = service.exchanges_page(memoir, session_id, after=start, limit=limit)
    return {
        "data": {"exchanges": [exchange_json(x, reveal=reveal) for x in page]},
        "next_cursor": str(page[-1].first_ordinal) if more else None,
    }


summary_router = APIRouter(prefix="/api/sessions", tags=["summaries"], route_class=JsonRoute)


async def get_summary(
    session_id: str,
    request: Request,
    reveal: bool = Query(False, description=REVEAL),
    who: Caller = Depends(caller),
) -> dict[str, Any]:
    """The stored summary (read from the database even when job admission is down) and
    the session's latest regeneration job, if any."""
    memoir: Memoir = request.app.state.memoir
    return await service.on_loop(_summary, memoir, session_id, request, who, reveal)


summary_router.add_api_route(
    "/{session_id}/summary", get_summary, methods=["GET"], route_class_override=ReadsItsOwn
)


def _summary(
    memoir: Memoir, session_id: str, request: Request, who: Caller, reveal: bool
) -> dict[str, Any]:
    found = service.session_summary(memoir, session_id, key_hash=who.key_hash, user=who.user)
    if found is None:  # a refusal: is the key live (404) or not (401)?
        user = who.user
        if user is None and who.key_hash is not None:
            user = service.user_for_key_hash(memoir, who.key_hash)
        signed_in(request, user)
        raise NotFound(f"no session {session_id!r}")
    signed_in(request, found.user)
    state, updated, job = found.state, found.updated_at, found.job
    return {
        "data": {
            "summary": _shown(state.body.strip(), reveal) if state.has_body else None,
            "updated_at": updated.isoformat() if updated is not None else None,
            "model": state.model,
            "coverage": coverage_json(state.coverage, found.unit, found.current),
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


@summary_router.post("/{session_id}/summary/regenerate", status_code=202, responses=errors(409))
def regenerate_summary(
    session_id: str,
    user: str = Depends(current_user),
    memoir: Memoir = Depends(memoir_of),
) -> dict[str, Any]:
    """Queue a full regeneration (202 with the job); while one is active, the same job.
    409 `summary_failed` up front for a session with no events (no job is queued)."""
    session_id = service.user_session(memoir, user, session_id).id
    if service.last_event(memoir, session_id) == 0:
        raise SummaryError(f"nothing to summarize: session {session_id!r} has no events yet")
    job = service.regenerate_summary(memoir, user, session_id)
    return {"data": {"job": job.to_json()}}


compact_router = APIRouter(prefix="/api/sessions", tags=["compaction"], route_class=JsonRoute)


@compact_router.post("/{session_id}/compact", responses=errors(409))
def compact(
    session_id: str,
    body: CompactBody,
    user: str = Depends(current_user),
    memoir: Memoir = Depends(memoir_of),
) -> dict[str, Any]:
    """Compact `messages` (default: the session's stored events) for a model with this
    context `window`: the new messages, and the checkpoint id when one was written."""
    session = service.user_session(memoir, user, session_id)
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


def coverage_json(coverage: Coverage | None, unit: str, current: int) -> dict[str, Any] | None:
    """What a summary covers, in ``unit`` ("events" | "bytes" of the archived transcript),
    beside how much there is now (``current``, the same unit): the page's "12 of 14"."""
    if coverage is None:
        return None
    return {
        "amount": coverage.amount,
        "last_exchange": coverage.last_exchange,
        "unit": unit,
        "current": current,
    }


# the opaque cursors lists page with -----------------------------------------------------


def encode_cursor(value: Any) -> str:
    raw = json.dumps(value, separators=(",", ":")).encode()
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


def no_page() -> ApiError:
    """A sessions cursor naming no page of the caller's (404, as another's session is)."""
    return ApiError(404, "not_found", "cursor: not a cursor this API gave")


def decode_cursor(cursor: str) -> Any:
    """The value of a cursor :func:`encode_cursor` made; 404 for anything else (read by
    the body's parser: a cursor nested too deep, or not JSON at all, is refused alike).
    404, not 422: it is well formed (base64url, as the schema says) but names no page of
    the caller's, as another user's session is 404 too."""
    try:
        padded = cursor + "=" * (-len(cursor) % 4)
        return parse_json(base64.urlsafe_b64decode(padded.encode()))
    except (binascii.Error, ValueError):
        raise no_page() from None


_ORDINAL = re.compile(r"[0-9]{1,18}")  # ASCII digits (str.isdigit takes "²"), no sign


def page_after(after: int | None, cursor: str | None) -> int:
    """The ordinal a page of a session's events or exchanges starts after: ``cursor`` (the
    previous page's ``next_cursor``, as on every list) and ``after`` (an ordinal given as a
    number) are both lower bounds, so the page starts past the larger; 0 when neither.
    422 for a cursor this API did not give. Pure."""
    if cursor is None:
        return 0 if after is None else after
    if not _ORDINAL.fullmatch(cursor):
        raise ApiError(422, "invalid_request", "cursor: not a cursor this API gave")
    return max(int(cursor), after or 0)
