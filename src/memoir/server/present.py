"""Memoir's values as JSON, and the opaque cursors lists page with.

Transcript text (an event's text and payload, an exchange's prompt and reply) is masked
unless ``reveal``: each secret shown as its placeholder (:func:`memoir.secrets.mask`). A
route scopes every read to the caller's own sessions, so ``reveal=true`` shows the caller
their own secrets; the stored text is never changed."""

from __future__ import annotations

import base64
import binascii
import json
import re
from datetime import datetime
from typing import Any

from memoir.model import Event, Exchange, Session, SessionInfo
from memoir.secrets import mask, mask_json
from memoir.server.body import parse_json
from memoir.server.errors import ApiError
from memoir.summaries.state import Coverage

__all__ = [
    "REVEAL",
    "coverage_json",
    "decode_cursor",
    "encode_cursor",
    "event_json",
    "exchange_json",
    "no_page",
    "page_after",
    "session_info_json",
    "session_json",
]

REVEAL = (
    "Show secrets (API keys, passwords, private keys) as stored; by default each is a "
    "placeholder such as [redacted: AWS access key]. Your own sessions only, as always."
)


def _iso(value: datetime | None) -> str | None:
    return value.isoformat() if value is not None else None


def session_json(s: Session) -> dict[str, Any]:
    """A session: ``id`` as stored (what hits and exchange ids name), ``name`` the id its
    client chose (null when Memoir chose one or the session is a transcript)."""
    return {
        "id": s.id,
        "name": s.name,
        "project": s.project,
        "harness": str(s.harness),
        "incognito": s.flags.incognito,
        "memory_disabled": s.flags.memory_disabled,
        "archived": s.flags.archived,
        "subagent": s.flags.subagent,
        "created_at": _iso(s.created_at),
        "updated_at": _iso(s.updated_at),
    }


def session_info_json(info: SessionInfo) -> dict[str, Any]:
    """A session with its counts and the span of its exchanges (the sessions list)."""
    return {
        **session_json(info.session),
        "exchanges": info.exchanges,
        "events": info.events,
        "first_at": _iso(info.first_at),
        "last_at": _iso(info.last_at),
    }


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


def event_json(e: Event, *, reveal: bool = False) -> dict[str, Any]:
    return {
        "ordinal": e.ordinal,
        "kind": str(e.kind),
        "author": str(e.author),
        "text": e.text if reveal else mask(e.text),
        "timestamp": _iso(e.timestamp),
        "time_inferred": e.time_inferred,
        "tool_name": e.tool_name,
        "call_id": e.call_id,
        "payload": e.payload if reveal else mask_json(e.payload),
    }


def exchange_json(x: Exchange, *, reveal: bool = False) -> dict[str, Any]:
    return {
        "id": x.id,
        "first_ordinal": x.first_ordinal,
        "last_ordinal": x.last_ordinal,
        "user_text": x.user_text if reveal else mask(x.user_text),
        "assistant_text": x.assistant_text if reveal else mask(x.assistant_text),
        "tool_names": list(x.tool_names),
        "started_at": _iso(x.started_at),
        "ended_at": _iso(x.ended_at),
    }


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
