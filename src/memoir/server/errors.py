"""One error shape for every answer that is not a success::

    {"error": {"code": "not_found", "message": "no session 'x'"}}

Memoir's own errors are mapped by class (:data:`STATUS`); FastAPI's validation errors
(422), Starlette's 404/405, the body limit (413) and anything unexpected (500, its details
in the log only) are rendered the same way.
"""

from __future__ import annotations

import logging
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.routing import Match

from memoir.errors import (
    Busy,
    CompactionError,
    ConfigError,
    MemoirError,
    NotFound,
    OversizedHistory,
    ReadOnly,
    StoreError,
    SummaryError,
)
from memoir.jobs import AdmissionUnavailable

__all__ = ["ApiError", "error_body", "error_response", "install"]

log = logging.getLogger("memoir.server")

# most specific first: the first class an error is an instance of decides
STATUS: tuple[tuple[type[MemoirError], int, str], ...] = (
    (AdmissionUnavailable, 503, "admission_unavailable"),
    (NotFound, 404, "not_found"),
    (ReadOnly, 503, "read_only"),
    (StoreError, 503, "store_unavailable"),
    (Busy, 409, "busy"),
    (OversizedHistory, 409, "history_too_large"),
    (SummaryError, 409, "summary_failed"),
    # well-formed, but the sequence breaks the conversation's rules (alternation, a tool
    # result for each call) or leaves no room in the window: rules no JSON schema states
    (CompactionError, 409, "compaction_failed"),
    (ConfigError, 422, "invalid_request"),
)
_HTTP_CODES = {
    400: "bad_request",
    401: "unauthorized",
    403: "forbidden",
    404: "not_found",
    405: "method_not_allowed",
    409: "conflict",
    413: "body_too_large",
    415: "unsupported_media_type",
    422: "invalid_request",
    503: "unavailable",
}


class ApiError(Exception):
    """An answer other than success, raised by a route."""

    def __init__(self, status: int, code: str, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.code = code
        self.message = message


def error_body(code: str, message: str) -> dict[str, Any]:
    return {"error": {"code": code, "message": message}}


def error_response(
    status: int, code: str, message: str, headers: dict[str, str] | None = None
) -> JSONResponse:
    return JSONResponse(error_body(code, message), status_code=status, headers=headers)


def memoir_status(exc: MemoirError) -> tuple[int, str]:
    for cls, status, code in STATUS:
        if isinstance(exc, cls):
            return status, code
    return 409, "conflict"


def _where(request: Request) -> dict[str, Any]:
    """The log fields naming a request: its id, method, path and route (the template,
    ``/api/sessions/{session_id}/summary``, that groups a path's requests)."""
    route = request.scope.get("route")
    return {
        "request_id": getattr(request.state, "request_id", None),
        "method": request.method,
        "path": request.url.path,
        "route": getattr(route, "path", None),
    }


def _validation_message(exc: RequestValidationError, patterns: dict[str, str]) -> str:
    """What was refused, by name; a pattern said in words where ``patterns`` has them."""
    parts = []
    for err in exc.errors()[:5]:
        where = ".".join(str(p) for p in err.get("loc", ()) if p != "body") or "body"
        pattern = (err.get("ctx") or {}).get("pattern")
        msg = patterns.get(pattern) if isinstance(pattern, str) else None
        parts.append(f"{where}: {msg or err.get('msg', 'invalid')}")
    return "; ".join(parts) or "invalid request"


def allowed_methods(request: Request) -> str:
    """The methods of every route at the request's path (a 405's ``Allow``), sorted.
    Included routers are walked into (FastAPI keeps them whole, as ``original_router``)."""
    literal: set[str] = set()  # of routes whose path is this one, letter for letter
    templated: set[str] = set()  # of routes matching it through a parameter
    routes = list(request.app.router.routes)
    while routes:
        route = routes.pop()
        inner = getattr(route, "original_router", None)
        if inner is not None:
            routes.extend(inner.routes)
            continue
        match, _ = route.matches(request.scope)
        if match != Match.NONE:
            methods = set(getattr(route, "methods", None) or ())
            is_literal = "{" not in getattr(route, "path", "{")
            (literal if is_literal else templated).update(methods)
    # as OpenAPI reads paths: /api/memories/forget is its own path, not {item_id}'s
    return ", ".join(sorted(literal or templated))


def install(app: FastAPI, patterns: dict[str, str] | None = None) -> None:
    """Render every error in the one shape; ``patterns``: a parameter pattern → how a
    refusal says it in words."""
    said = dict(patterns or {})

    @app.exception_handler(ApiError)
    async def _api(request: Request, exc: ApiError) -> JSONResponse:
        headers = {"WWW-Authenticate": "Bearer"} if exc.status == 401 else None
        return error_response(exc.status, exc.code, exc.message, headers)

    @app.exception_handler(MemoirError)
    async def _memoir(request: Request, exc: MemoirError) -> JSONResponse:
        status, code = memoir_status(exc)
        message = str(exc) or type(exc).__name__
        if status == 503:  # an outage or a limit (the pool, a statement timeout): which route
            log.warning("%s: %s", code, message, extra=_where(request))
        return error_response(status, code, message)

    @app.exception_handler(RequestValidationError)
    async def _invalid(request: Request, exc: RequestValidationError) -> JSONResponse:
        return error_response(422, "invalid_request", _validation_message(exc, said))

    @app.exception_handler(StarletteHTTPException)
    async def _http(request: Request, exc: StarletteHTTPException) -> JSONResponse:
        code = _HTTP_CODES.get(exc.status_code, "error")
        message = exc.detail if isinstance(exc.detail, str) else code.replace("_", " ")
        headers = dict(getattr(exc, "headers", None) or {})
        if exc.status_code == 405:  # every method of the path, not only the first route's
            headers["Allow"] = allowed_methods(request)
        return error_response(exc.status_code, code, message, headers or None)

    @app.exception_handler(Exception)
    async def _unexpected(request: Request, exc: Exception) -> JSONResponse:
        log.error("unexpected error", exc_info=exc, extra=_where(request))
        return error_response(500, "internal", "internal error; the server log has the details")
