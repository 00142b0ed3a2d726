"""Sessions and idempotent appends over HTTP, on both backends."""

from __future__ import annotations

import threading

from memoir.model.event import named_session_id

from .server_api import Api


def _msgs(prefix: str, n: int, *, ids: bool = True) -> list[dict[str, object]]:
    out: list[dict[str, object]] = []
    for i in range(n):
        role = "user" if i % 2 == 0 else "assistant"
        m: dict[str, object] = {"role": role, "content": f"{prefix} message {i}"}
        if ids:
            m["id"] = f"{prefix}-{i}"
        out.append(m)
    return out


def test_create_get_list_archive(api: Api) -> None:
    r = api.client.post(
        "/api/sessions", json={"id": "chat-1", "project": "p", "incognito": True}, headers=api.alice
    )
    assert r.status_code == 201
    session = r.json()["data"]["session"]
    mine = named_session_id("alice", "chat-1")  # the name is Alice's; the id is Memoir's
    assert (session["id"], session["name"]) == (mine, "chat-1")
    assert (session["project"], session["incognito"]) == ("p", True)
    again = api.client.post("/api/sessions", json={"id": "chat-1"}, headers=api.alice)
    assert again.status_code == 200  # yours already: returned as it is
    assert again.json()["data"]["session"] == session
    by_id = api.client.post("/api/sessions", json={"id": mine}, headers=api.alice)
    assert by_id.status_code == 200 and by_id.json()["data"]["session"]["id"] == mine
    bobs = api.client.post("/api/sessions", json={"id": "chat-1"}, headers=api.bob)
    assert bobs.status_code == 201  # names are per user: Bob's chat-1 is another session
    assert bobs.json()["data"]["session"]["id"] == named_session_id("bob", "chat-1") != mine
    fresh = api.client.post("/api/sessions", json={}, headers=api.alice)
    made = fresh.json()["data"]["session"]
    assert fresh.status_code == 201 and len(made["id"]) == 32 and made["name"] is None
    got = api.client.get("/api/sessions/chat-1", headers=api.alice).json()["data"]["session"]
    assert (got["id"], got["events"]) == (mine, 0)
    listed = api.client.get("/api/sessions", headers=api.alice).json()
    assert {(s["id"], s["name"]) for s in listed["data"]["sessions"]} == {
        (mine, "chat-1"),
        (made["id"], None),
    }
    bob_listed = api.client.get("/api/sessions", headers=api.bob).json()["data"]["sessions"]
    assert [s["name"] for s in bob_listed] == ["chat-1"]
    archived = api.client.post("/api/sessions/chat-1/archive", headers=api.alice)
    assert archived.json()["data"]["session"]["archived"] is True
    bob_got = api.client.get("/api/sessions/chat-1", headers=api.bob).json()["data"]["session"]
    assert bob_got["archived"] is False  # Alice's archive touched her chat-1 only


def test_sessions_page_by_cursor(api: Api) -> None:
    for i in range(5):
        api.make_session(f"s{i}")
    seen: list[str] = []
    cursor = None
    pages = 0
    while True:
        params = {"limit": 2, **({"cursor": cursor} if cursor else {})}
        body = api.client.get("/api/sessions", params=params, headers=api.alice).json()
        seen += [s["name"] for s in body["data"]["sessions"]]
        pages += 1
        cursor = body["next_cursor"]
        if cursor is None:
            break
    assert sorted(seen) == [f"s{i}" for i in range(5)] and len(seen) == 5 and pages == 3
    bad = api.client.get("/api/sessions", params={"cursor": "!!"}, headers=api.alice)
    assert bad.status_code == 422 and bad.json()["error"]["code"] == "invalid_request"


