"""Your own (``local``) sessions over the API without inventing a user: ``memoir users key
local``, and the one-time sign-in link ``memoir serve`` prints on a loopback address —
decided by tables, traded once for a page key (on each backend), refused from anywhere
else, and never printed when the server listens on another address."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from fastapi.testclient import TestClient

from memoir.app import Memoir
from memoir.config import Settings
from memoir.demo.make_corpus import corpus_sources
from memoir.errors import ConfigError, NotFound
from memoir.server import create_app
from memoir.server.auth import PAGE_KEY_PREFIX, SignInLinks, is_loopback, link_url
from memoir.store.port import Store
from server.serve_proc import free_port, memoir_cli  # tests/server: on the rootdir path

INFRA = "7b8c9d0e-1f2a-4b3c-8d4e-5f6a7b8c9d06"  # a demo session (PgBouncer), synced: local's


@pytest.mark.parametrize(
    ("host", "loopback"),
    [
        ("127.0.0.1", True),
        ("127.3.2.1", True),
        ("localhost", True),
        ("LocalHost", True),
        ("::1", True),
        ("[::1]", True),
        ("0.0.0.0", False),
        ("::", False),
        ("192.168.1.20", False),
        ("10.0.0.1", False),
        ("fe80::1", False),
        ("example.com", False),
        ("localhost.example.com", False),
        ("testclient", False),
        ("", False),
    ],
)
def test_which_addresses_are_loopback(host: str, loopback: bool) -> None:
    assert is_loopback(host) is loopback


@pytest.mark.parametrize(
    ("host", "port", "url"),
    [
        ("127.0.0.1", 8420, "http://127.0.0.1:8420/#login=T"),
        ("localhost", 9000, "http://localhost:9000/#login=T"),
        ("::1", 8420, "http://[::1]:8420/#login=T"),
        ("[::1]", 8420, "http://[::1]:8420/#login=T"),
    ],
)
def test_the_link_carries_the_token_in_its_fragment(host: str, port: int, url: str) -> None:
    assert link_url(host, port, "T") == url


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def test_a_token_works_once_and_only_before_it_expires() -> None:
    clock = Clock()
    links = SignInLinks(ttl_s=60, clock=clock)
    first, late, other = links.issue("local"), links.issue("local"), links.issue("alice")
    assert len({first, late, other}) == 3 and len(first) >= 40
    user, key = links.redeem(first) or ("", "")
    assert user == "local" and key.startswith(PAGE_KEY_PREFIX)
    assert links.user_for(key) == "local"
    assert links.redeem(first) is None  # spent
    assert links.redeem("not-a-token") is None
    clock.now += 60.5
    assert links.redeem(late) is None  # expired
    assert links.user_for(key) == "local"  # a page key lasts as long as the server
    assert links.forget(key) is True and links.forget(key) is False
    assert links.user_for(key) is None
    assert links.user_for("mk_" + key[3:]) is None


def test_users_key_local_is_a_key_of_the_reserved_user(store: Store) -> None:
    users = store.users
    with pytest.raises(ConfigError, match="users key local"):
        users.add("local")
    with pytest.raises(NotFound, match="no user 'ghost'"):
        users.new_key("ghost")
    assert [u.name for u in users.list()] == []  # no row made by the refusals
    first = users.new_key("local", label="laptop")
    second = users.new_key("local")
    assert first != second and first.startswith("mk_")
    assert users.user_for(first) == users.user_for(second) == "local"
    alice = users.add("alice")
    again = users.new_key("alice")
    assert users.user_for(alice) == users.user_for(again) == "alice"
    assert {(u.name, u.keys) for u in users.list()} == {("local", 2), ("alice", 2)}
    assert users.revoke("local") == 2
    assert users.user_for(first) is None and users.user_for(alice) == "alice"


@pytest.fixture
def synced(home: Path, store: Store) -> Iterator[Memoir]:
    """The demo corpus synced into a store of each backend: every session is local's."""
    settings = Settings.from_env({"MEMOIR_HOME": str(home)}, sources=corpus_sources())
    memoir = Memoir(settings, store)
    memoir.sync()
    yield memoir


def _client(app: Any, host: str) -> TestClient:
    return TestClient(app, client=(host, 50123), raise_server_exceptions=False)


def _ids(r: httpx.Response) -> set[str]:
    assert r.status_code == 200, r.text
    return {s["id"] for s in r.json()["data"]["sessions"]}


