"""The append route reads its own request (no dependency or body field for FastAPI to
solve: the hot path), with the checks FastAPI made, in the same order, answered the same
way; on PostgreSQL it runs on the event loop (``service.on_loop``), on SQLite on a
thread. Its documentation is what FastAPI writes from its signature."""

from __future__ import annotations

from typing import Any

import pytest

from .server_api import Api

HI = {"messages": [{"role": "user", "content": "hi"}]}
JSON = {"Content-Type": "application/json"}
NO_KEY = (401, "unauthorized", "send an API key: Authorization: Bearer KEY")
NOT_JSON = (
    422,
    "invalid_request",
    "the body is not valid JSON: Expecting property name enclosed in double quotes "
    "(line 1, column 2)",
)

# what is sent (headers beyond Alice's key: None sends no key; the body as bytes or as
# JSON), and the answer: status, code, message
CASES: list[Any] = [
    pytest.param({}, None, (422, "invalid_request", "body: Field required"), id="no-body"),
    pytest.param(JSON, b"{nope", NOT_JSON, id="not-json"),
    pytest.param(
        {"Content-Type": "text/plain"},
        b'{"messages": []}',
        (
            415,
            "unsupported_media_type",
            "send the body as JSON, with the header Content-Type: application/json",
        ),
        id="not-sent-as-json",
    ),
    # the body's JSON is checked before the key, the key before the body's fields
    pytest.param({"Authorization": None, **JSON}, b"{nope", NOT_JSON, id="bad-json-no-key"),
    pytest.param(
        {"Authorization": None},
        {"messages": [{"role": "x", "content": "hi"}]},
        NO_KEY,
        id="bad-field-no-key",
    ),
    pytest.param({"Authorization": "Basic abc"}, HI, NO_KEY, id="not-bearer"),
    pytest.param({"Authorization": "Bearer "}, HI, NO_KEY, id="empty-key"),
    pytest.param(
        {"Authorization": "Bearer mk_nope"},
        HI,
        (401, "unauthorized", "unknown or revoked API key"),
        id="unknown-key",
    ),
    pytest.param(
        {},
        {"messages": [{"role": "x", "content": "hi"}]},
        (
            422,
            "invalid_request",
            "messages.0.role: Input should be 'user', 'assistant', 'tool', 'function', "
            "'system' or 'developer'",
        ),
        id="bad-role",
    ),
    pytest.param(
        {},
        {**HI, "more": 1},
        (422, "invalid_request", "more: Extra inputs are not permitted"),
        id="extra-field",
    ),
    pytest.param(
        {},
        {"messages": []},
        (
            422,
            "invalid_request",
            "messages: List should have at least 1 item after validation, not 0",
        ),
        id="no-messages",
    ),
    pytest.param(
        {},
        [1, 2],
        (
            422,
            "invalid_request",
            "body: Input should be a valid dictionary or object to extract fields from",
        ),
        id="not-an-object",
    ),
    pytest.param({}, b"null", (422, "invalid_request", "body: Field required"), id="null"),
    pytest.param(
        {},
        {"messages": [{"role": "assistant", "content": ""}]},
        (
            422,
            "invalid_request",
            "messages.0: a assistant message with nothing to store: send text, content "
            "parts or tool calls",
        ),
        id="nothing-to-store",
    ),
]


@pytest.mark.parametrize(("headers", "body", "answer"), CASES)
def test_a_refused_append_is_answered_as_before_and_stores_nothing(
    api: Api, headers: dict[str, str | None], body: Any, answer: tuple[int, str, str]
) -> None:
    sid = api.make_session("s")
    sent = {**api.alice, **headers}
    if isinstance(body, bytes) and "Content-Type" not in sent:
        sent["Content-Type"] = "application/json"
    kept = {k: v for k, v in sent.items() if v is not None}
    kwargs: dict[str, Any] = {"content": body} if isinstance(body, bytes) else {"json": body}
    if body is None:
        kwargs = {}
    r = api.client.post(f"/api/sessions/{sid}/events", headers=kept, **kwargs)
    status, code, message = answer
    assert r.status_code == status, r.text
    assert r.json() == {"error": {"code": code, "message": message}}
    assert r.headers["content-type"] == "application/json"
    assert ("www-authenticate" in r.headers) == (status == 401)
    assert api.memoir.store.events.last_ordinal(sid) == 0


def test_an_append_is_stored_then_skipped_then_another_users_session_is_not_found(
    api: Api,
) -> None:
    sid = api.make_session("s")
    path = f"/api/sessions/{sid}/events"
    one = {"messages": [{"role": "user", "content": "hi", "id": "a"}]}
    first = api.client.post(path, json=one, headers=api.alice)
    assert first.status_code == 200, first.text
    assert first.json() == {"data": {"added": 1, "skipped": 0, "last_ordinal": 1}}
    again = api.client.post(path, json=one, headers=api.alice)
    assert again.json() == {"data": {"added": 0, "skipped": 1, "last_ordinal": 1}}
    by_name = api.client.post("/api/sessions/s/events", json=HI, headers=api.alice)
    assert by_name.json()["data"]["last_ordinal"] == 2  # the name finds it too
    bobs = api.client.post(path, json=HI, headers=api.bob)
    assert bobs.status_code == 404
    assert bobs.json()["error"]["code"] == "not_found"
    assert api.memoir.store.events.last_ordinal(sid) == 2


def test_the_append_is_documented_from_its_signature(api: Api) -> None:
    doc = api.client.get("/openapi.json").json()
    append = doc["paths"]["/api/sessions/{session_id}/events"]["post"]
    assert append["requestBody"] == {
        "required": True,
        "content": {"application/json": {"schema": {"$ref": "#/components/schemas/EventsBody"}}},
    }
    assert append["security"] == [{"HTTPBearer": []}]
    assert {"200", "400", "401", "404", "413", "415", "422", "503"} <= set(append["responses"])
    body = doc["components"]["schemas"]["EventsBody"]
    assert body["properties"]["messages"]["items"] == {"$ref": "#/components/schemas/Message"}
