"""The request log at its default level names the route, the status and the caller, never
an API key, a message's text or a query."""

from __future__ import annotations

import logging

import pytest
from fastapi.testclient import TestClient

from memoir.server import create_app

from .conftest import A_SESSION, A, World

WORDS = "zebra-crossing-7731"  # said in a message, searched for, recalled


def test_the_log_holds_no_key_and_no_text(world: World, caplog: pytest.LogCaptureFixture) -> None:
    key = world.keys[A]
    headers = {"Authorization": f"Bearer {key}"}
    caplog.set_level(logging.INFO)
    with TestClient(create_app(world.memoir), raise_server_exceptions=False) as client:
        said = {"messages": [{"role": "user", "content": f"remember {WORDS}", "id": "z1"}]}
        assert client.post(
            f"/api/sessions/{A_SESSION}/events", json=said, headers=headers
        ).is_success
        assert client.get("/api/search", params={"q": WORDS}, headers=headers).is_success
        assert client.get("/api/memories", params={"q": WORDS}, headers=headers).is_success
        bad = {"Authorization": f"Bearer {key}x"}
        assert client.get("/api/search", params={"q": WORDS}, headers=bad).status_code == 401
    logged = "\n".join(
        f"{r.getMessage()} {sorted(vars(r).items(), key=lambda kv: kv[0])}"
        for r in caplog.records
        if r.name.startswith("memoir")  # the server's (httpx logs the test client's URLs)
    )
    assert f"/api/sessions/{A_SESSION}/events" in logged  # the log is there, and read
    assert key not in logged and key[3:12] not in logged
    assert WORDS not in logged and "remember" not in logged
