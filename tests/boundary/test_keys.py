"""Keys as operators expect, on both backends: ``memoir users key rotate NAME`` prints one
new key and ends the old ones, and ``memoir users revoke NAME`` ends them all, on every
replica at its next request (two servers over one home or database, each with its own
``Memoir``); a key that never was, a revoked key, a rotated-away key and a key whose user
is gone all get the same 401, word for word."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import ExitStack, contextmanager

import pytest
from fastapi.testclient import TestClient

import memoir.cli.cmd_admin  # noqa: F401  (registers the command)
from cli_run import run_cli
from memoir import service
from memoir.app import Memoir
from memoir.config import Settings
from memoir.server import create_app
from memoir.server.auth import KeyUsers

from .conftest import A_SESSION, A_STORED, B_SESSION, MISSING_SESSION, A, B, World


@contextmanager
def _replicas(world: World, n: int = 2) -> Iterator[list[TestClient]]:
    """``n`` servers over the world's home or database, each with a Memoir of its own
    (the first is the world's): replicas behind one load balancer."""
    with ExitStack() as stack:
        clients = []
        for k in range(n):
            memoir = world.memoir
            if k:
                memoir = stack.enter_context(Memoir.open(Settings.from_env(world.env, sources=())))
            app = create_app(memoir)
            clients.append(stack.enter_context(TestClient(app, raise_server_exceptions=False)))
        yield clients


def _get(client: TestClient, key: str, sid: str) -> tuple[int, str]:
    r = client.get(f"/api/sessions/{sid}", headers={"Authorization": f"Bearer {key}"})
    return r.status_code, r.text


@pytest.fixture
def cli_env(world: World, monkeypatch: pytest.MonkeyPatch) -> World:
    for name, value in world.env.items():
        monkeypatch.setenv(name, value)
    return world


def test_rotate_and_revoke_take_effect_on_every_replica_at_the_next_request(
    cli_env: World, capsys: pytest.CaptureFixture[str]
) -> None:
    world = cli_env
    old = world.keys[A]
    code, out, err = run_cli(["users", "key", A, "--label", "laptop"], capsys)
    assert code == 0, err
    second = out.strip()
    with _replicas(world) as replicas:
        for client in replicas:  # every replica has served both keys: nothing to go stale
            assert _get(client, old, A_SESSION)[0] == 200
            assert _get(client, second, A_SESSION)[0] == 200
        refused = _get(replicas[0], "mk_never-issued", A_SESSION)
        assert refused[0] == 401

        code, out, err = run_cli(["users", "key", "rotate", A], capsys)
        assert code == 0 and "shown once" in err and "revoked" in err, err
        new = out.strip()
        assert out == new + "\n" and new.startswith("mk_") and new not in (old, second)
        for client in replicas:
            assert _get(client, old, A_SESSION) == refused  # dead at once, as a wrong key
            assert _get(client, second, A_SESSION) == refused
            status, text = _get(client, new, A_SESSION)
            assert status == 200 and A_SESSION in text
            assert _get(client, world.keys[B], B_SESSION)[0] == 200  # Bob's untouched
        code, out, _ = run_cli(["users", "list", "--json"], capsys)
        assert code == 0 and '"name": "alice"' in out
        listed = {u.name: u.keys for u in world.memoir.store.users.list()}
        assert listed == {A: 1, B: 1}

        code, out, _ = run_cli(["users", "revoke", B], capsys)
        assert code == 0 and "Revoked 1 key(s) of bob" in out
        for client in replicas:
            assert _get(client, world.keys[B], B_SESSION) == refused
            assert _get(client, new, A_SESSION)[0] == 200  # Alice's new key lives on


def test_rotate_refuses_an_unknown_user_and_keeps_local_reachable(
    cli_env: World, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, err = run_cli(["users", "key", "rotate", "ghost"], capsys)
    assert code != 0 and out == "" and "no user 'ghost'" in err and "Traceback" not in err
    assert cli_env.memoir.store.users.user_for(cli_env.keys[A]) == A  # nothing changed
    code, out, _ = run_cli(["users", "key", "rotate", "local"], capsys)  # made on first key
    assert code == 0 and cli_env.memoir.store.users.user_for(out.strip()) == "local"


def test_a_failed_key_and_an_unknown_user_get_the_same_answer(world: World) -> None:
    users = world.memoir.store.users
    revoked = users.new_key(A)
    users.revoke(A)
    rotated_away = users.new_key(B)
    users.rotate(B)
    orphan = users.add("carol")  # a key whose user is gone (removed from the database)
    with world.memoir.store._db.tx() as tx:
        tx.run("DELETE FROM users WHERE name = ?", ("carol",))
    assert users.user_for(orphan) is None
    with _replicas(world, 1) as [client]:
        answers = {
            name: _get(client, key, sid)
            for name, key, sid in (
                ("never issued", "mk_" + "x" * 43, A_SESSION),
                ("not a key at all", "hunter2", A_SESSION),
                ("revoked", revoked, A_SESSION),
                ("rotated away", rotated_away, B_SESSION),
                ("its user is gone", orphan, A_SESSION),
                ("another user's, revoked", world.keys[A], B_SESSION),
            )
        }
    assert {status for status, _ in answers.values()} == {401}, answers
    assert len({text for _, text in answers.values()}) == 1, answers
    assert "unknown or revoked API key" in answers["revoked"][1]


def _append(client: TestClient, key: str, sid: str, text: str) -> tuple[int, str]:
    r = client.post(
        f"/api/sessions/{sid}/events",
        json={"messages": [{"role": "user", "content": text}]},
        headers={"Authorization": f"Bearer {key}"},
    )
    return r.status_code, r.text


def test_an_append_with_a_key_a_replica_knows_is_refused_once_the_key_is_revoked(
    world: World,
) -> None:
    """An append with a key the replica has looked up before asks no lookup of its own:
    the append's statement checks the key is live. A revocation made anywhere refuses
    that key's next append on every replica, with the same 401 as a key that never was,
    and stores nothing; a live key still tells a missing session (404) from a dead key."""
    users = world.memoir.store.users
    second = users.new_key(A)
    events = lambda: len(world.memoir.store.events.of(A_STORED))  # noqa: E731
    with _replicas(world) as replicas:
        refused = _append(replicas[0], "mk_never-issued", A_SESSION, "never")
        assert refused[0] == 401 and "unknown or revoked API key" in refused[1]
        for n, client in enumerate(replicas):
            for turn in range(2):  # the first looks the key up, the second starts from it
                assert _append(client, second, A_SESSION, f"r{n} t{turn}")[0] == 200
            known = client.app.state.key_users  # type: ignore[attr-defined]
            assert known.get(service.key_hash(second)) == A
            missing = _append(client, second, MISSING_SESSION, "lost")
            bobs = _append(client, second, B_SESSION, "not mine")
            assert missing[0] == bobs[0] == 404 and missing[1] == bobs[1].replace(
                B_SESSION, MISSING_SESSION
            )
            assert known.get(service.key_hash(second)) == A  # a live key stays known
        stored = events()
        assert stored == 2 + 4  # the world's two messages, two appends on each replica

        users.revoke(A)  # as `memoir users revoke alice` would, from another process
        for client in replicas:
            assert _append(client, second, A_SESSION, "after revoke") == refused
            assert _append(client, second, MISSING_SESSION, "after revoke") == refused
            known = client.app.state.key_users  # type: ignore[attr-defined]
            assert known.get(service.key_hash(second)) is None  # forgotten with the 401
        assert events() == stored  # nothing stored for a dead key

        fresh = users.new_key(A)  # Alice's next key works everywhere at once
        for n, client in enumerate(replicas):
            assert _append(client, fresh, A_SESSION, f"fresh {n}")[0] == 200
        assert events() == stored + 2


def test_key_users_keeps_the_newest_entries_up_to_its_limit() -> None:
    known = KeyUsers(limit=2)
    known.learn("h1", "alice")
    known.learn("h2", "bob")
    known.learn("h1", "alice")  # known already: nothing is dropped
    assert (known.get("h1"), known.get("h2")) == ("alice", "bob")
    known.learn("h3", "carol")  # full: the oldest learnt goes
    assert (known.get("h1"), known.get("h2"), known.get("h3")) == (None, "bob", "carol")
    known.forget("h2")
    known.forget("h2")  # forgetting twice is no error
    assert (known.get("h2"), known.get("h3")) == (None, "carol")
