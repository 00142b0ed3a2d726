"""What goes over the wire: the request bodies the routes read, and Memoir's values as the
JSON they answer with (with the opaque cursors lists page with).

Bodies. Unknown fields are refused (422), so a typo is never silently ignored; values are
read strictly, as their schema says (``0`` is not ``false``, ``"5"`` not 5; a whole number
is an integer, ``5.0`` as well as ``5``, as JSON Schema counts them).

Answers. Transcript text (an event's text and payload, an exchange's prompt and reply) is
masked unless ``reveal``: each secret shown as its placeholder (:func:`memoir.secrets.mask`).
A route scopes every read to the caller's own sessions, so ``reveal=true`` shows the caller
their own secrets; the stored text is never changed.
"""

from __future__ import annotations

import base64
import binascii
import json
import re
from datetime import datetime
from typing import Annotated, Any, Literal

from annotated_types import Ge
from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, field_validator, model_validator
from pydantic_core import PydanticCustomError

from memoir.ingest.records import parse_ts
from memoir.model import Event, Exchange, Session, SessionInfo
from memoir.secrets import mask, mask_json
from memoir.server.plumbing import ApiError, parse_json
from memoir.server.routing import LAST_EPOCH_MS, STAMP
from memoir.summaries.state import Coverage

__all__ = [
    "REVEAL",
    "CompactBody",
    "EventsBody",
    "Message",
    "NewSession",
    "RememberBody",
    "coverage_json",
    "decode_cursor",
    "encode_cursor",
    "event_json",
    "exchange_json",
    "no_page",
    "page_after",
    "session_info_json",
    "session_json",
    "stores_something",
]

# no ":": an exchange id is SESSION:N, so a session id holding one could be read as
# another session's exchange (`memoir show`, the MCP `read` tool)
_ID = r"^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$"


def _whole(value: object) -> object:
    """A JSON integer: an int, or a float with no fraction (JSON Schema's rule); not a
    bool, not a string. Anything else is left for the strict check to refuse."""
    if isinstance(value, float) and value.is_integer() and abs(value) < 2**63:
        return int(value)
    return value


Whole = Annotated[int, BeforeValidator(_whole)]


class _Body(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)


class NewSession(_Body):
    id: str | None = Field(
        default=None,
        pattern=_ID,
        description="Your name for it (else Memoir chooses an id): letters, digits, `.`, `_` "
        "and `-`, at most 128 characters; no `:` (exchange ids are `SESSION:N`). Names are "
        "yours alone: the session is stored under an id derived from your user and the "
        "name, answered as `id`, and either works in every URL.",
    )
    project: str | None = Field(default=None, min_length=1, max_length=200)
    incognito: bool = False
    memory_disabled: bool = False

    @field_validator("id", mode="before")
    @classmethod
    def _no_colon(cls, value: object) -> object:
        # said plainly, before the pattern's "should match ^[A-Za-z0-9]…" would
        if isinstance(value, str) and ":" in value:
            raise PydanticCustomError(
                "session_id",
                "a session id may not contain ':' (exchange ids are SESSION:N, so "
                "'{value}' would read as an exchange of another session); use '-' or '.'",
                {"value": value[:140]},
            )
        return value


_TEXT_TYPES = ("text", "input_text", "output_text")
_TEXT_PART = {
    "anyOf": [
        {"type": "string", "minLength": 1},
        {
            "type": "object",
            "required": ["type", "text"],
            "properties": {"type": {"enum": list(_TEXT_TYPES)}, "text": {"not": {"const": ""}}},
        },
    ]
}
_OTHER_PART = {
    "type": "object",
    "not": {"required": ["type"], "properties": {"type": {"enum": list(_TEXT_TYPES)}}},
}
_HAS_TEXT = {
    "required": ["content"],
    "properties": {
        "content": {
            "anyOf": [
                {"type": "string", "minLength": 1},
                {"type": "array", "contains": _TEXT_PART},
            ]
        }
    },
}
_HAS_PART = {
    "required": ["content"],
    "properties": {"content": {"type": "array", "contains": _OTHER_PART}},
}
_HAS_CALL = {
    "required": ["tool_calls"],
    "properties": {"tool_calls": {"type": "array", "minItems": 1}},
}
# what a message must hold to be stored, by role (the schema's words for _stores_something)
_SOMETHING: dict[str, Any] = {
    "anyOf": [
        {"properties": {"role": {"enum": ["tool", "function"]}}},
        {"properties": {"role": {"const": "user"}}, "anyOf": [_HAS_TEXT, _HAS_PART]},
        {"properties": {"role": {"const": "assistant"}}, "anyOf": [_HAS_TEXT, _HAS_CALL]},
        {"properties": {"role": {"enum": ["system", "developer"]}}, **_HAS_TEXT},
    ]
}


