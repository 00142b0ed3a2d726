"""A session id a client chooses is a name of its user's: Alice and Bob each have their own
``chat-1``, over HTTP and through the library, on both backends. Each is stored under a
digest of its user and name; every lookup of a user's session takes the name or that id,
and another user's name or id is a lookup finding nothing, as a missing one is."""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

import pytest
from fastapi.testclient import TestClient

from memoir import service
from memoir.errors import NotFound
from memoir.model import Harness, Session
from memoir.model.event import named_session_id
from memoir.server import create_app

from .conftest import B_STORED, A, B, World

NAME = "chat-1"
SAID = {A: "the heron nests by the north pier", B: "the pelican nests by the south pier"}


@pytest.fixture
def client(world: World) -> Iterator[TestClient]:
    with TestClient(create_app(world.memoir), raise_server_exceptions=False) as made:
        yield made


def _auth(world: World, user: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {world.keys[user]}"}


@pytest.mark.parametrize(
    ("user", "name", "other_user", "other_name"),
    [
        ("alice", "chat-1", "bob", "chat-1"),  # another user, the same name
        ("alice", "chat-1", "alice", "chat-2"),  # the same user, another name
        ("ab", "c", "a", "bc"),  # the NUL keeps user and name apart (no user name holds one)
        ("a", "b\0c", "a", "b"),
    ],
)
def test_a_stored_id_is_a_digest_of_the_user_and_the_name(
    user: str, name: str, other_user: str, other_name: str
) -> None:
    made = named_session_id(user, name)
    assert re.fullmatch(r"[0-9a-f]{32}", made)  # shaped as a generated id
    assert made == named_session_id(user, name)  # stable
    assert made != named_session_id(other_user, other_name)


def test_alice_and_bob_each_have_their_own_chat_1_over_http(
    world: World, client: TestClient
) -> None:
    made: dict[str, Any] = {}
    for user in (A, B):
        r = client.post("/api/sessions", json={"id": NAME}, headers=_auth(world, user))
        assert r.status_code == 201, r.text  # Bob's is new, though Alice has a chat-1
        made[user] = r.json()["data"]["session"]
        assert (made[user]["id"], made[user]["name"]) == (named_session_id(user, NAME), NAME)
        said = {"messages": [{"role": "user", "content": SAID[user], "id": "m1"}]}
        r = client.post(f"/api/sessions/{NAME}/events", json=said, headers=_auth(world, user))
        assert r.json()["data"] == {"added": 1, "skipped": 0, "last_ordinal": 1}, r.text
    assert made[A]["id"] != made[B]["id"]
    for user, other in ((A, B), (B, A)):
        headers = _auth(world, user)
        again = client.post("/api/sessions", json={"id": NAME}, headers=headers)
        assert again.status_code == 200  # as it is: the append has moved its updated_at
        shown = again.json()["data"]["session"]
        assert {**shown, "updated_at": None} == {**made[user], "updated_at": None}
        for ref in (NAME, made[user]["id"]):  # the name and the stored id: the same session
            events = client.get(f"/api/sessions/{ref}/events", headers=headers).json()
            assert [e["text"] for e in events["data"]["events"]] == [SAID[user]]
        hits = client.get("/api/search", params={"q": "nests pier"}, headers=headers).json()
        assert [h["session_id"] for h in hits["data"]["hits"]] == [made[user]["id"]]
        assert SAID[other] not in str(hits)
        filtered = client.get(
            "/api/search", params={"q": "nests", "session": NAME}, headers=headers
        ).json()
        assert [h["session_id"] for h in filtered["data"]["hits"]] == [made[user]["id"]]
        theirs = client.get(f"/api/sessions/{made[other]['id']}/events", headers=headers)
        missing = client.get(f"/api/sessions/{'e' * 32}/events", headers=headers)
        assert theirs.status_code == missing.status_code == 404
        listed = client.get("/api/sessions", params={"order": "recent"}, headers=headers)
        names = {s["name"] for s in listed.json()["data"]["sessions"]}
        assert NAME in names and made[other]["id"] not in listed.text


def test_alice_and_bob_each_have_their_own_chat_1_through_the_library(world: World) -> None:
    memoir = world.memoir
    for user in (A, B):
        done = memoir.append(NAME, [{"role": "user", "content": SAID[user]}], user=user)
        assert (done.added, done.last_ordinal) == (1, 1)
    for user, other in ((A, B), (B, A)):
        view = memoir.as_user(user)
        stored = named_session_id(user, NAME)
        session = view.session(NAME)
        assert (session.id, session.name, session.user) == (stored, NAME, user)
        assert view.session(stored) == session == service.user_session(memoir, user, NAME)
        assert [e.text for e in view.events(NAME)] == [SAID[user]]
        assert [x.id for x in view.exchanges(NAME)] == [f"{stored}:1"]
        assert [h.session_id for h in view.search("nests pier", mode="text")] == [stored]
        again, created = service.create_session(memoir, user, session_id=NAME)
        assert (again, created) == (session, False)  # idempotent: the same session
        with pytest.raises(NotFound) as theirs:
            view.session(named_session_id(other, NAME))
        assert "no session" in str(theirs.value)
    # Alice appends to her chat-1 by name: Bob's is as it was
    service.append_messages(memoir, A, NAME, [{"role": "user", "content": "and the gulls"}])
    assert [e.text for e in memoir.as_user(B).events(NAME)] == [SAID[B]]


def test_a_name_of_bob_s_and_a_fresh_one_are_created_alike(world: World) -> None:
    """Through the library as over HTTP: nothing in the answer to Alice depends on what Bob
    holds (the HTTP matrix compares the two answers in full)."""
    theirs, new_a = service.create_session(world.memoir, A, session_id="bob-chat", project="p")
    fresh, new_b = service.create_session(world.memoir, A, session_id="nobody-chat", project="p")
    assert new_a is new_b is True
    for made, name in ((theirs, "bob-chat"), (fresh, "nobody-chat")):
        assert (made.user, made.name, made.id) == (A, name, named_session_id(A, name))
    assert world.memoir.store.sessions.get(B_STORED).user == B  # type: ignore[union-attr]


def test_one_owner_filtered_lookup_takes_a_name_or_an_id(world: World) -> None:
    """``SessionsPart.get`` with a user: that user's session of that id or name; a session
    stored before v21 under the id its client gave is still found by it; prefixes of the
    id (a hit's ``session_id[:8]``) and of the name resolve to the owner's only."""

    sessions = world.memoir.store.sessions
    legacy = Session(id="old-chat", project="api", harness=Harness.API, user=A)
    world.memoir.store.api.create(legacy)  # as a version before v21 stored it
    assert sessions.get("old-chat", user=A).id == "old-chat"  # type: ignore[union-attr]
    assert sessions.get("old-chat", user=B) is None
    again, created = service.create_session(world.memoir, A, session_id="old-chat")
    assert (again.id, created) == ("old-chat", False)  # her name for it: the old session
    for ref in ("bob-chat", B_STORED):
        assert sessions.get(ref, user=B).id == B_STORED  # type: ignore[union-attr]
        assert sessions.get(ref, user=A) is None
    assert sessions.get("bob-chat") is None  # without a user: ids only
    for ref in (B_STORED[:8], "bob-c"):
        assert sessions.resolve(ref, user=B) == B_STORED
        with pytest.raises(NotFound):
            sessions.resolve(ref, user=A)
