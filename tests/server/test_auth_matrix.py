"""Every route × {no key, wrong key, another user's key, the owner's key}: 401 without a
valid key; another user's session is 404 (as if it did not exist) and the user-wide lists
show none of the owner's data; the owner gets an answer."""

from __future__ import annotations

from typing import Any

import pytest

from memoir.model.event import named_session_id

from .server_api import Api

SID = "alice-chat"  # Alice's name for her session: the URLs take it
STORED = named_session_id("alice", SID)  # the id it is stored under (hits name it)
# method, path, JSON body, the owner's status; user_wide: another user gets 200 without data
ROUTES: list[tuple[str, str, Any, int, bool]] = [
    ("POST", "/api/sessions", {"project": "p"}, 201, True),
    ("GET", "/api/sessions", None, 200, True),
    ("GET", f"/api/sessions/{SID}", None, 200, False),
    ("POST", f"/api/sessions/{SID}/archive", None, 200, False),
    (
        "POST",
        f"/api/sessions/{SID}/events",
        {"messages": [{"role": "user", "content": "more", "id": "x1"}]},
        200,
        False,
    ),
    ("GET", f"/api/sessions/{SID}/events", None, 200, False),
    ("GET", f"/api/sessions/{SID}/exchanges", None, 200, False),
    ("GET", "/api/search?q=zanzibar", None, 200, True),
    ("GET", f"/api/search?q=zanzibar&session={SID}", None, 200, False),
    ("POST", f"/api/sessions/{SID}/compact", {"window": 200000}, 200, False),
    ("GET", f"/api/sessions/{SID}/summary", None, 200, False),
    ("POST", f"/api/sessions/{SID}/summary/regenerate", None, 202, False),
    ("GET", "/api/memories", None, 200, True),
    ("DELETE", "/api/memories/no-such-item", None, 404, False),
    ("GET", "/api/memories/no-such-item", None, 404, False),
    ("GET", "/api/memories/context", None, 200, True),
    ("POST", "/api/memories/forget", {"matching": "nothing-like-this"}, 200, True),
    ("POST", f"/api/sessions/{SID}/remember", None, 200, False),
    ("GET", "/api/usage", None, 200, True),
]
IDS = [f"{m} {p}" for m, p, *_ in ROUTES]


@pytest.fixture
def owned(api: Api) -> Api:
    api.make_session(SID)
    messages = [
        {"role": "user", "content": "remember: the zanzibar server is in rack 4", "id": "1"},
        {"role": "assistant", "content": "noted, zanzibar is in rack 4", "id": "2"},
    ]
    r = api.client.post(
        f"/api/sessions/{SID}/events", json={"messages": messages}, headers=api.alice
    )
    assert r.status_code == 200
    return api


def _call(api: Api, method: str, path: str, body: Any, headers: dict[str, str]) -> Any:
    return api.client.request(method, path, json=body, headers=headers)


def _is_error(r: Any, status: int) -> None:
    assert r.status_code == status, (r.status_code, r.text)
    assert set(r.json()) == {"error"} and {"code", "message"} <= set(r.json()["error"])


@pytest.mark.parametrize(("method", "path", "body", "ok", "user_wide"), ROUTES, ids=IDS)
def test_auth_matrix(
    owned: Api, method: str, path: str, body: Any, ok: int, user_wide: bool
) -> None:
    api = owned
    _is_error(_call(api, method, path, body, {}), 401)
    _is_error(_call(api, method, path, body, {"Authorization": "Bearer mk_wrong"}), 401)
    _is_error(_call(api, method, path, body, {"Authorization": "Basic abc"}), 401)
    other = _call(api, method, path, body, api.bob)
    if user_wide:
        assert other.status_code == ok, other.text
        assert SID not in other.text and "zanzibar" not in other.text.replace("q=zanzibar", "")
        assert STORED not in other.text
    else:
        _is_error(other, 404)
    # nothing another user did changed the owner's session
    assert api.memoir.store.events.last_ordinal(STORED) == 2
    assert api.memoir.store.sessions.get(STORED).flags.archived is False  # type: ignore[union-attr]
    mine = _call(api, method, path, body, api.alice)
    assert mine.status_code == ok, mine.text


def test_every_api_route_is_in_the_matrix(api: Api) -> None:
    schema = api.client.get("/openapi.json").json()
    routes = {
        (method.upper(), path)
        for path, ops in schema["paths"].items()
        if path.startswith("/api/")
        for method in ops
    }
    covered = {(m, p.split("?")[0].replace(SID, "{session_id}")) for m, p, *_ in ROUTES}
    covered = {(m, p.replace("no-such-item", "{item_id}")) for m, p in covered}
    assert routes == covered


BOB_STORED = named_session_id("bob", "bob-chat")


def test_search_never_returns_another_users_exchange(owned: Api) -> None:
    api = owned
    api.make_session("bob-chat", who="bob")
    api.client.post(
        "/api/sessions/bob-chat/events",
        json={"messages": [{"role": "user", "content": "zanzibar lives in rack 9"}]},
        headers=api.bob,
    )
    for mode in ("text", None):
        params = {"q": "zanzibar rack", **({"mode": mode} if mode else {})}
        alice = api.client.get("/api/search", params=params, headers=api.alice).json()
        bob = api.client.get("/api/search", params=params, headers=api.bob).json()
        assert {h["session_id"] for h in alice["data"]["hits"]} == {STORED}
        assert {h["session_id"] for h in bob["data"]["hits"]} == {BOB_STORED}
    # the library acts for one user too: local (the default) has neither; each named
    # user sees their own, and both only when both are named in turn
    assert {h.session_id for h in api.memoir.search("zanzibar")} == set()
    assert {h.session_id for h in api.memoir.as_user("alice").search("zanzibar")} == {STORED}
    assert {h.session_id for h in api.memoir.as_user("bob").search("zanzibar")} == {BOB_STORED}
