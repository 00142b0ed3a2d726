"""Paths and query values at their edges: an `after` of any size, a cursor nested too
deep, a trailing slash, a regeneration with nothing to summarize."""

from __future__ import annotations

import base64

import pytest

from memoir import service

from .server_api import Api, error_message


def _with_events(api: Api, sid: str = "s1", n: int = 3) -> str:
    api.make_session(sid)
    messages = [{"role": "user", "content": f"message {i}"} for i in range(n)]
    r = api.client.post(
        f"/api/sessions/{sid}/events", json={"messages": messages}, headers=api.alice
    )
    assert r.status_code == 200, r.text
    return sid


HUGE_AFTER = [
    pytest.param(str(2**63 - 1), id="int64-max"),
    pytest.param(str(2**63 - 1000), id="int64-max-less-the-limit"),
    pytest.param("99999999999999999999", id="past-int64"),
    pytest.param("3", id="the-last-ordinal"),
]


@pytest.mark.parametrize("after", HUGE_AFTER)
@pytest.mark.parametrize("what", ["events", "exchanges"])
def test_an_after_past_the_end_is_an_empty_page(api: Api, after: str, what: str) -> None:
    sid = _with_events(api)
    r = api.client.get(f"/api/sessions/{sid}/{what}", params={"after": after}, headers=api.alice)
    assert r.status_code == 200, r.text
    assert r.json() == {"data": {what: []}, "next_cursor": None}


def test_events_page_up_to_the_last(api: Api) -> None:
    sid = _with_events(api, n=5)
    r = api.client.get(
        f"/api/sessions/{sid}/events", params={"after": 2, "limit": 2}, headers=api.alice
    )
    body = r.json()
    assert [e["ordinal"] for e in body["data"]["events"]] == [3, 4]
    assert body["next_cursor"] == "4"
    r = api.client.get(
        f"/api/sessions/{sid}/events", params={"after": 4, "limit": 1000}, headers=api.alice
    )
    assert [e["ordinal"] for e in r.json()["data"]["events"]] == [5]
    assert r.json()["next_cursor"] is None


def _cursor(raw: str) -> str:
    return base64.urlsafe_b64encode(raw.encode()).decode().rstrip("=")


# the schema's pattern (base64url, at most 1,000 characters) refuses some (422); one it
# lets through that this API did not give names no page of the caller's (404)
_FORMAT = (422, "invalid_request", "query.cursor: not a cursor this API gave")
_NO_PAGE = (404, "not_found", "cursor: not a cursor this API gave")
BAD_CURSORS = [
    pytest.param(_cursor("[" * 20000 + "]" * 20000), _FORMAT, id="nested-20000"),
    pytest.param(_cursor("[" * 100 + "]" * 100), _NO_PAGE, id="nested-100"),
    pytest.param(_cursor("NaN"), _NO_PAGE, id="nan"),
    pytest.param(_cursor("{not json"), _NO_PAGE, id="malformed"),
    pytest.param("%%%", _FORMAT, id="not-base64"),
]


@pytest.mark.parametrize(("cursor", "refused"), BAD_CURSORS)
@pytest.mark.parametrize("order", ["created", "recent"])
def test_a_cursor_not_from_this_api_is_refused(
    api: Api, cursor: str, refused: tuple[int, str, str], order: str
) -> None:
    r = api.client.get(
        "/api/sessions", params={"cursor": cursor, "order": order}, headers=api.alice
    )
    status, code, message = refused
    assert error_message(r, status, code) == message


@pytest.mark.parametrize(
    "path", ["/api/sessions/", "/api/search/", "/api/memories/", "/api/usage/", "/healthz/"]
)
def test_a_trailing_slash_is_404_not_a_redirect(api: Api, path: str) -> None:
    r = api.client.get(path, headers={**api.alice, "Host": "evil.example"}, follow_redirects=False)
    assert "location" not in r.headers
    error_message(r, 404, "not_found")


def test_regenerating_a_session_with_no_events_is_409_and_queues_nothing(api: Api) -> None:
    sid = api.make_session()
    r = api.client.post(f"/api/sessions/{sid}/summary/regenerate", headers=api.alice)
    assert "nothing to summarize" in error_message(r, 409, "summary_failed")
    assert service.summary_job(api.memoir, "alice", sid) is None
    # another user's session is still 404 (not told apart from one that does not exist)
    r = api.client.post(f"/api/sessions/{sid}/summary/regenerate", headers=api.bob)
    error_message(r, 404, "not_found")
