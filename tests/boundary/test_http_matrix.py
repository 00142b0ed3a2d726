"""Every HTTP route, enumerated from the running app's OpenAPI, acted on as Alice: on her
own object it works; on Bob's and on one that does not exist the answer is the same
(status and body, the echoed id aside); a list names nothing of Bob's; nothing of Bob's
changes. A route this table does not classify fails :func:`test_every_route_is_classified`,
so a new route cannot ship unchecked."""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pytest
from fastapi.testclient import TestClient

from memoir.server import create_app

from .conftest import A_STORED, B_STORED, A, B, World
from .matrix import Refs, dumps, no_leak, refs, same_refusal

MISSING_STORED = "f" * 32  # shaped as a stored id; no session has it


@dataclass(frozen=True)
class Call:
    """One call: ``kind`` says what ``{ref}`` in the path, query or body stands for —
    "session", "item", "project" (its three references are tried), "wide" (a list or
    search of the caller's own: no reference), "public" (no key at all), "name" (a session
    name: Bob's name and a fresh one alike make a new session of hers, answered alike)."""

    method: str
    path: str
    kind: str
    ok: int = 200
    body: Any = None
    refused: int | None = None  # Bob's and the missing one's status (None: 404 or 422)

    def route(self) -> tuple[str, str]:
        bare = self.path.split("?")[0]
        bare = bare.replace("{ref}", "{item_id}" if self.kind == "item" else "{session_id}")
        return self.method, bare

    def filled(self, ref: str) -> tuple[str, Any]:
        body = None if self.body is None else _fill(self.body, ref)
        return self.path.replace("{ref}", ref), body


def _fill(value: Any, ref: str) -> Any:
    if isinstance(value, str):
        return value.replace("{ref}", ref)
    if isinstance(value, dict):
        return {k: _fill(v, ref) for k, v in value.items()}
    if isinstance(value, list):
        return [_fill(v, ref) for v in value]
    return value


_MESSAGES = {"messages": [{"role": "user", "content": "one more thing", "id": "m-3"}]}
CALLS: list[Call] = [
    Call("GET", "/healthz", "public"),
    Call("GET", "/readyz", "public"),
    Call("POST", "/api/sessions", "name", 200, {"id": "{ref}", "project": "p"}),
    Call("GET", "/api/sessions", "wide"),
    Call("GET", "/api/sessions?order=recent", "wide"),
    # a filter naming Bob's project finds nothing, as one naming no project does
    Call("GET", "/api/sessions?order=recent&project={ref}", "project", refused=200),
    Call("GET", "/api/sessions/{ref}", "session"),
    Call("POST", "/api/sessions/{ref}/archive", "session"),
    Call("POST", "/api/sessions/{ref}/events", "session", 200, _MESSAGES),
    Call("GET", "/api/sessions/{ref}/events", "session"),
    Call("GET", "/api/sessions/{ref}/exchanges", "session"),
    Call("GET", "/api/search?q=prefer+cluster+tabs", "wide"),
    Call("GET", "/api/search?q=prefer&session={ref}", "session"),
    Call("POST", "/api/sessions/{ref}/compact", "session", 200, {"window": 200000}),
    Call("GET", "/api/sessions/{ref}/summary", "session"),
    Call("POST", "/api/sessions/{ref}/summary/regenerate", "session", 202),
    Call("GET", "/api/memories", "wide"),
    Call("GET", "/api/memories?q=prefer+cluster", "wide"),
    Call("GET", "/api/memories/context", "wide"),
    Call("GET", "/api/memories/{ref}", "item"),
    Call("DELETE", "/api/memories/{ref}", "item"),
    Call("POST", "/api/memories/forget", "wide", 200, {"matching": "prefer"}),
    Call("POST", "/api/memories/forget", "session", 200, {"session": "{ref}"}),
    Call("POST", "/api/memories/forget", "project", 200, {"project": "{ref}"}),
    Call("POST", "/api/sessions/{ref}/remember", "session"),
    Call("GET", "/api/usage", "wide"),
]
_IDS = [f"{c.method} {c.path} ({c.kind})" for c in CALLS]
# the routes a page or a person reads, not the API: served without a key, holding no data
UNGUARDED = {("GET", "/"), ("GET", "/docs"), ("GET", "/openapi.json")}


@pytest.fixture
def client(world: World) -> Iterator[TestClient]:
    with TestClient(create_app(world.memoir), raise_server_exceptions=False) as made:
        yield made


def _as(world: World, user: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {world.keys[user]}"}


def _send(client: TestClient, world: World, call: Call, ref: str) -> tuple[int, str]:
    path, body = call.filled(ref)
    headers = {} if call.kind == "public" else _as(world, A)
    r = client.request(call.method, path, json=body, headers=headers)
    return r.status_code, r.text


def _made(text: str, name: str) -> dict[str, Any]:
    """A created session's answer with what differs between two creations blanked: the
    name sent, the id made of it, and the times."""
    body = json.loads(text)
    session = body["data"]["session"]
    assert session["name"] == name and len(session["id"]) == 32
    blank = dict.fromkeys(("id", "name", "created_at", "updated_at"), "")
    return {**body, "data": {"session": {**session, **blank}}}


def test_every_route_is_classified(client: TestClient) -> None:
    spec = client.get("/openapi.json").json()
    routes = {
        (method.upper(), path)
        for path, ops in spec["paths"].items()
        for method in ops
        if method in {"get", "post", "put", "patch", "delete"}
    }
    classified = {c.route() for c in CALLS}
    assert routes - classified == set(), "routes the matrix does not classify"
    assert classified - routes == set(), "the matrix names routes the app does not have"


@pytest.mark.parametrize("call", CALLS, ids=_IDS)
def test_route_as_alice(world: World, client: TestClient, call: Call) -> None:
    bob_before = world.snapshot(B)
    if call.kind in ("public", "wide"):
        status, text = _send(client, world, call, "")
        assert status == call.ok, text
        no_leak(world, text)
    elif call.kind == "name":
        r = refs(world, "session")
        other = _send(client, world, call, r.other)
        missing = _send(client, world, call, r.missing)
        assert other[0] == missing[0] == 201, (other, missing)  # both: a new session of hers
        assert _made(other[1], r.other) == _made(missing[1], r.missing)
        no_leak(world, other[1].replace(r.other, ""))
        status, text = _send(client, world, call, r.own)
        assert status == call.ok, text  # her own name: her session, as it is
        assert f'"id":"{A_STORED}"' in text.replace(" ", "")
    else:
        r = refs(world, call.kind)
        other = _send(client, world, call, r.other)
        missing = _send(client, world, call, r.missing)
        assert other[0] in ((404, 422) if call.refused is None else (call.refused,)), other
        same_refusal(other, missing, r)
        no_leak(world, other[1].replace(r.other, ""))
        if call.kind == "session":  # Bob's session by the id it is stored under, too
            stored = Refs(A_STORED, B_STORED, MISSING_STORED)
            by_id = _send(client, world, call, B_STORED)
            same_refusal(by_id, _send(client, world, call, MISSING_STORED), stored)
            no_leak(world, by_id[1].replace(B_STORED, ""))
        status, text = _send(client, world, call, r.own)  # last: it may change her own
        assert status == call.ok, text
        no_leak(world, text)
    assert dumps(world.snapshot(B)) == dumps(bob_before), "something of Bob's changed"
