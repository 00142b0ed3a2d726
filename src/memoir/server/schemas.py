"""What goes over the wire: how a route reads its body and documents its errors, the request
bodies the routes read, and Memoir's values as the JSON they answer with.

The route class of every ``/api`` route (:class:`JsonRoute`). A route that takes a body
reads it here, before FastAPI does: a non-empty body must say ``Content-Type:
application/json`` (or ``…+json``; else 415) and parse with
:func:`memoir.server.plumbing.parse_json` (else 422 ``invalid_request``, "the body is not
valid JSON: …"), so malformed, too deeply nested and non-UTF-8 bodies are refused alike. An
empty body is left to the route's schema (a required body is then 422, an optional one
absent). Every ``/api`` operation documents the one error shape (:class:`Error`) for 400,
401, 422 and 503 (the store unreachable or read-only), 404 when the path names something,
413 and 415 when it takes a body; a route adds its own (409 …) with
``responses=errors(409)``.

The schema states every rule a parameter is held to, so a client generated from it sends
nothing the server refuses: :data:`WHEN` is the dates the API reads, :data:`ORDINAL` an
events or exchanges cursor, and :func:`no_nul` adds to every other string parameter that
it holds no NUL byte (which the middleware refuses with 400).

Bodies. Unknown fields are refused (422), so a typo is never silently ignored; values are
read strictly, as their schema says (``0`` is not ``false``, ``"5"`` not 5; a whole number
is an integer, ``5.0`` as well as ``5``, as JSON Schema counts them).

Answers. Transcript text (an event's text and payload, an exchange's prompt and reply) is
masked unless ``reveal``: each secret shown as its placeholder (:func:`memoir.secrets.mask`).
A route scopes every read to the caller's own sessions, so ``reveal=true`` shows the caller
their own secrets; the stored text is never changed.
"""

from __future__ import annotations

import email.message
import functools
from collections.abc import Callable, Coroutine
from datetime import datetime
from typing import Annotated, Any, Literal

from annotated_types import Ge
from fastapi import Request, Response
from fastapi.dependencies.utils import get_dependant
from fastapi.routing import APIRoute
from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, field_validator, model_validator
from pydantic_core import PydanticCustomError

from memoir.ingest.records import parse_ts
from memoir.model import Event, Exchange, Session, SessionInfo
from memoir.secrets import mask, mask_json
from memoir.server.plumbing import ApiError, on_a_thread, parse_json

__all__ = [
    "LAST_EPOCH_MS",
    "OPAQUE",
    "ORDINAL",
    "PATTERNS",
    "REVEAL",
    "STAMP",
    "WHEN",
    "CompactBody",
    "Error",
    "ErrorDetail",
    "EventsBody",
    "JsonRoute",
    "Message",
    "NewSession",
    "RememberBody",
    "errors",
    "event_json",
    "exchange_json",
    "no_nul",
    "session_info_json",
    "session_json",
    "stores_something",
]

# a date or time the API reads: YYYY-MM-DD (a real day), YYYY-MM, or an ISO 8601 time of
# a day (UTC unless it names a zone); years 1000 to 9998, so no zone moves it out of range
_YEAR = "(?:1[0-9]{3}|[2-8][0-9]{3}|9[0-8][0-9]{2}|99[0-8][0-9]|999[0-8])"

_LEAP = "(?:[1-9][0-9](?:0[48]|[2468][048]|[13579][26])|(?:[2468][048]|[13579][26])00)"

_DAY = (
    f"(?:{_YEAR}-(?:0[1-9]|1[0-2])-(?:0[1-9]|1[0-9]|2[0-8])"
    f"|{_YEAR}-(?:0[13-9]|1[0-2])-(?:29|30)"
    f"|{_YEAR}-(?:0[13578]|1[02])-31"
    f"|{_LEAP}-02-29)"
)

_TIME = "(?:[01][0-9]|2[0-3]):[0-5][0-9](?::[0-5][0-9](?:\\.[0-9]{1,6})?)?"

_ZONE = "(?:Z|[+-](?:[01][0-9]|2[0-3]):[0-5][0-9])"

WHEN = f"^(?:{_DAY}(?:T{_TIME}{_ZONE}?)?|{_YEAR}-(?:0[1-9]|1[0-2]))$"

STAMP = f"^{_DAY}(?:T{_TIME}{_ZONE}?)?$"  # a message's time: a day, or a time of one

LAST_EPOCH_MS = 253_402_300_799_999  # 9999-12-31T23:59:59.999Z; past 1e11 a number is ms

WHEN_HELP = (
    "YYYY-MM-DD, YYYY-MM or an ISO 8601 time such as 2024-05-01T14:30Z (UTC unless it "
    "names a zone), years 1000 to 9998"
)

ORDINAL = "^[0-9]{1,18}$"  # an events or exchanges cursor: the ordinal a page ends at

