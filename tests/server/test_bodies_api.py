"""What a client may send in a body, and how each bad one is refused: one status for a
body that is not JSON (422), 415 for one not sent as JSON, a depth limit, text made
storable as sync makes it, and messages that would store nothing or a time that is not one
refused with a message naming them. A refused batch stores nothing."""

from __future__ import annotations

import json
from typing import Any

import pytest

from memoir import service
from memoir.server.plumbing import MAX_DEPTH

from .server_api import Api, error_message

JSON = {"Content-Type": "application/json"}


def _post(api: Api, path: str, raw: bytes, headers: dict[str, str] | None = None) -> Any:
    return api.client.post(path, content=raw, headers={**api.alice, **(headers or JSON)})


def _nothing_stored(api: Api, sid: str) -> None:
    assert api.memoir.store.events.last_ordinal(sid) == 0
    assert api.memoir.store.api.message_ids(sid) == {}


# 1 -- lone surrogates ---------------------------------------------------------------------

SURROGATE_MESSAGES = [
    pytest.param(
        '{"id":"s4","role":"user","content":[{"type":"text","text":"\\ud800"}]}', id="part"
    ),
    pytest.param('{"id":"s4","role":"user","content":"a \\ud800 b"}', id="string"),
    pytest.param('{"id":"s4\\udfff","role":"user","content":"x"}', id="in-the-id"),
    pytest.param('{"id":"s4","role":"user","content":"nul \\u0000 here"}', id="nul"),
]


@pytest.mark.parametrize("message", SURROGATE_MESSAGES)
def test_unencodable_text_is_stored_scrubbed_as_sync_stores_it(api: Api, message: str) -> None:
    sid = api.make_session("dup")
    raw = ('{"messages":[' + message + "]}").encode()
    r = _post(api, f"/api/sessions/{sid}/events", raw)
    assert r.status_code == 200, r.text
    assert r.json()["data"]["added"] == 1
    again = _post(api, f"/api/sessions/{sid}/events", raw)  # the id was stored as scrubbed
    assert again.json()["data"] == {"added": 0, "skipped": 1, "last_ordinal": 1}
    events = api.client.get(f"/api/sessions/{sid}/events", headers=api.alice).json()
    (event,) = events["data"]["events"]
    assert "\ud800" not in event["text"] and "\x00" not in event["text"]
    assert "?" in event["text"] or "\ufffd" in event["text"] or event["text"] == "x"


def test_the_library_append_path_scrubs_too(api: Api) -> None:
    """Code calling service.append_messages (no HTTP parser before it) gets the same."""
    sid = api.make_session("lib")
    added, _ = service.append_messages(
        api.memoir,
        "alice",
        sid,
        [{"id": "m\ud83d", "role": "user", "content": "half an emoji \ud83d"}],
    )
    assert added == 1
    (event,) = api.memoir.store.events.of(sid)
    assert event.text == "half an emoji ?"  # what sync stores (model.storable.scrub_deep)
    assert set(api.memoir.store.api.message_ids(sid)) == {"m?"}


def test_compact_echoes_scrubbed_text(api: Api) -> None:
    sid = api.make_session()
    raw = b'{"window":1000,"messages":[{"role":"user","content":"\\ud800"}]}'
    r = _post(api, f"/api/sessions/{sid}/compact", raw)
    assert r.status_code == 200, r.text
    assert r.json()["data"]["messages"][0]["content"] == "?"


def test_a_project_name_with_a_surrogate_is_stored(api: Api) -> None:
    r = _post(api, "/api/sessions", b'{"id":"p1","project":"demo \\udc80"}')
    assert r.status_code == 201, r.text
    assert r.json()["data"]["session"]["project"] == "demo ?"


# 3 and 6 -- bodies that are not JSON, too deep, or not sent as JSON ----------------------


def _nested(depth: int) -> str:
    return "[" * depth + "]" * depth