def _is_text_part(part: object) -> bool:
    return isinstance(part, dict) and part.get("type") in _TEXT_TYPES


def _has_text(content: object) -> bool:
    if isinstance(content, str):
        return content != ""
    if not isinstance(content, list):
        return False
    return any(
        (isinstance(p, str) and p != "") or (_is_text_part(p) and p.get("text", "") != "")
        for p in content
    )


def stores_something(role: str, content: object, tool_calls: object) -> bool:
    """Does a message of ``role`` with this content and these tool calls make an event?
    (Tool results always do; a user's non-text part does; an assistant's tool call does.)
    The schema states the same rule (``_SOMETHING``). Pure."""
    if role in ("tool", "function"):
        return True
    if _has_text(content):
        return True
    if role == "user":
        return isinstance(content, list) and any(
            isinstance(p, dict) and not _is_text_part(p) for p in content
        )
    return role == "assistant" and isinstance(tool_calls, list) and len(tool_calls) > 0


class Message(_Body):
    """An OpenAI-style chat message, with your own ``id`` for it (a retried batch stores a
    message of a known id nothing twice). It must hold something to store: text, a part
    (a user's image or file) or a tool call (an assistant's); a tool result always does."""

    model_config = ConfigDict(json_schema_extra=_SOMETHING)

    role: Literal["user", "assistant", "tool", "function", "system", "developer"]
    content: str | list[dict[str, Any] | str] | None = None
    id: str | None = Field(default=None, min_length=1, max_length=200)
    name: str | None = Field(default=None, max_length=200)
    tool_calls: list[dict[str, Any]] | None = None
    tool_call_id: str | None = Field(default=None, max_length=200)
    timestamp: (
        Annotated[str, Field(pattern=STAMP)]
        | Annotated[float, Field(gt=0, le=LAST_EPOCH_MS)]
        | None
    ) = Field(
        default=None,
        description="When it was said: an ISO-8601 date or time (UTC unless it says), or "
        "epoch seconds or milliseconds.",
    )

    @model_validator(mode="after")
    def _something(self) -> Message:
        if not stores_something(self.role, self.content, self.tool_calls):
            raise PydanticCustomError(
                "no_content",
                "a {role} message with nothing to store: send text, content parts or tool calls",
                {"role": self.role},
            )
        return self

    @field_validator("timestamp", mode="before")
    @classmethod
    def _a_time(cls, value: object) -> object:
        # the reader drops a time it cannot read (parse_ts → None): refused here instead
        if value is not None and parse_ts(value) is None:
            raise PydanticCustomError(
                "timestamp",
                "not a time: send an ISO-8601 date or time, or epoch seconds or "
                "milliseconds after 1970",
            )
        return value


class EventsBody(_Body):
    messages: list[Message] = Field(min_length=1, max_length=5000)


class CompactBody(_Body):
    window: Whole = Field(gt=0, le=10_000_000, description="The model's context window, tokens.")
    messages: list[dict[str, Any]] | None = Field(
        default=None, description="The context to compact (default: the session's events)."
    )


class RememberBody(_Body):
    turn: Annotated[int, Ge(1), BeforeValidator(_whole)] | None = Field(
        default=None,
        description="The event ordinal of one of its user messages (default: the last); "
        "404 for another event.",
    )


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