OPAQUE = "^[A-Za-z0-9_-]{1,1000}$"  # a sessions cursor: base64url, made by this API

NO_NUL = "^[^\\x00]*$"

PATTERNS = {
    WHEN: f"not a date: use {WHEN_HELP}",
    STAMP: "not a time: send YYYY-MM-DD or an ISO 8601 time such as 2024-05-01T14:30Z, "
    "years 1000 to 9998, or epoch seconds or milliseconds",
    ORDINAL: "not a cursor this API gave",
    OPAQUE: "not a cursor this API gave",
}


class ErrorDetail(BaseModel):
    code: str = Field(description="A stable, machine-readable code, e.g. `not_found`.")
    message: str = Field(description="One sentence for a person, naming what to change.")


class Error(BaseModel):
    """Every answer that is not a success."""

    error: ErrorDetail


_WHY = {
    400: "A NUL byte in the path, the query or a header (`bad_request`).",
    401: "No, a malformed, unknown or revoked API key (`unauthorized`).",
    404: "Nothing of yours by that id (`not_found`); another user's is not told apart.",
    409: "Not now, or not for this one: `busy`, `history_too_large`, `summary_failed`, "
    "`compaction_failed` (the messages break the conversation's rules or leave no room in "
    "the window), `conflict`.",
    413: "The body is over the size limit (`body_too_large`).",
    415: "The body is not sent as `Content-Type: application/json` (`unsupported_media_type`).",
    422: "A field, parameter or body that is not valid, the message naming it (`invalid_request`).",
    503: "The store cannot be reached or is read-only, or job admission is down "
    "(`store_unavailable`, `read_only`, `admission_unavailable`, `not_ready`).",
}


def errors(*statuses: int) -> dict[int | str, dict[str, Any]]:
    """OpenAPI ``responses`` for these error statuses, each with the :class:`Error` shape."""
    return {s: {"model": Error, "description": _WHY.get(s, "An error.")} for s in statuses}


def _takes_body(path: str, endpoint: Callable[..., Any]) -> bool:
    return bool(get_dependant(path=path, call=endpoint).body_params)


def documented(path: str, takes_body: bool) -> tuple[int, ...]:
    """The error statuses every route of this shape can answer."""
    if not path.startswith("/api"):
        return ()
    out = [400, 401, 422, 503]
    if "{" in path:
        out.append(404)
    if takes_body:
        out += [413, 415]
    return tuple(sorted(out))


def no_nul(schema: dict[str, Any]) -> dict[str, Any]:
    """``schema`` (an OpenAPI document) with :data:`NO_NUL` on every string parameter that
    has no pattern of its own (and on the items of string arrays)."""

    def mark(node: Any) -> None:
        if not isinstance(node, dict):
            return
        if node.get("type") == "string" and "pattern" not in node and "enum" not in node:
            node["pattern"] = NO_NUL
        for key in ("anyOf", "oneOf"):
            for option in node.get(key, ()):
                mark(option)
        mark(node.get("items"))

    for operations in schema.get("paths", {}).values():
        for operation in operations.values():
            for parameter in operation.get("parameters", ()):
                mark(parameter.get("schema"))
    return schema


@functools.lru_cache(maxsize=64)  # a client sends the same few: parsed once each
def _is_json(content_type: str | None) -> bool:
    if not content_type:
        return False
    message = email.message.Message()
    message["content-type"] = content_type
    subtype = message.get_content_subtype()
    return message.get_content_maintype() == "application" and (
        subtype == "json" or subtype.endswith("+json")
    )


async def read_json_body(request: Request) -> Any:
    """Parse the request's body for FastAPI (which then takes this value; None for none)
    or refuse it (415, 422)."""
    raw = await request.body()
    if not raw:
        return None
    if not _is_json(request.headers.get("content-type")):
        raise ApiError(
            415,
            "unsupported_media_type",
            "send the body as JSON, with the header Content-Type: application/json",
        )
    try:
        value = parse_json(raw)
    except ValueError as exc:
        raise ApiError(422, "invalid_request", f"the body is not valid JSON: {exc}") from None
    request._json = value  # Starlette's cache of request.json(), which FastAPI reads
    return value


class JsonRoute(APIRoute):
    def __init__(self, path: str, endpoint: Callable[..., Any], **kwargs: Any) -> None:
        responses = dict(kwargs.pop("responses", None) or {})
        for status, doc in errors(*documented(path, _takes_body(path, endpoint))).items():
            responses.setdefault(status, doc)
        super().__init__(path, on_a_thread(endpoint), responses=responses, **kwargs)

    def get_route_handler(self) -> Callable[[Request], Coroutine[Any, Any, Response]]:
        handler = super().get_route_handler()
        if self.body_field is None:
            return handler

        async def with_json_body(request: Request) -> Response:
            await read_json_body(request)
            return await handler(request)

        return with_json_body


# bodies and answers -------------------------------------------------------------------


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
