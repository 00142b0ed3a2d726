"""The request plumbing: the one error shape, reading the JSON a client sent, the ASGI
middleware every request passes through, and the HTTP parser's checks.

Errors. One shape for every answer that is not a success::

    {"error": {"code": "not_found", "message": "no session 'x'"}}

Memoir's errors are mapped by class (:data:`STATUS`); FastAPI's validation errors (422),
Starlette's 404/405, the body limit (413) and anything unexpected (500, its details in
the log only) are rendered the same way. A route raises :class:`ApiError`.

Bodies and cursors. One parser for both (a ``ValueError`` with a plain reason, put in a
422): UTF-8 only, standard JSON only (no ``NaN``: no encoder could write it back), and at
most :data:`MAX_DEPTH` levels, well below the serializer's ~250 (answers echo what was
sent). What is read is made storable as sync does (:func:`memoir.model.event.scrub_deep`):
a lone UTF-16 surrogate becomes ``?`` and NUL becomes U+FFFD, in keys and values alike.

Middleware, as plain ASGI: a request id (the client's sane ``X-Request-Id``, else a new
one; echoed and logged), the body size limit (413 before the app reads anything), a 400
for a NUL byte in the path, the query or a header (no database stores it in text: the
caller's error on every backend, never an outage), and one JSON access log line.

Routes: a plain (sync) endpoint runs on the thread pool in one trip (:func:`on_a_thread`).
"""

from __future__ import annotations

import functools
import inspect
import json
import logging
import re
import time
import uuid
from collections.abc import Callable
from http import HTTPStatus
from typing import Any

from fastapi import FastAPI, Request
from fastapi.concurrency import run_in_threadpool
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
from memoir.model.event import scrub_deep

__all__ = [
    "DEFAULT_MAX_BODY",
    "HEAD_LIMIT",
    "MAX_DEPTH",
    "ApiError",
    "JsonFormatter",
    "RequestMiddleware",
    "depth_over",
    "error_body",
    "error_response",
    "http_protocol",
    "install_error_handlers",
    "nul_in_request",
    "on_a_thread",
    "parse_json",
    "scrubbed",
]

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
    """The log fields naming a request: id, method, path, route (``/api/sessions/{id}``)."""
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
    """The methods of every route at the request's path (a 405's ``Allow``), sorted; into
    included routers too (FastAPI keeps them whole, as ``original_router``)."""
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


def install_error_handlers(app: FastAPI, patterns: dict[str, str] | None = None) -> None:
    """Every error in the one shape; ``patterns``: a parameter pattern → it in words."""
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


MAX_DEPTH = 64


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a JSON number")


def depth_over(value: Any, limit: int) -> bool:
    """Is ``value`` nested deeper than ``limit`` levels (a scalar 0, ``[]`` 1, ``[{}]`` 2)?
    Walked without recursion, so any depth is measured."""
    if not isinstance(value, dict | list):
        return limit < 0
    stack: list[tuple[Any, int]] = [(value, 1)]
    while stack:
        item, level = stack.pop()
        if level > limit:
            return True
        children = item.values() if isinstance(item, dict) else item
        stack.extend((c, level + 1) for c in children if isinstance(c, dict | list))
    return False


def scrubbed(value: Any) -> Any:
    """``value`` with every string and key storable; on depth-checked values (it recurses)."""
    if isinstance(value, str):
        return scrub_deep(value)
    if isinstance(value, list):
        return [scrubbed(v) for v in value]
    if isinstance(value, dict):
        return {scrub_deep(k): scrubbed(v) for k, v in value.items()}
    return value


def parse_json(raw: bytes | str, *, max_depth: int = MAX_DEPTH) -> Any:
    """The JSON value of ``raw``, scrubbed; ``ValueError`` saying why it is not one."""
    try:
        text = raw.decode("utf-8") if isinstance(raw, bytes) else raw
    except UnicodeDecodeError as exc:
        raise ValueError(f"it is not UTF-8 text (byte {exc.start})") from None
    try:
        value = json.loads(text, parse_constant=_no_constant)
    except RecursionError:
        raise ValueError(f"it is nested deeper than {max_depth} levels") from None
    except json.JSONDecodeError as exc:
        raise ValueError(f"{exc.msg} (line {exc.lineno}, column {exc.colno})") from None
    # fewer brackets than the limit (counted in C, strings too) cannot be too deep
    shallow = text.count("[") + text.count("{") <= max_depth
    if not shallow and depth_over(value, max_depth):
        raise ValueError(f"it is nested deeper than {max_depth} levels")
    unchecked = isinstance(raw, str)  # a str may hold a lone surrogate itself
    return scrubbed(value) if unchecked or _ESCAPED_UNSTORABLE.search(text) else value


