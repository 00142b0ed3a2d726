"""The FastAPI application over one :class:`~memoir.app.Memoir`.

``create_app(memoir)`` serves a Memoir the caller opened (and closes); ``create_app(
settings=…)`` opens one from settings when the server starts and closes it when it stops.
The API is under ``/api``; the web page (:mod:`memoir.server.web`) at ``/``.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

from fastapi import FastAPI

from memoir.app import Memoir
from memoir.config import Settings
from memoir.server import docs, errors
from memoir.server.middleware import DEFAULT_MAX_BODY, RequestMiddleware
from memoir.server.routes import ROUTERS
from memoir.server.routing import PATTERNS, no_nul
from memoir.server.web import router as web_router

__all__ = ["create_app"]


def create_app(
    memoir: Memoir | None = None,
    *,
    settings: Settings | None = None,
    max_body: int = DEFAULT_MAX_BODY,
) -> FastAPI:
    """The API over ``memoir`` (else a Memoir opened from ``settings``, or from the
    environment, at start-up). ``max_body``: the largest request body, bytes (413 past it)."""
    owned = memoir is None

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        if app.state.memoir is None:
            app.state.memoir = Memoir.open(settings)
        try:
            yield
        finally:
            if owned and app.state.memoir is not None:
                app.state.memoir.close()
                app.state.memoir = None

    app = FastAPI(
        title="Memoir",
        summary="A memory engine for LLM conversations, over HTTP.",
        version="0.1.0",
        lifespan=lifespan,
        # /api/sessions/ is not /api/sessions: a 404, never a redirect built from the
        # Host header the client sent
        redirect_slashes=False,
        # served from this server (memoir.server.docs): FastAPI's pages load from a CDN
        docs_url=None,
        redoc_url=None,
    )
    app.state.memoir = memoir
    errors.install(app, PATTERNS)
    for router in ROUTERS:
        app.include_router(router)
    app.include_router(docs.router)
    app.include_router(web_router)
    app.add_middleware(RequestMiddleware, max_body=max_body)
    built = app.openapi

    def openapi() -> dict[str, Any]:
        if app.openapi_schema is None:
            app.openapi_schema = no_nul(built())
        return app.openapi_schema

    app.openapi = openapi  # type: ignore[method-assign]
    return app
