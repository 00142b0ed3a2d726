"""The route class of every ``/api`` route: how a JSON body is read, and which errors the
OpenAPI schema says a route can answer.

A route that takes a body reads it here, before FastAPI does: a non-empty body must say
``Content-Type: application/json`` (or ``…+json``; else 415) and parse with
:func:`memoir.server.body.parse_json` (else 422 ``invalid_request``, "the body is not valid
JSON: …"), so malformed, too deeply nested and non-UTF-8 bodies are refused alike. An
empty body is left to the route's schema (a required body is then 422, an optional one
absent).

Every ``/api`` operation documents the one error shape (:class:`Error`) for 401 and 422
and 503 (the store unreachable or read-only), 404 when the path names something, 413 and
415 when it takes a body; a route adds its own (409 …) with ``responses=errors(409)``.
"""

from __future__ import annotations

import email.message
from collections.abc import Callable, Coroutine
from typing import Any

from fastapi import Request, Response
from fastapi.dependencies.utils import get_dependant
from fastapi.routing import APIRoute
from pydantic import BaseModel, Field

from memoir.server.body import parse_json
from memoir.server.errors import ApiError

__all__ = ["Error", "ErrorDetail", "JsonRoute", "errors"]


class ErrorDetail(BaseModel):
    code: str = Field(description="A stable, machine-readable code, e.g. `not_found`.")
    message: str = Field(description="One sentence for a person, naming what to change.")


class Error(BaseModel):
    """Every answer that is not a success."""

    error: ErrorDetail


_WHY = {
    401: "No, a malformed, unknown or revoked API key (`unauthorized`).",
    404: "Nothing of yours by that id (`not_found`); another user's is not told apart.",
    409: "Not now, or not for this one: `busy`, `history_too_large`, `summary_failed`, `conflict`.",
    413: "The body is over the size limit (`body_too_large`).",
    415: "The body is not sent as `Content-Type: application/json` (`unsupported_media_type`).",
    422: "A field, parameter or body that is not valid, the message naming it "
    "(`invalid_request`, `compaction_failed`).",
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
    out = [401, 422, 503]
    if "{" in path:
        out.append(404)
    if takes_body:
        out += [413, 415]
    return tuple(sorted(out))


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