# a parsed string holds a NUL or a lone surrogate only from a ``\u`` escape (strict JSON
# refuses raw control characters; UTF-8 holds no surrogate): without one, nothing is copied
_ESCAPED_UNSTORABLE = re.compile(r"\\u(?:0000|[dD][89a-fA-F])")


DEFAULT_MAX_BODY = 8 * 1024 * 1024
_SANE_ID = re.compile(r"[A-Za-z0-9._:-]{1,128}")
access_log = logging.getLogger("memoir.server.access")
Scope = dict[str, Any]
AsgiMessage = dict[str, Any]


class JsonFormatter(logging.Formatter):
    """One JSON object a line: time, level, logger, message and the request's fields."""

    FIELDS = ("request_id", "method", "path", "route", "status", "ms", "user", "job_id")

    def format(self, record: logging.LogRecord) -> str:
        out: dict[str, Any] = {
            "ts": self.formatTime(record, "%Y-%m-%dT%H:%M:%S"),
            "level": record.levelname.lower(),
            "logger": record.name,
            "message": record.getMessage(),
        }
        for name in self.FIELDS:
            value = getattr(record, name, None)
            if value is not None:
                out[name] = value
        if record.exc_info:
            out["exc"] = self.formatException(record.exc_info)
        return json.dumps(out, ensure_ascii=False)


def nul_in_request(scope: Scope) -> str | None:
    """Which part of the request holds a NUL byte (``path``, ``query`` or ``header NAME``),
    or None. The path is the decoded one (``%00`` arrives as NUL); the query is checked
    raw and percent-encoded. Pure."""
    if "\x00" in scope.get("path", "") or "\x00" in scope.get("root_path", ""):
        return "path"
    query: bytes = scope.get("query_string", b"")
    if b"\x00" in query or b"%00" in query.lower():
        return "query"
    for name, value in scope.get("headers", ()):
        if b"\x00" in value or b"\x00" in name:
            return f"header {name.decode('latin-1', 'replace')}"
    return None


class RequestMiddleware:
    def __init__(self, app: Any, *, max_body: int = DEFAULT_MAX_BODY) -> None:
        self.app = app
        self.max_body = max_body

    async def __call__(self, scope: Scope, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope["headers"]}
        given = headers.get("x-request-id", "")
        request_id = given if _SANE_ID.fullmatch(given) else uuid.uuid4().hex
        scope.setdefault("state", {})["request_id"] = request_id
        started = time.perf_counter()
        status = {"code": 500}

        async def send_with_id(message: AsgiMessage) -> None:
            if message["type"] == "http.response.start":
                status["code"] = message["status"]
                message.setdefault("headers", [])
                message["headers"] = [
                    *message["headers"],
                    (b"x-request-id", request_id.encode()),
                ]
            await send(message)

        try:
            if (where := nul_in_request(scope)) is not None:
                await self._refuse(
                    send_with_id, 400, "bad_request", f"the request's {where} holds a NUL byte"
                )
                return
            body = await self._read_body(headers, receive)
            if body is None:
                await self._too_large(send_with_id)
                return
            replayed = False

            async def replay() -> AsgiMessage:
                nonlocal replayed
                if not replayed:
                    replayed = True
                    return {"type": "http.request", "body": body, "more_body": False}
                return await receive()  # the disconnect, when the client goes

            await self.app(scope, replay, send_with_id)
        finally:
            state = scope.get("state", {})
            access_log.info(
                "%s %s %s",
                scope.get("method"),
                scope.get("path"),
                status["code"],
                extra={
                    "request_id": request_id,
                    "method": scope.get("method"),
                    "path": scope.get("path"),
                    "route": getattr(scope.get("route"), "path", None),  # set by routing
                    "status": status["code"],
                    "ms": round((time.perf_counter() - started) * 1000, 2),
                    "user": state.get("user"),
                },
            )

    async def _read_body(self, headers: dict[str, str], receive: Any) -> bytes | None:
        """The whole body, or None when it is (or says it is) over the limit."""
        declared = headers.get("content-length")
        if declared is not None and declared.isdigit() and int(declared) > self.max_body:
            return None
        chunks: list[bytes] = []
        size = 0
        while True:
            message = await receive()
            if message["type"] != "http.request":
                break
            chunk = message.get("body", b"")
            size += len(chunk)
            if size > self.max_body:
                return None
            chunks.append(chunk)
            if not message.get("more_body", False):
                break
        return b"".join(chunks)

    async def _too_large(self, send: Any) -> None:
        limit = f"{self.max_body / 1024 / 1024:g} MB"
        await self._refuse(
            send, 413, "body_too_large", f"the request body is over the {limit} limit"
        )

    async def _refuse(self, send: Any, status: int, code: str, message: str) -> None:
        """An error answer before the app runs; the connection closes (body maybe unread)."""
        payload = json.dumps(error_body(code, message)).encode()
        await send(
            {
                "type": "http.response.start",
                "status": status,
                "headers": [
                    (b"content-type", b"application/json"),
                    (b"content-length", str(len(payload)).encode()),
                    (b"connection", b"close"),
                ],
            }
        )
        await send({"type": "http.response.body", "body": payload})


