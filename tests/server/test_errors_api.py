"""Every error has one shape, and a refused request stores nothing."""

from __future__ import annotations

import pytest

from memoir.server import create_app

from .server_api import Api


def _shape(r: object, status: int, code: str | None = None) -> dict[str, str]:
    assert r.status_code == status, r.text  # type: ignore[attr-defined]
    body = r.json()  # type: ignore[attr-defined]
    assert set(body) == {"error"} and set(body["error"]) >= {"code", "message"}
    assert isinstance(body["error"]["message"], str) and body["error"]["message"]
    if code is not None:
        assert body["error"]["code"] == code
    return body["error"]


BAD_BODIES = [
    pytest.param(b"{not json", id="malformed-json"),
    pytest.param(b'{"messages": "hello"}', id="messages-not-a-list"),
    pytest.param(b'{"messages": [{"role": 3, "content": "x"}]}', id="role-wrong-type"),
    pytest.param(b'{"messages": [{"role": "wizard", "content": "x"}]}', id="unknown-role"),
    pytest.param(
        b'{"messages": [{"role": "user", "content": "x", "colour": 1}]}', id="unknown-msg-field"
    ),
    pytest.param(
        b'{"messages": [{"role": "user", "content": "x"}], "extra": 1}', id="unknown-field"
    ),
    pytest.param(b'{"messages": []}', id="empty-batch"),
    pytest.param(b"[]", id="not-an-object"),
    pytest.param(b"", id="empty-body"),
]


@pytest.mark.parametrize("raw", BAD_BODIES)
def test_bad_event_bodies_store_nothing(api: Api, raw: bytes) -> None:
    sid = api.make_session()
    r = api.client.post(
        f"/api/sessions/{sid}/events",
        content=raw,
        headers={**api.alice, "Content-Type": "application/json"},
    )
    _shape(r, 422, "invalid_request")
    assert api.memoir.store.events.last_ordinal(sid) == 0
    assert api.memoir.store.api.message_ids(sid) == {}


def test_ten_megabyte_body_is_413_and_stores_nothing(api: Api) -> None:
    sid = api.make_session()
    big = '{"messages": [{"role": "user", "content": "' + "x" * (10 * 1024 * 1024) + '"}]}'
    r = api.client.post(
        f"/api/sessions/{sid}/events",
        content=big.encode(),
        headers={**api.alice, "Content-Type": "application/json"},
    )
    _shape(r, 413, "body_too_large")
    assert api.memoir.store.events.last_ordinal(sid) == 0

    def chunks():  # no Content-Length: counted as it arrives
        for _ in range(10):
            yield b"x" * (1024 * 1024)

    r = api.client.post(
        f"/api/sessions/{sid}/events",
        content=chunks(),
        headers={**api.alice, "Content-Type": "application/json"},
    )
    _shape(r, 413, "body_too_large")
    assert api.memoir.store.events.last_ordinal(sid) == 0


def test_unknown_route_method_and_bad_query(api: Api) -> None:
    _shape(api.client.get("/api/nothing-here", headers=api.alice), 404, "not_found")
    _shape(api.client.delete("/api/sessions", headers=api.alice), 405, "method_not_allowed")
    r = api.client.get("/api/search", params={"q": "x", "limit": "many"}, headers=api.alice)
    _shape(r, 422, "invalid_request")
    r = api.client.get("/api/search", params={"q": "x", "after": "someday"}, headers=api.alice)
    _shape(r, 422, "invalid_request")
    r = api.client.get("/api/search", params={"q": "x", "after": "yesterday"}, headers=api.alice)
    # words are the CLI's; the API reads the dates its schema states (a client is generated
    # from it), and says which
    assert _shape(r, 422, "invalid_request")["message"].startswith(
        "query.after: not a date: use YYYY-MM-DD, YYYY-MM or an ISO 8601 time"
    )
    r = api.client.delete("/api/sessions/s/events", headers=api.alice)
    assert r.headers["allow"] == "GET, POST"  # every method of the path, not the first route's
    r = api.client.put("/api/memories/forget", headers=api.alice)  # not {item_id}'s GET
    assert r.headers["allow"] == "POST"


