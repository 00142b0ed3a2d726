"""Session ids never read as exchange ids; every list pages with ``cursor=next_cursor``;
``/docs`` is served from this server only."""

from __future__ import annotations

import re
from typing import Any

import pytest

from memoir.model.event import named_session_id
from memoir.server import SECURITY_HEADERS
from memoir.server.plumbing import ApiError
from memoir.server.session_routes import page_after

from .server_api import Api, error_message


@pytest.mark.parametrize("sid", ["many:3", "alice-session:1", "a:b", "x:"])
def test_a_new_session_id_with_a_colon_is_refused(api: Api, sid: str) -> None:
    r = api.client.post("/api/sessions", json={"id": sid}, headers=api.bob)
    message = error_message(r, 422, "invalid_request")
    assert "may not contain ':'" in message and "exchange" in message, message
    assert api.memoir.store.sessions.get(sid) is None  # nothing made


@pytest.mark.parametrize("sid", ["chat-1", "a.b_c-d", "X" * 128])
def test_ids_without_a_colon_are_still_taken(api: Api, sid: str) -> None:
    stored = api.make_session(sid)  # checks the answer's name is sid
    got = api.client.get(f"/api/sessions/{sid}", headers=api.alice).json()["data"]["session"]
    assert (got["id"], got["name"]) == (stored, sid)


def test_the_schema_says_no_colon(api: Api) -> None:
    schema = api.client.get("/openapi.json").json()
    prop = schema["components"]["schemas"]["NewSession"]["properties"]["id"]
    pattern = next(p["pattern"] for p in prop["anyOf"] if "pattern" in p)
    assert ":" not in pattern and "no `:`" in prop["description"]


def _fill(api: Api, sid: str, pairs: int) -> None:
    api.make_session(sid)
    messages = []
    for n in range(pairs):
        messages.append({"role": "user", "content": f"question {n}"})
        messages.append({"role": "assistant", "content": f"answer {n}"})
    r = api.client.post(
        f"/api/sessions/{sid}/events", json={"messages": messages}, headers=api.alice
    )
    assert r.status_code == 200, r.text


def _walk(api: Api, path: str, key: str, limit: int) -> tuple[list[Any], int]:
    """Every item of a list, following ``next_cursor`` as ``cursor`` (and the pages)."""
    items: list[Any] = []
    params: dict[str, Any] = {"limit": limit}
    pages = 0
    while True:
        r = api.client.get(path, params=params, headers=api.alice)
        assert r.status_code == 200, r.text
        body = r.json()
        items += body["data"][key]
        pages += 1
        assert pages < 100, "paging never ends"
        if body["next_cursor"] is None:
            return items, pages
        params = {"limit": limit, "cursor": body["next_cursor"]}


def test_events_and_exchanges_page_with_cursor(api: Api) -> None:
    _fill(api, "many", 150)  # 300 events, 150 exchanges
    many = named_session_id("alice", "many")  # the id "many" is stored under
    events, pages = _walk(api, "/api/sessions/many/events", "events", 64)
    assert [e["ordinal"] for e in events] == list(range(1, 301)) and pages == 5
    exchanges, pages = _walk(api, "/api/sessions/many/exchanges", "exchanges", 40)
    assert [x["id"] for x in exchanges] == [f"{many}:{n}" for n in range(1, 300, 2)]
    assert pages == 4
    sessions, _ = _walk(api, "/api/sessions", "sessions", 1)  # the same word everywhere
    assert [(s["id"], s["name"]) for s in sessions] == [(many, "many")]


def test_after_and_cursor_are_both_lower_bounds(api: Api) -> None:
    _fill(api, "s1", 5)
    url = "/api/sessions/s1/events"
    same = api.client.get(url, params={"after": 4, "cursor": "4"}, headers=api.alice)
    assert [e["ordinal"] for e in same.json()["data"]["events"]] == list(range(5, 11))
    for path in (url, "/api/sessions/s1/exchanges"):
        for after, cursor in ((2, "4"), (4, "2")):  # past both: no rule a schema cannot say
            params = {"after": after, "cursor": cursor, "limit": 1}
            r = api.client.get(path, params=params, headers=api.alice)
            assert r.status_code == 200 and r.json()["next_cursor"] != cursor, r.text
            first = r.json()["data"]["events" if path == url else "exchanges"][0]
            assert first["ordinal" if path == url else "first_ordinal"] > 4
        for bad in ("x", "-1", "²", "1.5", "9" * 30):
            r = api.client.get(path, params={"cursor": bad}, headers=api.alice)
            assert "cursor" in error_message(r, 422, "invalid_request")


def test_the_schema_lists_cursor_on_every_list(api: Api) -> None:
    paths = api.client.get("/openapi.json").json()["paths"]
    for path in (
        "/api/sessions",
        "/api/sessions/{session_id}/events",
        "/api/sessions/{session_id}/exchanges",
    ):
        names = {p["name"] for p in paths[path]["get"]["parameters"]}
        assert "cursor" in names, path


@pytest.mark.parametrize(
    ("after", "cursor", "start"),
    [
        (None, None, 0),
        (7, None, 7),
        (None, "7", 7),
        (7, "7", 7),
        (0, "0", 0),
        (None, "0", 0),
        (1, "2", 2),
        (5, "0", 5),
    ],
)
def test_page_after(after: int | None, cursor: str | None, start: int) -> None:
    assert page_after(after, cursor) == start


@pytest.mark.parametrize(
    ("after", "cursor"), [(None, ""), (None, "abc"), (None, "+3"), (None, "٣"), (1, "x")]
)
def test_page_after_refuses(after: int | None, cursor: str) -> None:
    with pytest.raises(ApiError) as caught:
        page_after(after, cursor)
    assert caught.value.status == 422


_URL = re.compile(r"""(?:src|href|data-openapi)\s*=\s*["']([^"']+)["']|url:\s*'([^']+)'""")


def test_docs_load_nothing_from_another_host(api: Api) -> None:
    r = api.client.get("/docs")
    assert r.status_code == 200 and "text/html" in r.headers["content-type"]
    page = r.text
    assert "swagger-ui-bundle.js" in page  # the real Swagger UI, not the fallback list
    assert "<script>" not in page  # no inline script: the page's policy holds here too
    assert r.headers["content-security-policy"] == SECURITY_HEADERS["Content-Security-Policy"]
    others = [u for u in re.findall(r"https?://[^\s\"'<>)]+", page)]
    assert others == [], others
    refs = [a or b for a, b in _URL.findall(page)]
    assert "/openapi.json" in refs
    assert {u for u in refs if u.endswith((".js", ".css"))} == {
        "/docs/assets/swagger-ui-bundle.js",
        "/docs/assets/start.js",
        "/docs/assets/swagger-ui.css",
    }
    assert b"SwaggerUIBundle(" in api.client.get("/docs/assets/start.js").content
    for ref in refs:
        got = api.client.get(ref)
        assert got.status_code == 200 and got.content, ref
    js = api.client.get("/docs/assets/swagger-ui-bundle.js")
    assert (
        js.headers["content-type"].startswith("text/javascript")
        and b"SwaggerUIBundle" in js.content
    )
    assert (
        api.client.get("/docs/assets/swagger-ui.css").headers["content-type"].startswith("text/css")
    )


@pytest.mark.parametrize(
    "path",
    ["/redoc", "/docs/assets/index.html", "/docs/assets/..%2Fpyproject.toml", "/docs/assets/x.js"],
)
def test_no_other_docs_path_is_served(api: Api, path: str) -> None:
    assert api.client.get(path).status_code == 404
