"""Secrets are masked in what the API shows — search snippets, events, exchanges — and
``reveal=true`` shows them to their owner; the stored text is never changed."""

from __future__ import annotations

from typing import Any

from memoir import service

from .server_api import Api

AWS = "AKIAQYLPMN5HHHFPZAM2"
PASSWORD = "s3cr3tV4lue"
ASK = f"deploy the zanzibar stack with {AWS} please"
REPLY = f"zanzibar is up; I set DB_PASSWORD={PASSWORD}; API_KEY=abc123xyz789q for it"
SHOWN_AWS = "[redacted: AWS access key]"
SHOWN_SECRET = "[redacted: secret]"


def _session(api: Api) -> None:
    api.make_session("vault")
    messages = [{"role": "user", "content": ASK}, {"role": "assistant", "content": REPLY}]
    r = api.client.post(
        "/api/sessions/vault/events", json={"messages": messages}, headers=api.alice
    )
    assert r.status_code == 200, r.text


def _get(api: Api, path: str, **params: Any) -> Any:
    r = api.client.get(path, params=params, headers=api.alice)
    assert r.status_code == 200, r.text
    return r.json()["data"]


def test_search_snippets_are_masked_and_highlights_still_fit(api: Api) -> None:
    _session(api)
    (hit,) = _get(api, "/api/search", q="zanzibar", mode="text")["hits"]
    snippet = hit["snippet"]
    assert AWS not in snippet and PASSWORD not in snippet
    assert SHOWN_AWS in snippet or SHOWN_SECRET in snippet
    # the spans are of the masked text: each still encloses the query word
    assert hit["highlights"]
    assert {snippet[a:b].lower() for a, b in hit["highlights"]} == {"zanzibar"}
    (raw,) = _get(api, "/api/search", q="zanzibar", mode="text", reveal="true")["hits"]
    assert AWS in raw["snippet"] or PASSWORD in raw["snippet"]
    assert {raw["snippet"][a:b].lower() for a, b in raw["highlights"]} == {"zanzibar"}


def test_a_highlight_on_the_secret_covers_its_placeholder(api: Api) -> None:
    _session(api)
    (hit,) = _get(api, "/api/search", q=AWS, mode="text")["hits"]
    snippet = hit["snippet"]
    assert AWS not in snippet
    assert [snippet[a:b] for a, b in hit["highlights"]] == [SHOWN_AWS]


def test_events_and_exchanges_are_masked_unless_revealed(api: Api) -> None:
    _session(api)
    events = _get(api, "/api/sessions/vault/events")["events"]
    texts = [e["text"] for e in events]
    assert texts == [
        f"deploy the zanzibar stack with {SHOWN_AWS} please",
        f"zanzibar is up; I set DB_PASSWORD={SHOWN_SECRET}; API_KEY={SHOWN_SECRET} for it",
    ]
    (x,) = _get(api, "/api/sessions/vault/exchanges")["exchanges"]
    assert AWS not in x["user_text"] and SHOWN_AWS in x["user_text"]
    assert PASSWORD not in x["assistant_text"] and SHOWN_SECRET in x["assistant_text"]

    revealed = _get(api, "/api/sessions/vault/events", reveal="true")["events"]
    assert [e["text"] for e in revealed] == [ASK, REPLY]
    (rx,) = _get(api, "/api/sessions/vault/exchanges", reveal="true")["exchanges"]
    assert AWS in rx["user_text"] and PASSWORD in rx["assistant_text"]
    # presentation only: the store still holds what was said
    stored = api.memoir.store.events.of(service.user_session(api.memoir, "alice", "vault").id)
    assert [e.text for e in stored] == [ASK, REPLY]


def test_reveal_is_still_only_the_callers_own(api: Api) -> None:
    _session(api)
    r = api.client.get("/api/sessions/vault/events", params={"reveal": "true"}, headers=api.bob)
    assert r.status_code == 404
    r = api.client.get("/api/search", params={"q": "zanzibar", "reveal": "true"}, headers=api.bob)
    assert r.status_code == 200 and r.json()["data"]["hits"] == []