NOT_JSON = [
    pytest.param(b"{not json", "Expecting property name", id="malformed"),
    pytest.param(b'{"messages": [}', "Expecting value", id="malformed-list"),
    pytest.param(b'{"messages": "\xff\xfe"}', "not UTF-8", id="invalid-utf8"),
    pytest.param(
        ('{"messages": ' + _nested(950) + "}").encode(), "nested deeper than 64", id="deep-950"
    ),
    pytest.param(
        ('{"messages": ' + _nested(20000) + "}").encode(), "nested deeper", id="deep-20000"
    ),
    pytest.param(
        b'{"messages": [{"role": "user", "content": "x", "timestamp": NaN}]}',
        "NaN is not a JSON number",
        id="nan",
    ),
    pytest.param(b'{"messages": [1]} trailing', "Extra data", id="trailing"),
]


@pytest.mark.parametrize(("raw", "says"), NOT_JSON)
def test_a_body_that_is_not_json_is_one_422(api: Api, raw: bytes, says: str) -> None:
    sid = api.make_session()
    message = error_message(_post(api, f"/api/sessions/{sid}/events", raw), 422, "invalid_request")
    assert message.startswith("the body is not valid JSON: ") and says in message, message
    _nothing_stored(api, sid)


def test_the_depth_limit_is_exact_on_compact(api: Api) -> None:
    """A message's extra key nested deep: refused at the limit with a clear message (it
    used to pass the parser and fail while the answer echoing it was written: 500)."""
    sid = api.make_session()

    def body(extra_depth: int) -> bytes:
        msg = '{"role":"user","content":"hi","extra":' + _nested(extra_depth) + "}"
        return ('{"window":1000,"messages":[' + msg + "]}").encode()

    message = error_message(
        _post(api, f"/api/sessions/{sid}/compact", body(800)), 422, "invalid_request"
    )
    assert message == f"the body is not valid JSON: it is nested deeper than {MAX_DEPTH} levels"
    # body object 1, messages 2, the message 3, then the extra key's arrays
    assert _post(api, f"/api/sessions/{sid}/compact", body(MAX_DEPTH - 3)).status_code == 200
    too_deep = _post(api, f"/api/sessions/{sid}/compact", body(MAX_DEPTH - 2))
    error_message(too_deep, 422, "invalid_request")


WRONG_TYPES = [
    pytest.param({"Content-Type": "text/plain"}, id="text-plain"),
    pytest.param({}, id="none"),
    pytest.param({"Content-Type": "application/x-www-form-urlencoded"}, id="form"),
]


@pytest.mark.parametrize("headers", WRONG_TYPES)
def test_valid_json_not_sent_as_json_is_415(api: Api, headers: dict[str, str]) -> None:
    sid = api.make_session()
    raw = json.dumps({"messages": [{"role": "user", "content": "hi"}]}).encode()
    r = api.client.post(
        f"/api/sessions/{sid}/events", content=raw, headers={**api.alice, **headers}
    )
    assert "application/json" in error_message(r, 415, "unsupported_media_type")
    _nothing_stored(api, sid)
    r = api.client.post("/api/sessions", content=b'{"id": "t1"}', headers={**api.alice, **headers})
    error_message(r, 415, "unsupported_media_type")


def test_json_subtypes_and_charset_are_json(api: Api) -> None:
    for ctype in ("application/json; charset=utf-8", "application/vnd.memoir+json"):
        r = _post(api, "/api/sessions", b'{"id": "j1"}', {"Content-Type": ctype})
        assert r.status_code in (200, 201), r.text


def test_an_optional_body_may_be_left_out_with_no_content_type(api: Api) -> None:
    sid = api.make_session()
    r = api.client.post(f"/api/sessions/{sid}/remember", headers=api.alice)
    assert "no user message" in error_message(r, 409, "conflict")  # the route's own answer


# 4 -- messages that store nothing -------------------------------------------------------

EMPTY_MESSAGES = [
    pytest.param({"role": "user", "content": None}, id="null"),
    pytest.param({"role": "user", "content": ""}, id="empty-string"),
    pytest.param({"role": "user"}, id="absent"),
    pytest.param({"role": "assistant", "content": []}, id="no-parts"),
    pytest.param({"role": "user", "content": [{"type": "text", "text": ""}]}, id="empty-part"),
    pytest.param({"role": "system", "content": ""}, id="system"),
]


