"""The HTTP API (``memoir serve``): a thin adapter over :class:`memoir.app.Memoir` — the
FastAPI application, and what it serves besides ``/api``: its docs page, its health
probes, and the web page with its sign-in.

``create_app(memoir)`` serves a Memoir the caller opened (and closes); ``create_app(
settings=…)`` opens one from settings when the server starts and closes it when it stops;
``memoir.cli.cmd_serve`` runs it under uvicorn. Every route is scoped to the user its Bearer
key belongs to (:mod:`memoir.server.auth`); every error has one shape
(:mod:`memoir.server.plumbing`). The API is under ``/api`` (:data:`ROUTERS`, one router per
resource, in order); the web page at ``/``.

``/docs``: Swagger UI over ``/openapi.json``, served from this server only. FastAPI's own
page loads Swagger UI from a CDN; Memoir runs offline, so its files come from the
``fastapi-swagger`` package (the ``server`` extra: Swagger UI 5, which reads the OpenAPI
3.1 FastAPI writes; the ``swagger-ui-bundle`` package's 4.x cannot) under
``/docs/assets/`` — only the three the page loads, read once per process. Without it,
``/docs`` is a small page of its own listing the routes of the OpenAPI schema (no script,
no other host). ReDoc has no offline copy to serve: ``/redoc`` is not served. Both answers
carry the page's own security headers (a Content-Security-Policy with no inline script and
no other host): FastAPI's Swagger page starts Swagger UI from an inline script, so this one
is a document of its own whose start-up script is one more asset,
``/docs/assets/start.js``.

Liveness (``/healthz``: the process answers) and readiness (``/readyz``), for a load
balancer. ``/readyz`` reports each dependency. Without the database a replica can serve
nothing: it is unready (503). Without Redis it still serves every read and append; only
job admission fails closed (503 on a regenerate). Such a replica stays ready (200) with
``status`` ``degraded`` and what is off, so a Redis outage does not take every replica out
of the pool. docs/operations.md has the table.

The web page: a small single-page application written by hand (ES modules, one
stylesheet, no build step, nothing loaded from elsewhere) over the same ``/api`` routes any
client uses, with the caller's key kept in the browser's session storage. Its paths
answer ``index.html`` (the application routes in the browser), and ``/static/NAME`` the
assets shipped in ``web/static/`` (package data) — read once per process from the package
(``importlib.resources``, so an installed wheel serves what it ships), only the files that
are there (no path is joined from the request), with an ETag, and a
Content-Security-Policy that allows this origin only: no inline script, no other host, no
framing. ``POST /login`` trades a sign-in link's one-time token (:mod:`memoir.server.auth`)
for a page key, ``POST /logout`` ends a page key; they sit outside ``/api``, where every
route needs a key.
"""

from __future__ import annotations

import hashlib
import html
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from functools import lru_cache
from importlib import resources
from importlib.abc import Traversable
from typing import Any

from fastapi import APIRouter, Depends, FastAPI, Request, Response
from fastapi.responses import HTMLResponse, JSONResponse
from fastapi.security.utils import get_authorization_scheme_param
from pydantic import BaseModel, ConfigDict, Field

from memoir import service
from memoir.app import Memoir
from memoir.config import Settings
from memoir.server import plumbing
from memoir.server.auth import (
    PAGE_KEY_PREFIX,
    KeyUsers,
    is_loopback,
    memoir_of,
    sign_in_links,
)
from memoir.server.plumbing import DEFAULT_MAX_BODY, ApiError, RequestMiddleware, error_body
from memoir.server.schemas import PATTERNS, JsonRoute, errors, no_nul
from memoir.server.search_routes import memories_router, search_router, usage_router
from memoir.server.session_routes import compact_router, sessions_router, summary_router

__all__ = [
    "ASSETS",
    "PAGES",
    "ROUTERS",
    "SECURITY_HEADERS",
    "create_app",
    "docs_router",
    "health_router",
    "page_assets",
    "readiness",
    "web_router",
]


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
        # served from this server (memoir.server): FastAPI's pages load from a CDN
        docs_url=None,
        redoc_url=None,
    )
    app.state.memoir = memoir
    app.state.key_users = KeyUsers()
    plumbing.install_error_handlers(app, PATTERNS)
    for router in ROUTERS:
        app.include_router(router)
    app.include_router(docs_router)
    app.include_router(web_router)
    app.add_middleware(RequestMiddleware, max_body=max_body)
    built = app.openapi

    def openapi() -> dict[str, Any]:
        if app.openapi_schema is None:
            app.openapi_schema = no_nul(built())
        return app.openapi_schema

    app.openapi = openapi  # type: ignore[method-assign]
    return app


