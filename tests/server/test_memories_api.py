"""The memory API on both backends: remember, recall (`q`), the context block, one item
with its history, forget by item and by selector — each limited to the caller's items."""

from __future__ import annotations

from memoir.model.event import named_session_id

from .server_api import Api


def _say(api: Api, sid: str, text: str, who: str = "alice") -> None:
    headers = api.alice if who == "alice" else api.bob
    api.make_session(sid, who)
    batch = [
        {"role": "user", "content": text, "id": f"{sid}-u"},
        {"role": "assistant", "content": "Noted.", "id": f"{sid}-a"},
    ]
    r = api.client.post(f"/api/sessions/{sid}/events", json={"messages": batch}, headers=headers)
    assert r.status_code == 200, r.text
    r = api.client.post(f"/api/sessions/{sid}/remember", json={}, headers=headers)
    assert r.status_code == 200 and r.json()["data"]["outcome"]["items"], r.text


def test_recall_context_history_and_forget_are_the_callers_own(api: Api) -> None:
    _say(api, "a1", "I prefer tabs over spaces.")
    _say(api, "a2", "I live in Berlin.")
    _say(api, "a3", "I moved to Lisbon.")
    _say(api, "b1", "I prefer tabs over spaces.", who="bob")
    got = api.client.get("/api/memories", params={"q": "tabs"}, headers=api.alice).json()
    (tabs,) = got["data"]["memories"]
    assert tabs["content"] == "I prefer tabs over spaces." and tabs["score"] > 0
    a1 = named_session_id("alice", "a1")  # the id Alice's "a1" is stored under
    assert tabs["sources"][0]["exchange_id"] == f"{a1}:1"  # bob's identical words stay his
    listed = api.client.get("/api/memories", headers=api.alice).json()["data"]["memories"]
    assert sorted(i["content"] for i in listed) == [
        "I moved to Lisbon.",
        "I prefer tabs over spaces.",
    ]
    everything = api.client.get("/api/memories", params={"history": "true"}, headers=api.alice)
    assert len(everything.json()["data"]["memories"]) == 3
    lisbon = next(i for i in listed if "Lisbon" in i["content"])
    one = api.client.get(f"/api/memories/{lisbon['id']}", headers=api.alice).json()["data"]
    assert [h["content"] for h in one["memory"]["history"]] == ["I live in Berlin."]
    assert api.client.get(f"/api/memories/{lisbon['id']}", headers=api.bob).status_code == 404
    block = api.client.get("/api/memories/context", params={"budget": 200}, headers=api.alice)
    data = block.json()["data"]
    assert 0 < data["tokens"] <= 200 and len(data["items"]) == 2
    assert "Lisbon" in data["text"] and "Berlin" not in data["text"]
    assert api.client.delete(f"/api/memories/{tabs['id']}", headers=api.bob).status_code == 404
    gone = api.client.delete(f"/api/memories/{lisbon['id']}", headers=api.alice).json()["data"]
    assert len(gone["items"]) == 2  # Lisbon and the Berlin it superseded
    r = api.client.post("/api/memories/forget", json={"matching": "tabs"}, headers=api.alice)
    assert r.json()["data"]["items"] == [tabs["id"]]
    assert api.client.get("/api/memories", headers=api.alice).json()["data"]["memories"] == []
    bobs = api.client.get("/api/memories", headers=api.bob).json()["data"]["memories"]
    assert [i["content"] for i in bobs] == ["I prefer tabs over spaces."]
    bad = api.client.post(
        "/api/memories/forget", json={"session": "a1", "project": "x"}, headers=api.alice
    )
    assert bad.status_code == 422 and "exactly one" in bad.json()["error"]["message"]
    theirs = api.client.post("/api/memories/forget", json={"session": "b1"}, headers=api.alice)
    assert theirs.status_code == 404


def test_forget_matching_text_with_no_words_forgets_nothing(api: Api) -> None:
    """The schema cannot say "holds a word", so text of none is a match of nothing: 200,
    no item gone (the CLI refuses it before asking, as a usage error)."""
    _say(api, "a1", "I prefer tabs over spaces.")
    for text in (" \u009b ", "!!!", "--"):
        r = api.client.post("/api/memories/forget", json={"matching": text}, headers=api.alice)
        assert (r.status_code, r.json()["data"]["items"]) == (200, [])
    listed = api.client.get("/api/memories", headers=api.alice).json()["data"]["memories"]
    assert [i["content"] for i in listed] == ["I prefer tabs over spaces."]