def test_a_link_signs_in_as_local_once_from_this_machine(synced: Memoir) -> None:
    alice = synced.store.users.add("alice")
    app = create_app(synced)
    links = app.state.sign_in_links = SignInLinks()
    token, spare = links.issue("local"), links.issue("local")
    with _client(app, "127.0.0.1") as c:
        assert c.get("/api/sessions").status_code == 401  # nothing without a key
        assert _ids(c.get("/api/sessions", headers={"Authorization": f"Bearer {alice}"})) == set()
        r = c.post("/login", json={"token": token})
        assert r.status_code == 200, r.text
        assert r.json()["data"]["user"] == "local"
        page = {"Authorization": f"Bearer {r.json()['data']['key']}"}
        listed = _ids(c.get("/api/sessions", params={"limit": 100}, headers=page))
        assert INFRA in listed and len(listed) == 14  # the whole demo corpus
        exchanges = c.get(f"/api/sessions/{INFRA}/exchanges", headers=page).json()["data"]
        assert "PgBouncer" in str(exchanges)
        again = c.post("/login", json={"token": token})
        assert again.status_code == 401 and "used already" in again.json()["error"]["message"]
        assert c.post("/logout", headers=page).json() == {"data": {"ended": True}}
        ended = c.get("/api/sessions", headers=page)
        assert ended.status_code == 401 and "has ended" in ended.json()["error"]["message"]
    with _client(app, "192.168.1.20") as c:  # a live token from elsewhere is refused
        r = c.post("/login", json={"token": spare})
        assert r.status_code == 401 and "no sign-in links" in r.json()["error"]["message"]
    with _client(app, "::1") as c:  # … and still works here: it was not spent
        assert c.post("/login", json={"token": spare}).status_code == 200


def test_without_links_a_page_key_or_token_opens_nothing(synced: Memoir) -> None:
    app = create_app(synced)  # create_app alone (a server not on loopback): no links
    with _client(app, "127.0.0.1") as c:
        r = c.post("/login", json={"token": "anything-at-all"})
        assert r.status_code == 401
        bogus = {"Authorization": f"Bearer {PAGE_KEY_PREFIX}made-up"}
        assert c.get("/api/sessions", headers=bogus).status_code == 401
        assert c.post("/login", json={}).status_code == 422
        key = synced.store.users.new_key("local")
        assert INFRA in _ids(
            c.get(
                "/api/sessions", params={"limit": 100}, headers={"Authorization": f"Bearer {key}"}
            )
        )


def _env(home: Path) -> dict[str, str]:
    env = {
        k: v
        for k, v in os.environ.items()
        if not (k.startswith("MEMOIR_") and not k.startswith("MEMOIR_TEST_"))
    }
    return {
        **env,
        "MEMOIR_HOME": str(home),
        "MEMOIR_SOURCES": os.pathsep.join(str(p) for p in corpus_sources()),
        "MEMOIR_EMBEDDER": "none",
        "MEMOIR_SYNC_DISABLED": "0",
    }


def _started(proc: subprocess.Popen[str], base: str, log: Path) -> None:
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        try:
            if httpx.get(f"{base}/healthz", timeout=1).status_code == 200:
                return
        except httpx.TransportError:
            pass
        if proc.poll() is not None:
            break
        time.sleep(0.1)
    raise AssertionError(f"memoir serve did not start: {log.read_text()}")


@pytest.mark.slow
def test_serve_on_a_non_loopback_address_prints_no_link(tmp_path: Path) -> None:
    """Listening on every address, local's data needs a key: no link, no login."""
    home = tmp_path / "memoir-home"
    env = _env(home)
    memoir_cli("sync", "--no-summaries", env=env)
    port = free_port()
    log = tmp_path / "serve.err"
    with log.open("w") as err:
        proc = subprocess.Popen(
            [sys.executable, "-m", "memoir.cli", "serve", "--host", "0.0.0.0", "--port", str(port)],
            env=env,
            stdout=subprocess.PIPE,
            stderr=err,
            text=True,
        )
        try:
            base = f"http://127.0.0.1:{port}"
            _started(proc, base, log)
            assert httpx.get(f"{base}/api/sessions").status_code == 401
            r = httpx.post(f"{base}/login", json={"token": "guess"})
            assert r.status_code == 401 and "no sign-in links" in r.text
            key = memoir_cli("users", "key", "local", env=env).strip()
            listed = httpx.get(
                f"{base}/api/sessions",
                params={"limit": 100},
                headers={"Authorization": f"Bearer {key}"},
            )
            assert INFRA in _ids(listed)
        finally:
            proc.terminate()
            out, _ = proc.communicate(timeout=30)
    assert proc.returncode == 0
    assert out == "" and "#login=" not in log.read_text()  # no link, on either stream