@pytest.mark.parametrize(
    ("after", "before", "found"),
    [
        ("2000-01-02", "2000-01-01", False),  # before earlier than after: empty
        ("2000-01-02T00:00:00Z", "2000-01-01", False),  # before's day ends at after: empty
        ("2000-01-01", "2000-01-01", False),  # one day (before is inclusive), not today
        ("2000-01-01", "9998-12-31", True),  # a range holding today
    ],
)
def test_an_empty_date_range_finds_nothing_rather_than_422(
    api: Api, after: str, before: str, found: bool
) -> None:
    # the schema cannot state "after is earlier than before", and a client generated from
    # it obeys it: an empty range holds no exchange, so it is no hits (the CLI refuses it)
    sid = api.make_session()
    body = {"messages": [{"role": "user", "content": "plan the migration to postgres"}]}
    assert api.client.post(f"/api/sessions/{sid}/events", json=body, headers=api.alice).is_success
    params = {"q": "migration", "after": after, "before": before}
    r = api.client.get("/api/search", params=params, headers=api.alice)
    assert r.status_code == 200, r.text
    assert [h["exchange_id"] for h in r.json()["data"]["hits"]] == ([f"{sid}:1"] if found else [])
    r = api.client.get("/api/search", params={**params, "session": "nope"}, headers=api.alice)
    _shape(r, 404, "not_found")  # an unknown session is still 404 first


def test_unexpected_error_is_500_with_the_shape(api: Api, monkeypatch: pytest.MonkeyPatch) -> None:
    sid = api.make_session()
    body = {"messages": [{"role": "user", "content": "hello"}]}  # a page to read
    assert api.client.post(f"/api/sessions/{sid}/events", json=body, headers=api.alice).is_success

    def boom(*args: object, **kwargs: object) -> None:
        raise RuntimeError("secret internals")

    monkeypatch.setattr(api.memoir.store.events, "of", boom)
    err = _shape(api.client.get(f"/api/sessions/{sid}/events", headers=api.alice), 500, "internal")
    assert "secret" not in err["message"]


def test_request_id_is_echoed(api: Api) -> None:
    r = api.client.get("/healthz", headers={"X-Request-Id": "abc-123"})
    assert r.headers["x-request-id"] == "abc-123"
    assert len(api.client.get("/healthz").headers["x-request-id"]) == 32
    weird = api.client.get("/healthz", headers={"X-Request-Id": "a b\tc"})
    assert weird.headers["x-request-id"] != "a b\tc"


def test_health_and_openapi(api: Api) -> None:
    assert api.client.get("/healthz").json() == {"data": {"status": "ok"}}
    ready = api.client.get("/readyz").json()
    assert ready["data"]["checks"] == {"database": "ok"}
    schema = api.client.get("/openapi.json").json()
    assert "/api/sessions/{session_id}/events" in schema["paths"]
    assert api.client.get("/docs").status_code == 200


def test_readyz_names_an_unreachable_redis(memoir: object, settings: object) -> None:
    from dataclasses import replace

    from fastapi.testclient import TestClient

    m = memoir
    m.settings = replace(m.settings, redis_url="redis://127.0.0.1:1/0")  # type: ignore[attr-defined]
    with TestClient(create_app(m)) as client:  # type: ignore[arg-type]
        r = client.get("/readyz")
    # reads and appends keep working without Redis: the replica stays in the pool, degraded
    assert r.status_code == 200, r.text
    data = r.json()["data"]
    assert data["status"] == "degraded"
    assert data["degraded"] == ["job admission"]
    assert data["checks"]["database"] == "ok"
    assert data["checks"]["redis"].startswith("unreachable")