def test_append_builds_events_and_exchanges(api: Api) -> None:
    sid = api.make_session()
    batch = [
        {"role": "user", "content": "how do I rotate the kafka keys?", "id": "m1"},
        {"role": "assistant", "content": "use the rotate script", "id": "m2"},
    ]
    r = api.client.post(f"/api/sessions/{sid}/events", json={"messages": batch}, headers=api.alice)
    assert r.status_code == 200, r.text
    assert r.json()["data"] == {"added": 2, "skipped": 0, "last_ordinal": 2}
    more = [{"role": "assistant", "content": "then restart the brokers", "id": "m3"}]
    api.client.post(f"/api/sessions/{sid}/events", json={"messages": more}, headers=api.alice)
    events = api.client.get(f"/api/sessions/{sid}/events", headers=api.alice).json()
    assert [e["ordinal"] for e in events["data"]["events"]] == [1, 2, 3]
    exchanges = api.client.get(f"/api/sessions/{sid}/exchanges", headers=api.alice).json()
    [x] = exchanges["data"]["exchanges"]  # the assistant's later turn grew the one exchange
    assert x["last_ordinal"] == 3 and "restart the brokers" in x["assistant_text"]
    hits = api.client.get("/api/search", params={"q": "kafka"}, headers=api.alice).json()
    assert [h["session_id"] for h in hits["data"]["hits"]] == [sid]


def test_events_page(api: Api) -> None:
    sid = api.make_session()
    api.client.post(
        f"/api/sessions/{sid}/events", json={"messages": _msgs("a", 7)}, headers=api.alice
    )
    first = api.client.get(
        f"/api/sessions/{sid}/events", params={"limit": 4}, headers=api.alice
    ).json()
    assert [e["ordinal"] for e in first["data"]["events"]] == [1, 2, 3, 4]
    second = api.client.get(
        f"/api/sessions/{sid}/events",
        params={"limit": 4, "after": first["next_cursor"]},
        headers=api.alice,
    ).json()
    assert [e["ordinal"] for e in second["data"]["events"]] == [5, 6, 7]
    assert second["next_cursor"] is None


def test_retried_batch_is_stored_once(api: Api) -> None:
    sid = api.make_session()
    batch = {"messages": _msgs("r", 6)}
    answers = [
        api.client.post(f"/api/sessions/{sid}/events", json=batch, headers=api.alice).json()
        for _ in range(3)
    ]
    assert [a["data"]["added"] for a in answers] == [6, 0, 0]
    assert [a["data"]["skipped"] for a in answers] == [0, 6, 6]
    assert [a["data"]["last_ordinal"] for a in answers] == [6, 6, 6]  # a retry's too
    assert api.memoir.store.events.last_ordinal(sid) == 6
    assert len(api.memoir.store.api.message_ids(sid)) == 6
    # a batch partly new: only the new message is stored
    grown = {"messages": [*batch["messages"], {"role": "user", "content": "new", "id": "r-6"}]}
    r = api.client.post(f"/api/sessions/{sid}/events", json=grown, headers=api.alice).json()
    assert (r["data"]["added"], r["data"]["skipped"], r["data"]["last_ordinal"]) == (1, 6, 7)
    assert api.memoir.store.events.last_ordinal(sid) == 7
    # an id repeated within one batch is stored once
    twice = [
        {"role": "user", "content": "x", "id": "d"},
        {"role": "user", "content": "x", "id": "d"},
    ]
    r = api.client.post(f"/api/sessions/{sid}/events", json={"messages": twice}, headers=api.alice)
    assert (r.json()["data"]["added"], r.json()["data"]["skipped"]) == (1, 1)


def test_concurrent_appends_keep_every_message_once(api: Api) -> None:
    sid = api.make_session()
    threads = 6
    per = 10
    errors: list[str] = []

    def post(n: int) -> None:
        for _attempt in range(2):  # each writer also retries its batch once
            r = api.client.post(
                f"/api/sessions/{sid}/events",
                json={"messages": _msgs(f"w{n}", per)},
                headers=api.alice,
            )
            if r.status_code != 200:
                errors.append(r.text)

    workers = [threading.Thread(target=post, args=(n,)) for n in range(threads)]
    for w in workers:
        w.start()
    for w in workers:
        w.join()
    assert errors == []
    events = api.memoir.store.events.of(sid)
    assert [e.ordinal for e in events] == list(range(1, threads * per + 1))
    texts = sorted(e.text for e in events)
    assert texts == sorted(f"w{n} message {i}" for n in range(threads) for i in range(per))
    ids = api.memoir.store.api.message_ids(sid)
    assert len(ids) == threads * per and len(set(ids.values())) == threads * per
    # every exchange is whole: each user message opens one
    assert len(api.memoir.store.exchanges.of(sid)) == threads * per // 2
