"""Liveness (the process answers) and readiness, for a load balancer.

``/readyz`` reports each dependency. Without the database a replica can serve nothing: it
is unready (503). Without Redis it still serves every read and append; only job admission
fails closed (503 on a regenerate). Such a replica stays ready (200) with ``status``
``degraded`` and what is off, so a Redis outage does not take every replica out of the
pool. docs/operations.md has the table."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Depends
from fastapi.responses import JSONResponse

from memoir import service
from memoir.app import Memoir
from memoir.server.auth import memoir_of
from memoir.server.errors import error_body
from memoir.server.routing import errors

__all__ = ["readiness", "router"]

router = APIRouter(tags=["health"])


@router.get("/healthz")
def healthz() -> dict[str, Any]:
    return {"data": {"status": "ok"}}


@router.get("/readyz", response_model=None, responses=errors(503))
def readyz(memoir: Memoir = Depends(memoir_of)) -> dict[str, Any] | JSONResponse:
    """Ready (200) when the database answers, ``degraded`` when only Redis does not (job
    admission off); unready (503) without the database."""
    checks: dict[str, str] = {}
    try:
        service.schema_version(memoir)
        checks["database"] = "ok"
    except Exception as exc:  # any failure means not ready; the answer says which
        checks["database"] = f"unreachable: {type(exc).__name__}"
    redis_url = getattr(memoir.settings, "redis_url", None)
    if redis_url:
        checks["redis"] = _ping_redis(str(redis_url))
    return readiness(checks)


def readiness(checks: dict[str, str]) -> dict[str, Any] | JSONResponse:
    """The answer for these dependency checks. Pure: the database decides readiness,
    Redis only degrades (``degraded`` names what is off while it is down)."""
    if checks.get("database") != "ok":
        body = error_body("not_ready", ", ".join(f"{k} {v}" for k, v in checks.items()))
        body["error"]["checks"] = checks
        return JSONResponse(body, status_code=503)
    off = ["job admission"] if checks.get("redis", "ok") != "ok" else []
    status = "degraded" if off else "ready"
    return {"data": {"status": status, "checks": checks, "degraded": off}}


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
