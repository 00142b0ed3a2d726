"""``/docs``: Swagger UI over ``/openapi.json``, served from this server only.

FastAPI's own page loads Swagger UI from a CDN; Memoir runs offline, so its files come
from the ``fastapi-swagger`` package (the ``server`` extra: Swagger UI 5, which reads the
OpenAPI 3.1 FastAPI writes; the ``swagger-ui-bundle`` package's 4.x cannot) under
``/docs/assets/`` — only the three the page loads, read once per process. Without it, ``/docs`` is
a small page of its own listing the routes of the OpenAPI schema (no script, no other
host). ReDoc has no offline copy to serve: ``/redoc`` is not served.

Both answers carry the page's own security headers (a Content-Security-Policy with no
inline script and no other host): FastAPI's Swagger page starts Swagger UI from an inline
script, so this one is a document of its own whose start-up script is one more asset,
``/docs/assets/start.js``."""

from __future__ import annotations

import html
from functools import lru_cache
from typing import Any

from fastapi import APIRouter, Request, Response
from fastapi.responses import HTMLResponse

from memoir.server.errors import ApiError
from memoir.server.web.pages import SECURITY_HEADERS

__all__ = ["ASSETS", "router"]

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

router = APIRouter(include_in_schema=False)


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


@router.get("/docs")
def docs(request: Request) -> Response:
    openapi_url = request.app.openapi_url or "/openapi.json"
    title = f"{request.app.title} API"
    if _bundle() is None:
        page = _route_list(title, openapi_url, request.app.openapi())
    else:
        page = _swagger_page(title, openapi_url)
    return HTMLResponse(page, headers=SECURITY_HEADERS)


@router.get(_PREFIX + "{name}")
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
