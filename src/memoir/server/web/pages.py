"""Serve the page: its paths answer ``index.html``, ``/static/NAME`` the assets shipped in
``static/`` — read once per process from the package (``importlib.resources``, so an
installed wheel serves what it ships), only the files that are there (no path is joined
from the request), with an ETag, and a Content-Security-Policy that allows this origin only:
no inline script, no other host, no framing."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from functools import lru_cache
from importlib import resources
from importlib.abc import Traversable

from fastapi import APIRouter, Request, Response

from memoir.server.plumbing import ApiError

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

router = APIRouter(include_in_schema=False)


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
    router.add_api_route(_path, page, methods=["GET", "HEAD"], response_class=Response)


@router.api_route("/static/{name:path}", methods=["GET", "HEAD"])
def static(name: str, request: Request) -> Response:
    found = assets().get(name)
    if found is None or name == "index.html":
        raise ApiError(404, "not_found", f"no asset {name!r}")
    return _answer(request, found)
