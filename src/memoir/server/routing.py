"""The route class of every ``/api`` route: how a JSON body is read, and which errors the
OpenAPI schema says a route can answer.

A route that takes a body reads it here, before FastAPI does: a non-empty body must say
``Content-Type: application/json`` (or ``…+json``; else 415) and parse with
:func:`memoir.server.plumbing.parse_json` (else 422 ``invalid_request``, "the body is not valid
JSON: …"), so malformed, too deeply nested and non-UTF-8 bodies are refused alike. An
empty body is left to the route's schema (a required body is then 422, an optional one
absent).

Every ``/api`` operation documents the one error shape (:class:`Error`) for 400, 401, 422
and 503 (the store unreachable or read-only), 404 when the path names something, 413 and
415 when it takes a body; a route adds its own (409 …) with ``responses=errors(409)``.

The schema states every rule a parameter is held to, so a client generated from it sends
nothing the server refuses: :data:`WHEN` is the dates the API reads, :data:`ORDINAL` an
events or exchanges cursor, and :func:`no_nul` adds to every other string parameter that
it holds no NUL byte (which the middleware refuses with 400).
"""

from __future__ import annotations

import email.message
from collections.abc import Callable, Coroutine
from typing import Any

from fastapi import Request, Response
from fastapi.dependencies.utils import get_dependant
from fastapi.routing import APIRoute
from pydantic import BaseModel, Field

from memoir.server.plumbing import ApiError, parse_json

__all__ = [
    "LAST_EPOCH_MS",
    "OPAQUE",
    "ORDINAL",
    "PATTERNS",
    "STAMP",
    "WHEN",
    "Error",
    "ErrorDetail",
    "JsonRoute",
    "errors",
    "no_nul",
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


def _is_json(content_type: str | None) -> bool:
    if not content_type:
        return False
    message = email.message.Message()
    message["content-type"] = content_type
    subtype = message.get_content_subtype()
    return message.get_content_maintype() == "application" and (
        subtype == "json" or subtype.endswith("+json")
    )


async def read_json_body(request: Request) -> None:
    """Parse the request's body for FastAPI (which then takes this value) or refuse it."""
    raw = await request.body()
    if not raw:
        return
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


class JsonRoute(APIRoute):
    def __init__(self, path: str, endpoint: Callable[..., Any], **kwargs: Any) -> None:
        responses = dict(kwargs.pop("responses", None) or {})
        for status, doc in errors(*documented(path, _takes_body(path, endpoint))).items():
            responses.setdefault(status, doc)
        super().__init__(path, endpoint, responses=responses, **kwargs)

    def get_route_handler(self) -> Callable[[Request], Coroutine[Any, Any, Response]]:
        handler = super().get_route_handler()
        if self.body_field is None:
            return handler

        async def with_json_body(request: Request) -> Response:
            await read_json_body(request)
            return await handler(request)

        return with_json_body
