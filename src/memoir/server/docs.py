"""``/docs``: Swagger UI over ``/openapi.json``, served from this server only.

FastAPI's own page loads Swagger UI from a CDN; Memoir runs offline, so its files come
from the ``swagger-ui-bundle`` package (the ``server`` extra) under ``/docs/assets/`` —
only the three the page loads, read once per process. Without that package, ``/docs`` is
a small page of its own listing the routes of the OpenAPI schema (no script, no other
host). ReDoc has no offline copy to serve: ``/redoc`` is not served."""

from __future__ import annotations

import html
from functools import lru_cache
from typing import Any

from fastapi import APIRouter, Request, Response
from fastapi.openapi.docs import get_swagger_ui_html
from fastapi.responses import HTMLResponse

from memoir.server.errors import ApiError

__all__ = ["ASSETS", "router"]

ASSETS = {  # what the page loads: its name under /docs/assets/ → media type
    "swagger-ui-bundle.js": "text/javascript; charset=utf-8",
    "swagger-ui.css": "text/css; charset=utf-8",
    "favicon-32x32.png": "image/png",
}
_PREFIX = "/docs/assets/"

router = APIRouter(include_in_schema=False)


@lru_cache(maxsize=1)
def _bundle() -> dict[str, bytes] | None:
    """The Swagger UI files by name, or None without the ``swagger-ui-bundle`` package."""
    try:
        from swagger_ui_bundle import swagger_ui_path
    except ImportError:
        return None
    try:
        return {name: (swagger_ui_path / name).read_bytes() for name in ASSETS}
    except OSError:
        return None


@router.get("/docs")
def docs(request: Request) -> Response:
    openapi_url = request.app.openapi_url or "/openapi.json"
    title = f"{request.app.title} API"
    if _bundle() is None:
        return HTMLResponse(_route_list(title, openapi_url, request.app.openapi()))
    return get_swagger_ui_html(
        openapi_url=openapi_url,
        title=title,
        swagger_js_url=_PREFIX + "swagger-ui-bundle.js",
        swagger_css_url=_PREFIX + "swagger-ui.css",
        swagger_favicon_url=_PREFIX + "favicon-32x32.png",
        swagger_ui_parameters={"persistAuthorization": False},
    )


@router.get(_PREFIX + "{name}")
def asset(name: str) -> Response:
    files = _bundle()
    if files is None or name not in files:  # only the files named above, never a path
        raise ApiError(404, "not_found", f"no docs asset {name!r}")
    return Response(
        files[name], media_type=ASSETS[name], headers={"Cache-Control": "max-age=86400"}
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
        f"<a href='{link}'>{link}</a> (install <code>swagger-ui-bundle</code> for the "
        f"interactive page).</p><table>{''.join(rows)}</table></body></html>"
    )