ASSETS = {  # what the page loads: its name under /docs/assets/ → media type
    "swagger-ui-bundle.js": "text/javascript; charset=utf-8",
    "swagger-ui.css": "text/css; charset=utf-8",
    "favicon-32x32.png": "image/png",
}

_PREFIX = "/docs/assets/"

START = "start.js"  # Swagger UI's start-up, served as a file (no inline script)

_START_JS = b"""window.addEventListener("load", function () {
  var root = document.getElementById("swagger-ui");
  window.ui = SwaggerUIBundle({
    url: root.getAttribute("data-openapi"),
    dom_id: "#swagger-ui",
    layout: "BaseLayout",
    deepLinking: true,
    showExtensions: true,
    showCommonExtensions: true,
    persistAuthorization: false,
    presets: [SwaggerUIBundle.presets.apis]
  });
});
"""

docs_router = APIRouter(include_in_schema=False)


@lru_cache(maxsize=1)
def _bundle() -> dict[str, bytes] | None:
    """The Swagger UI files by name, or None without the ``fastapi-swagger`` package (its
    files are package data: read, never imported, so it patches nothing)."""
    from importlib import resources

    try:
        folder = resources.files("fastapi_swagger") / "resources"
        return {name: (folder / name).read_bytes() for name in ASSETS}
    except (ImportError, OSError):
        return None


@docs_router.get("/docs")
def docs(request: Request) -> Response:
    openapi_url = request.app.openapi_url or "/openapi.json"
    title = f"{request.app.title} API"
    if _bundle() is None:
        page = _route_list(title, openapi_url, request.app.openapi())
    else:
        page = _swagger_page(title, openapi_url)
    return HTMLResponse(page, headers=SECURITY_HEADERS)


@docs_router.get(_PREFIX + "{name}")
def asset(name: str) -> Response:
    files = _bundle()
    if files is None or (name not in files and name != START):  # only these, never a path
        raise ApiError(404, "not_found", f"no docs asset {name!r}")
    if name == START:
        body, media_type = _START_JS, "text/javascript; charset=utf-8"
    else:
        body, media_type = files[name], ASSETS[name]
    headers = {"Cache-Control": "max-age=86400", **SECURITY_HEADERS}
    return Response(body, media_type=media_type, headers=headers)


def _swagger_page(title: str, openapi_url: str) -> str:
    """Swagger UI's document: its files and its start-up script from ``/docs/assets/``,
    the schema's address in a data attribute. Pure."""
    return (
        "<!DOCTYPE html><html><head><meta charset='utf-8'>"
        f"<title>{html.escape(title)}</title>"
        f"<link rel='stylesheet' href='{_PREFIX}swagger-ui.css'>"
        f"<link rel='icon' type='image/png' href='{_PREFIX}favicon-32x32.png'>"
        "</head><body>"
        f"<div id='swagger-ui' data-openapi='{html.escape(openapi_url, quote=True)}'></div>"
        f"<script src='{_PREFIX}swagger-ui-bundle.js'></script>"
        f"<script src='{_PREFIX}{START}'></script>"
        "</body></html>"
    )


def _route_list(title: str, openapi_url: str, schema: dict[str, Any]) -> str:
    """A page of the schema's routes (method, path, summary), for a server without
    Swagger UI's files. Pure."""
    rows = []
    for path, operations in schema.get("paths", {}).items():
        for method, op in operations.items():
            summary = op.get("summary") or op.get("description", "").split("\n")[0]
            rows.append(
                f"<tr><td><code>{html.escape(method.upper())}</code></td>"
                f"<td><code>{html.escape(path)}</code></td><td>{html.escape(summary)}</td></tr>"
            )
    link = html.escape(openapi_url)
    return (
        f"<!DOCTYPE html><html><head><meta charset='utf-8'><title>{html.escape(title)}"
        f"</title></head><body><h1>{html.escape(title)}</h1><p>The schema: "
        f"<a href='{link}'>{link}</a> (install <code>fastapi-swagger</code> for the "
        f"interactive page).</p><table>{''.join(rows)}</table></body></html>"
    )


health_router = APIRouter(tags=["health"])


@health_router.get("/healthz")
def healthz() -> dict[str, Any]:
    return {"data": {"status": "ok"}}


@health_router.get("/readyz", response_model=None, responses=errors(503))
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


ROUTERS = (
    health_router,
    sessions_router,
    search_router,
    compact_router,
    summary_router,
    memories_router,
    usage_router,
)


