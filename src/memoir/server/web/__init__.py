"""The web page ``memoir serve`` serves at ``/``, and its sign-in: a small single-page
application written by hand (ES modules, one stylesheet, no build step, nothing loaded from
elsewhere), over the same ``/api`` routes any client uses, with the caller's key kept in the
browser's session storage.

The page: its paths answer ``index.html`` (the application routes in the browser), and
``/static/NAME`` the assets shipped in ``static/`` (package data) — read once per process
from the package (``importlib.resources``, so an installed wheel serves what it ships),
only the files that are there (no path is joined from the request), with an ETag, and a
Content-Security-Policy that allows this origin only: no inline script, no other host, no
framing.

The sign-in (:mod:`memoir.server.auth`): ``POST /login`` trades a sign-in link's one-time
token for a page key, ``POST /logout`` ends a page key. They sit outside ``/api``, where
every route needs a key.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from functools import lru_cache
from importlib import resources
from importlib.abc import Traversable
from typing import Any

from fastapi import APIRouter, Request, Response
from fastapi.security.utils import get_authorization_scheme_param
from pydantic import BaseModel, ConfigDict, Field

from memoir.server.auth import PAGE_KEY_PREFIX, is_loopback, sign_in_links
from memoir.server.plumbing import ApiError
from memoir.server.schemas import JsonRoute

__all__ = ["PAGES", "SECURITY_HEADERS", "assets", "router"]

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
class Asset:
    body: bytes
    media_type: str
    etag: str


def _walk(folder: Traversable, prefix: str = "") -> dict[str, Asset]:
    found: dict[str, Asset] = {}
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
        found[name] = Asset(body, _TYPES[suffix], etag)
    return found


@lru_cache(maxsize=1)
def assets() -> dict[str, Asset]:
    """The shipped assets by their path under ``static/`` (``js/app.js``)."""
    return _walk(resources.files("memoir.server.web") / "static")


def _answer(request: Request, asset: Asset) -> Response:
    headers = {**SECURITY_HEADERS, "ETag": asset.etag, "Cache-Control": "no-cache"}
    if request.headers.get("if-none-match") == asset.etag:
        return Response(status_code=304, headers=headers)
    return Response(asset.body, media_type=asset.media_type, headers=headers)


def page(request: Request) -> Response:
    """The application's document, whichever of its paths was asked for."""
    return _answer(request, assets()["index.html"])


for _path in PAGES:
    _pages.add_api_route(_path, page, methods=["GET", "HEAD"], response_class=Response)


@_pages.api_route("/static/{name:path}", methods=["GET", "HEAD"])
def static(name: str, request: Request) -> Response:
    found = assets().get(name)
    if found is None or name == "index.html":
        raise ApiError(404, "not_found", f"no asset {name!r}")
    return _answer(request, found)


# the sign-in ------------------------------------------------------------------------------

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


router = APIRouter()
router.include_router(_pages)
router.include_router(_login)
