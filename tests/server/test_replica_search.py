"""Search across replicas: a message appended through replica A is found through replica B
at B's next search, in the default mode (hybrid: an embedder is configured) and by meaning
alone — B had its vectors cached from a search before the write, and learns of A's from
the store's embedding generation, read on every search, and patches its matrix with the
rows the change log names. Then a session deleted is gone from B's next search, and an
exchange re-embedded as it grew is ranked by its new vector.

PostgreSQL: two ``memoir serve`` processes on one schema (each its own homes, so nothing
on disk is shared). SQLite: two Memoir handles on one home, each with its own app.
Both embed on write with the fake embedder (``MEMOIR_EMBEDDER=hash``)."""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path
from typing import Any

import httpx
import pytest
from fastapi.testclient import TestClient

from jobs.helpers import pg_schema  # tests/jobs: a package on the rootdir path
from memoir.app import Memoir
from memoir.server import create_app

from .serve_proc import memoir_cli, serve

OLD = [
    {"role": "user", "content": "how do we rotate the staging certificates", "id": "o1"},
    {"role": "assistant", "content": "renew them with the acme client weekly", "id": "o2"},
]
NEW = [
    {"role": "user", "content": "the lighthouse keeper paints the walrus purple", "id": "n1"},
    {"role": "assistant", "content": "purple walrus paint dries by the lighthouse", "id": "n2"},
]
QUERY = "lighthouse walrus purple paint"


GROWN = [{"role": "user", "content": "what colour should the garden shed be", "id": "o3"}]
REPLY = [{"role": "assistant", "content": "paint it lighthouse walrus purple", "id": "o4"}]


def _hits(client: Any, mode: str | None) -> list[dict[str, Any]]:
    params = {"q": QUERY, "limit": 10, **({"mode": mode} if mode else {})}
    r = client.get("/api/search", params=params)
    assert r.status_code == 200, r.text
    hits: list[dict[str, Any]] = r.json()["data"]["hits"]
    return hits


def _ids(client: Any, mode: str | None) -> list[str]:
    return [h["session_id"] for h in _hits(client, mode)]


def _found_through_the_other(a: Any, b: Any, delete: Callable[[str], None]) -> None:
    """A writes an old session and a new one; B is searched before and after the second."""
    old, new = f"old-{uuid.uuid4().hex[:8]}", f"new-{uuid.uuid4().hex[:8]}"
    assert a.post("/api/sessions", json={"id": old}).status_code == 201
    assert a.post(f"/api/sessions/{old}/events", json={"messages": OLD}).status_code == 200
    # B reads (and caches) the vectors as they are before the write
    before = _ids(b, "vector") + _ids(b, None)
    made = a.post("/api/sessions", json={"id": new})
    assert made.status_code == 201
    stored = made.json()["data"]["session"]["id"]  # the id the name is stored under
    assert stored not in before
    r = a.post(f"/api/sessions/{new}/events", json={"messages": NEW})
    assert r.status_code == 200, r.text
    # B's next search, no wait: by meaning alone, and in the default (hybrid) mode
    assert _ids(b, "vector")[0] == stored
    assert _ids(b, None)[0] == stored
    assert _ids(b, "text")[0] == stored
    # the session is deleted (its vectors go with it): gone from B's next search
    delete(stored)
    assert stored not in _ids(b, "vector") + _ids(b, None)
    # an open exchange of the old session is embedded, B caches it; then it grows (its
    # reply arrives) and is embedded again: B ranks it by its new vector
    assert a.post(f"/api/sessions/{old}/events", json={"messages": GROWN}).status_code == 200
    opened = {h["exchange_id"]: h["score"] for h in _hits(b, "vector")}
    assert a.post(f"/api/sessions/{old}/events", json={"messages": REPLY}).status_code == 200
    top = _hits(b, "vector")[0]
    assert top["snippet"].count("purple") and top["exchange_id"] in opened
    assert top["score"] > opened[top["exchange_id"]] + 0.1  # the same row, its new vector


@pytest.mark.postgres
@pytest.mark.slow
def test_an_append_through_one_replica_is_found_through_the_other_postgres(
    tmp_path: Path,
) -> None:
    import os

    with pg_schema() as db_url:
        base = {
            **os.environ,
            "MEMOIR_DATABASE_URL": db_url,
            "MEMOIR_SUMMARY_STORE": "database",
            "MEMOIR_LLM": "offline",
            "MEMOIR_EMBEDDER": "hash",
            "MEMOIR_SYNC_DISABLED": "1",
        }
        base.pop("MEMOIR_REDIS_URL", None)
        envs = []
        for name in ("a", "b"):
            (tmp_path / name).mkdir()
            envs.append({**base, "MEMOIR_HOME": str(tmp_path / name)})
        key = memoir_cli("users", "add", "alice", env=envs[0]).strip()
        auth = {"Authorization": f"Bearer {key}"}
        with (
            serve(envs[0], tmp_path / "a.log") as base_a,
            serve(envs[1], tmp_path / "b.log") as base_b,
            httpx.Client(base_url=base_a, headers=auth, timeout=60) as a,
            httpx.Client(base_url=base_b, headers=auth, timeout=60) as b,
        ):
            from memoir.store.postgres_store import PostgresStore

            third = PostgresStore(db_url)  # a third process deletes
            try:
                _found_through_the_other(a, b, third.sessions.delete)
            finally:
                third.close()


@contextmanager
def _sqlite_replicas(home: Path) -> Iterator[tuple[TestClient, TestClient, Memoir]]:
    with ExitStack() as stack:
        clients = []
        handles = []
        key = ""
        for n in range(2):
            memoir = stack.enter_context(
                Memoir.at(home, llm="offline", embedder="hash", summary_store="database")
            )
            handles.append(memoir)
            if n == 0:
                key = memoir.store.users.add("alice")
            client = TestClient(create_app(memoir), headers={"Authorization": f"Bearer {key}"})
            clients.append(stack.enter_context(client))
        yield clients[0], clients[1], handles[0]


def test_an_append_through_one_handle_is_found_through_the_other_sqlite(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from memoir import search as backfill

    monkeypatch.setattr(backfill, "WRITE_MAX", 256)  # the suite turns embedding on write off
    with _sqlite_replicas(tmp_path / "home") as (a, b, memoir_a):
        _found_through_the_other(a, b, memoir_a.store.sessions.delete)