# the web page and its sign-in ---------------------------------------------------------


# the browser-side routes (static/js/app.js): each is the same document
PAGES = ("/", "/sessions", "/sessions/{session_id}", "/search", "/memories", "/usage")

SECURITY_HEADERS = {
    "Content-Security-Policy": (
        "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
        "connect-src 'self'; font-src 'self'; manifest-src 'self'; base-uri 'none'; "
        "form-action 'self'; frame-ancestors 'none'"
    ),
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
    "X-Frame-Options": "DENY",
}

_TYPES = {
    ".html": "text/html; charset=utf-8",
    ".js": "text/javascript; charset=utf-8",
    ".css": "text/css; charset=utf-8",
    ".svg": "image/svg+xml",
    ".png": "image/png",
}

_pages = APIRouter(include_in_schema=False)


@dataclass(frozen=True, slots=True)
class PageAsset:
    body: bytes
    media_type: str
    etag: str


def _walk(folder: Traversable, prefix: str = "") -> dict[str, PageAsset]:
    found: dict[str, PageAsset] = {}
    for entry in folder.iterdir():
        name = f"{prefix}{entry.name}"
        if entry.is_dir():
            found.update(_walk(entry, f"{name}/"))
            continue
        suffix = "." + entry.name.rsplit(".", 1)[-1] if "." in entry.name else ""
        if suffix not in _TYPES:
            continue  # only what the page loads (no stray editor or cache files)
        body = entry.read_bytes()
        etag = '"' + hashlib.sha256(body).hexdigest()[:32] + '"'
        found[name] = PageAsset(body, _TYPES[suffix], etag)
    return found


@lru_cache(maxsize=1)
def page_assets() -> dict[str, PageAsset]:
    """The shipped assets by their path under ``static/`` (``js/app.js``)."""
    return _walk(resources.files("memoir.server") / "web" / "static")


def _answer(request: Request, asset: PageAsset) -> Response:
    headers = {**SECURITY_HEADERS, "ETag": asset.etag, "Cache-Control": "no-cache"}
    if request.headers.get("if-none-match") == asset.etag:
        return Response(status_code=304, headers=headers)
    return Response(asset.body, media_type=asset.media_type, headers=headers)


def page(request: Request) -> Response:
    """The application's document, whichever of its paths was asked for."""
    return _answer(request, page_assets()["index.html"])


for _path in PAGES:
    _pages.add_api_route(_path, page, methods=["GET", "HEAD"], response_class=Response)


@_pages.api_route("/static/{name:path}", methods=["GET", "HEAD"])
def static(name: str, request: Request) -> Response:
    found = page_assets().get(name)
    if found is None or name == "index.html":
        raise ApiError(404, "not_found", f"no asset {name!r}")
    return _answer(request, found)


# the page's own calls, left out of the OpenAPI schema as the page's paths are
_login = APIRouter(route_class=JsonRoute, include_in_schema=False)


class LoginBody(BaseModel):
    model_config = ConfigDict(extra="forbid")
    token: str = Field(..., min_length=1, max_length=200, description="The link's `#login=`.")


@_login.post("/login")
def login(body: LoginBody, request: Request) -> dict[str, Any]:
    """Trade a sign-in link's one-time token (what `memoir serve` prints when it listens on
    a loopback address) for a key of the page, valid until the server stops. The token
    works once, for 15 minutes, from this machine only."""
    links = sign_in_links(request)
    client = request.client.host if request.client is not None else ""
    if links is None or not is_loopback(client):
        raise ApiError(
            401,
            "unauthorized",
            "this server gives no sign-in links here; sign in with an API key "
            "(memoir users key local)",
        )
    redeemed = links.redeem(body.token)
    if redeemed is None:
        raise ApiError(
            401,
            "unauthorized",
            "this sign-in link was used already or has expired; restart memoir serve for a "
            "new one, or sign in with a key from `memoir users key local`",
        )
    user, key = redeemed
    return {"data": {"user": user, "key": key}}


@_login.post("/logout")
def logout(request: Request) -> dict[str, Any]:
    """End the page key sent as `Authorization: Bearer KEY` (an API key is left alone:
    `memoir users revoke` ends those)."""
    scheme, key = get_authorization_scheme_param(request.headers.get("authorization"))
    links = sign_in_links(request)
    ended = (
        scheme.lower() == "bearer"
        and key.startswith(PAGE_KEY_PREFIX)
        and links is not None
        and links.forget(key)
    )
    return {"data": {"ended": bool(ended)}}


web_router = APIRouter()

web_router.include_router(_pages)

web_router.include_router(_login)
