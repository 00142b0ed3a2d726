"""The page as the server ships it (no browser needed): every page path answers the one
document with a strict Content-Security-Policy; every asset it or a module loads is served
from the package, with the right type and an ETag; nothing is loaded from another host; no
script hands text to an HTML parser; the assets are package data of the wheel."""

from __future__ import annotations

import re
import tomllib
from collections.abc import Iterator
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from memoir.app import Memoir
from memoir.config import Settings
from memoir.server import PAGES, create_app, page_assets

ROOT = Path(__file__).resolve().parents[2]
STATIC = ROOT / "src" / "memoir" / "server" / "web" / "static"


@pytest.fixture
def client(settings: Settings) -> Iterator[TestClient]:
    with Memoir.open(settings) as m, TestClient(create_app(m)) as c:
        yield c


def test_every_page_path_is_the_document_with_a_strict_policy(client: TestClient) -> None:
    for path in ["/", "/sessions", "/sessions/some-id", "/search", "/memories", "/usage"]:
        r = client.get(path, params={"q": "x"} if path == "/search" else None)
        assert r.status_code == 200 and r.headers["content-type"].startswith("text/html")
        policy = r.headers["content-security-policy"]
        assert "script-src 'self'" in policy and "default-src 'none'" in policy
        assert "frame-ancestors 'none'" in policy and "connect-src 'self'" in policy
        assert r.headers["x-content-type-options"] == "nosniff"
        assert '<script type="module" src="/static/js/app.js">' in r.text
    assert client.head("/sessions").status_code == 200
    assert len(PAGES) == 6
    schema = client.get("/openapi.json").json()
    assert not [p for p in schema["paths"] if not p.startswith(("/api/", "/healthz", "/readyz"))]


def test_every_asset_loaded_is_served_with_its_type(client: TestClient) -> None:
    page = client.get("/").text
    wanted = set(re.findall(r'(?:src|href)="(/static/[^"]+)"', page))
    for module in STATIC.glob("js/*.js"):
        for name in re.findall(r'from "\./([^"]+)"', module.read_text(encoding="utf-8")):
            wanted.add(f"/static/js/{name}")
    assert {"/static/app.css", "/static/js/app.js", "/static/icon.svg"} <= wanted
    types = {".js": "text/javascript", ".css": "text/css", ".svg": "image/svg+xml"}
    for path in sorted(wanted):
        r = client.get(path)
        assert r.status_code == 200, path
        assert r.headers["content-type"].startswith(types[Path(path).suffix]), path
        again = client.get(path, headers={"If-None-Match": r.headers["etag"]})
        assert again.status_code == 304 and again.content == b""
    on_disk = {p.relative_to(STATIC).as_posix() for p in STATIC.rglob("*") if p.is_file()}
    assert set(page_assets()) == on_disk  # what the package holds is what is served


def test_what_is_not_an_asset_is_404_in_the_error_shape(client: TestClient) -> None:
    for path in [
        "/static/nope.js",
        "/static/../app.py",
        "/static/%2e%2e/pages.py",
        "/static/index.html",
        "/static/",
    ]:
        r = client.get(path)
        assert r.status_code == 404, path
        assert set(r.json()) == {"error"}


def test_nothing_loads_from_elsewhere_and_no_text_is_parsed_as_html() -> None:
    for path in STATIC.rglob("*"):
        if not path.is_file():
            continue
        text = path.read_text(encoding="utf-8")
        urls = set(re.findall(r"https?://[^\s\"'`)]+", text))
        assert urls <= {"http://www.w3.org/2000/svg"}, (path.name, urls)  # a namespace, not a load
        if path.suffix == ".js":
            for sink in (
                "innerHTML",
                "outerHTML",
                "insertAdjacentHTML",
                "document.write",
                "eval(",
                "new Function",
                "localStorage",
            ):
                assert sink not in text, (path.name, sink)
            assert "apiKey" not in text or path.name == "api.js", path.name


def test_the_assets_are_package_data() -> None:
    config = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    patterns = config["tool"]["setuptools"]["package-data"]["memoir"]
    package = ROOT / "src" / "memoir"
    shipped = {found for pattern in patterns for found in package.glob(pattern)}  # as setuptools
    for path in STATIC.rglob("*"):
        if path.is_file():
            assert path in shipped, f"{path.relative_to(package)} is not package data"