@pytest.mark.parametrize("empty", EMPTY_MESSAGES)
def test_a_message_with_no_content_is_refused_by_index(api: Api, empty: dict[str, Any]) -> None:
    sid = api.make_session()
    batch = [{"id": "ok", "role": "user", "content": "fine"}, {"id": "e1", **empty}]
    r = api.client.post(f"/api/sessions/{sid}/events", json={"messages": batch}, headers=api.alice)
    assert error_message(r, 422, "invalid_request") == (
        f"messages.1: a {empty['role']} message with nothing to store: send text, content "
        "parts or tool calls"
    )
    _nothing_stored(api, sid)  # the batch is all or nothing
    later = [{"id": "e1", "role": "user", "content": "now with text"}]
    r = api.client.post(f"/api/sessions/{sid}/events", json={"messages": later}, headers=api.alice)
    assert r.json()["data"] == {"added": 1, "skipped": 0, "last_ordinal": 1}  # not skipped


STORABLE_WITHOUT_TEXT = [
    pytest.param(
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [{"id": "c1", "function": {"name": "ls", "arguments": "{}"}}],
        },
        id="tool-calls",
    ),
    pytest.param({"role": "user", "content": [{"type": "image_url"}]}, id="image-part"),
    pytest.param({"role": "tool", "tool_call_id": "c1", "content": ""}, id="empty-tool-result"),
]


@pytest.mark.parametrize("message", STORABLE_WITHOUT_TEXT)
def test_a_message_without_text_but_storable_parts_is_kept(
    api: Api, message: dict[str, Any]
) -> None:
    sid = api.make_session()
    r = api.client.post(
        f"/api/sessions/{sid}/events", json={"messages": [message]}, headers=api.alice
    )
    assert r.status_code == 200, r.text
    assert r.json()["data"]["added"] == 1
    assert api.memoir.store.events.last_ordinal(sid) >= 1


# 5 -- timestamps --------------------------------------------------------------------------

BAD_TIMES = [
    pytest.param(b'"garbage"', id="garbage"),
    pytest.param(b"1e300", id="1e300"),
    pytest.param(b"-5", id="negative"),
    pytest.param(b'""', id="empty"),
    pytest.param(b"true", id="bool"),
    pytest.param(b'"9999-12-31T23:59:59-01:00"', id="past-year-9999-in-utc"),
]


@pytest.mark.parametrize("when", BAD_TIMES)
def test_a_timestamp_that_is_not_a_time_is_refused(api: Api, when: bytes) -> None:
    sid = api.make_session()
    raw = b'{"messages": [{"role": "user", "content": "x", "timestamp": ' + when + b"}]}"
    message = error_message(_post(api, f"/api/sessions/{sid}/events", raw), 422, "invalid_request")
    assert message.startswith("messages.0.timestamp: not a time"), message
    _nothing_stored(api, sid)


@pytest.mark.parametrize("when", [b"Infinity", b"-Infinity", b"NaN"])
def test_non_json_numbers_are_refused_as_not_json(api: Api, when: bytes) -> None:
    sid = api.make_session()
    raw = b'{"messages": [{"role": "user", "content": "x", "timestamp": ' + when + b"}]}"
    message = error_message(_post(api, f"/api/sessions/{sid}/events", raw), 422, "invalid_request")
    assert "is not a JSON number" in message
    _nothing_stored(api, sid)


GOOD_TIMES = [
    pytest.param("2025-03-04T05:06:07Z", "2025-03-04T05:06:07+00:00", id="iso-utc"),
    pytest.param("2025-03-04", "2025-03-04T00:00:00+00:00", id="date"),
    pytest.param(1741064767, "2025-03-04T05:06:07+00:00", id="epoch-seconds"),
    pytest.param(1741064767000, "2025-03-04T05:06:07+00:00", id="epoch-ms"),
]


@pytest.mark.parametrize(("when", "stored"), GOOD_TIMES)
def test_a_timestamp_is_stored(api: Api, when: object, stored: str) -> None:
    sid = api.make_session()
    batch = [{"role": "user", "content": "x", "timestamp": when}]
    r = api.client.post(f"/api/sessions/{sid}/events", json={"messages": batch}, headers=api.alice)
    assert r.status_code == 200, r.text
    events = api.client.get(f"/api/sessions/{sid}/events", headers=api.alice).json()
    assert events["data"]["events"][0]["timestamp"] == stored
