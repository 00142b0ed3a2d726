"""What every request passes through, as plain ASGI: a request id (the client's
``X-Request-Id`` when it sent a sane one, else a new one; echoed on the answer and named in
the log line), the body size limit (413 before the application reads anything), a 400 for a
NUL byte in the path, the query or a header (no database can store it in a text column, and
PostgreSQL's driver refuses it outright: the caller's error on every backend, never an
outage), and one structured access log line per request."""

from __future__ import annotations

import json
import logging
import re
import time
import uuid
from typing import Any

from memoir.server.errors import error_body

__all__ = ["DEFAULT_MAX_BODY", "JsonFormatter", "RequestMiddleware", "nul_in_request"]

DEFAULT_MAX_BODY = 8 * 1024 * 1024
_SANE_ID = re.compile(r"[A-Za-z0-9._:-]{1,128}")
log = logging.getLogger("memoir.server.access")

Scope = dict[str, Any]
Message = dict[str, Any]


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

        async def send_with_id(message: Message) -> None:
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

            async def replay() -> Message:
                nonlocal replayed
                if not replayed:
                    replayed = True
                    return {"type": "http.request", "body": body, "more_body": False}
                return await receive()  # the disconnect, when the client goes

            await self.app(scope, replay, send_with_id)
        finally:
            state = scope.get("state", {})
            log.info(
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
        """An error answer before the application runs, in the usual shape; the
        connection is closed (the body may be unread)."""
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
