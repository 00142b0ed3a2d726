"""Liveness (the process answers) and readiness (the database answers; Redis too when
one is configured)."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Depends
from fastapi.responses import JSONResponse

from memoir.app import Memoir
from memoir.server.auth import memoir_of
from memoir.server.errors import error_body
from memoir.server.routing import errors

__all__ = ["router"]

router = APIRouter(tags=["health"])


@router.get("/healthz")
def healthz() -> dict[str, Any]:
    return {"data": {"status": "ok"}}


@router.get("/readyz", response_model=None, responses=errors(503))
def readyz(memoir: Memoir = Depends(memoir_of)) -> dict[str, Any] | JSONResponse:
    checks: dict[str, str] = {}
    try:
        memoir.store.schema_version()
        checks["database"] = "ok"
    except Exception as exc:  # any failure means not ready; the answer says which
        checks["database"] = f"unreachable: {type(exc).__name__}"
    redis_url = getattr(memoir.settings, "redis_url", None)
    if redis_url:
        checks["redis"] = _ping_redis(str(redis_url))
    if any(v != "ok" for v in checks.values()):
        body = error_body("not_ready", ", ".join(f"{k} {v}" for k, v in checks.items()))
        body["error"]["checks"] = checks
        return JSONResponse(body, status_code=503)
    return {"data": {"status": "ready", "checks": checks}}


def _ping_redis(url: str) -> str:
    try:
        import redis
    except ImportError:
        return "unavailable: the redis extra is not installed"
    try:
        client = redis.Redis.from_url(url, socket_connect_timeout=2, socket_timeout=2)
        try:
            client.ping()
        finally:
            client.close()
        return "ok"
    except Exception as exc:  # redis.RedisError, OSError …
        return f"unreachable: {type(exc).__name__}"