def on_a_thread(endpoint: Callable[..., Any]) -> Callable[..., Any]:
    """A plain endpoint as a coroutine running it on the thread pool: FastAPI then checks
    its answer on the loop, not in a second trip to a thread."""
    if inspect.iscoroutinefunction(endpoint):
        return endpoint

    @functools.wraps(endpoint)
    async def on_a_thread(*args: Any, **kwargs: Any) -> Any:
        return await run_in_threadpool(endpoint, *args, **kwargs)

    return on_a_thread


# the wire: what uvicorn's parser checks before the app --------------------------------
HEAD_LIMIT = 64 * 1024  # the most bytes of a request head (request line and headers)


def http_protocol() -> type[Any]:
    """uvicorn's httptools protocol (llhttp, in C) with what h11 checked and it does not: a
    head over :data:`HEAD_LIMIT` is refused (431) as it arrives, never buffered whole; so
    is (400) an HTTP/1.1 request without exactly one ``Host``, and any version but 1.0 and
    1.1. llhttp itself refuses ``Transfer-Encoding`` beside ``Content-Length``."""
    from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

    class GuardedHttp(HttpToolsProtocol):
        head = hosts = fields = 0  # head bytes received, Host headers, head bytes parsed
        in_head = True

        def data_received(self, data: bytes) -> None:
            if self.transport.is_closing():  # refused: nothing more is read
                return
            was_in_head = self.in_head
            super().data_received(data)
            if was_in_head and self.in_head and not self.transport.is_closing():
                self.head += len(data)  # all of it was head, and the head goes on
                if self.head > HEAD_LIMIT:
                    self._refuse(431, "header_too_large", "the request head is too large")

        def on_message_begin(self) -> None:
            super().on_message_begin()
            self.head, self.in_head, self.hosts, self.fields = 0, True, 0, 0

        def on_url(self, url: bytes) -> None:
            self.fields += len(url)
            super().on_url(url)

        def on_header(self, name: bytes, value: bytes) -> None:
            self.fields += len(name) + len(value) + 4  # ": " and CRLF
            self.hosts += name.lower() == b"host"
            super().on_header(name, value)

        def on_headers_complete(self) -> None:
            self.in_head = False
            version = self.parser.get_http_version()
            if self.fields > HEAD_LIMIT:  # came in one read, so not refused as it came
                self._refuse(431, "header_too_large", "the request head is too large")
            elif version not in ("1.0", "1.1"):
                self._refuse(400, "bad_request", f"HTTP/{version} is not served")
            elif self.hosts > 1 or (version == "1.1" and not self.hosts):
                self._refuse(400, "bad_request", "a request needs one Host header")
            else:
                super().on_headers_complete()
                return
            raise ConnectionAbortedError  # stops the parser; uvicorn's 400 is not sent

        def send_400_response(self, msg: str) -> None:
            if not self.transport.is_closing():  # not refused already
                super().send_400_response(msg)

        def _refuse(self, status: int, code: str, message: str) -> None:
            body = json.dumps(error_body(code, message)).encode()
            self.transport.write(
                b"HTTP/1.1 %d %s\r\ncontent-type: application/json\r\ncontent-length: %d\r\n"
                b"connection: close\r\n\r\n%s"
                % (status, HTTPStatus(status).phrase.encode(), len(body), body)
            )
            self.transport.close()

    return GuardedHttp
