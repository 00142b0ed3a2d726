"""PostgreSQL faults under a running `memoir serve` (issue 37, point 5), each through HTTP:

- the database restarted: a request in flight fails with a 503 naming PostgreSQL, and the
  requests after it succeed on the same process (its pool replaces the dead connections);
- the pool exhausted: a request waits ``MEMOIR_PG_POOL_TIMEOUT_S`` for a connection, then
  gets a 503 saying so, never hangs;
- a statement past ``MEMOIR_PG_STATEMENT_TIMEOUT_S`` is cancelled by the server: a 503
  saying so, and a warning in the log naming the route.

A request is held "in flight" by a lock the test takes on the ``sessions`` table from a
connection of its own. The restart runs on a cluster of the test's own (``pg_cluster``),
never on the shared test cluster. Redis down: ``test_redis_outage.py``."""

from __future__ import annotations

import json
import os
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from pathlib import Path
from typing import Any

import httpx
import psycopg
import pytest

from jobs.helpers import pg_schema  # tests/jobs: a package on the rootdir path

from .pg_cluster import pg_cluster
from .serve_proc import memoir_cli, serve

pytestmark = [pytest.mark.slow]

MESSAGES = [
    {"role": "user", "content": "plan the migration to postgres", "id": "1"},
    {"role": "assistant", "content": "first dump, then restore", "id": "2"},
]


def _env(db_url: str, home: Path, **extra: str) -> dict[str, str]:
    return {
        **os.environ,
        "MEMOIR_HOME": str(home),
        "MEMOIR_DATABASE_URL": db_url,
        "MEMOIR_LLM": "offline",
        "MEMOIR_EMBEDDER": "none",
        "MEMOIR_SYNC_DISABLED": "1",
        **extra,
    }


class InFlight:
    """A request sent on a thread of its own; ``result()`` waits for its answer."""

    def __init__(self, client: httpx.Client, method: str, path: str, body: Any = None) -> None:
        self.answer: httpx.Response | BaseException | None = None
        self.thread = threading.Thread(target=self._run, args=(client, method, path, body))
        self.started = time.monotonic()
        self.thread.start()

    def _run(self, client: httpx.Client, method: str, path: str, body: Any) -> None:
        try:
            self.answer = client.request(method, path, json=body)
        except BaseException as exc:  # reported by result()
            self.answer = exc

    def result(self, timeout: float = 60) -> httpx.Response:
        self.thread.join(timeout)
        assert not self.thread.is_alive(), "the request hung"
        assert isinstance(self.answer, httpx.Response), self.answer
        return self.answer


@contextmanager
def sessions_locked(db_url: str) -> Iterator[psycopg.Connection[Any]]:
    """The ``sessions`` table locked (ACCESS EXCLUSIVE) by a connection of the test's own
    until the block ends: every statement reading it waits."""
    conn = psycopg.connect(db_url, autocommit=True)
    try:
        conn.execute("BEGIN")
        conn.execute("LOCK TABLE sessions IN ACCESS EXCLUSIVE MODE")
        yield conn
        with suppress(psycopg.OperationalError):  # a restart ended the session already
            conn.execute("ROLLBACK")
    finally:
        conn.close()


@contextmanager
def sessions_locked_across_restart(db_url: str) -> Iterator[psycopg.Connection[Any]]:
    """The ``sessions`` table locked (ACCESS EXCLUSIVE) by a prepared transaction until the
    block ends; yields a connection to watch with. No backend holds the lock, so none's end
    releases it: with the lock held by a backend, a restart could end the holder first, and
    a waiting request then ran and was answered before its own backend ended (CI saw a 200
    where the 503 belongs). The lock outlives the restart (recovery restores it); the block's
    end rolls it back."""
    watcher = psycopg.connect(db_url, autocommit=True)
    try:
        watcher.execute("BEGIN")
        watcher.execute("LOCK TABLE sessions IN ACCESS EXCLUSIVE MODE")
        watcher.execute("PREPARE TRANSACTION 'memoir-test-restart'")
        yield watcher
    finally:
        watcher.close()
        with psycopg.connect(db_url, autocommit=True) as conn:
            conn.execute("ROLLBACK PREPARED 'memoir-test-restart'")


# the statement a route's lookup of the caller's session runs (``owned_session`` with a
# user): no background task of a replica runs it (theirs look a session up by id alone)
CALLERS_SESSION = "FROM sessions WHERE user_name = $1 AND id IN"


def wait_blocked(
    holder: psycopg.Connection[Any], count: int = 1, *, prepared: bool = False
) -> None:
    """Until ``count`` requests' lookups of a session wait on ``holder``'s lock (with
    ``prepared``: on a prepared transaction's, which PostgreSQL names as process 0).

    ``holder`` is inside its transaction, where PostgreSQL keeps the first read of
    ``pg_stat_activity`` until the transaction ends: without clearing that snapshot, a
    backend the pool opened for the request later was never seen, and a backend seen
    earlier showed its earlier statement. CI twice saw the request answered 200: it ran
    after the restart, while another backend from the old snapshot was counted."""
    deadline = time.monotonic() + 30
    while True:
        holder.execute("SELECT pg_stat_clear_snapshot()")
        blocker = "0" if prepared else "pg_backend_pid()"
        row = holder.execute(
            "SELECT count(*) FROM pg_stat_activity WHERE backend_type = 'client backend' "
            f"AND {blocker} = ANY(pg_blocking_pids(pid)) AND position(%s in query) > 0",
            (CALLERS_SESSION,),
        ).fetchone()
        if row and row[0] >= count:
            return
        assert time.monotonic() < deadline, "no request came to wait on the lock"
        time.sleep(0.05)


def wait_quiet(db_url: str) -> None:
    """Until no other client connection runs a statement or holds a transaction, three
    checks in a row (only on a cluster of the test's own): work a replica still does after
    its last answer must not be what ``wait_blocked`` sees waiting instead of the request."""
    deadline = time.monotonic() + 30
    quiet = 0
    with psycopg.connect(db_url, autocommit=True) as conn:
        while quiet < 3:
            row = conn.execute(
                "SELECT count(*) FROM pg_stat_activity WHERE backend_type = 'client backend'"
                " AND pid <> pg_backend_pid() AND state IN ('active', 'idle in transaction')"
            ).fetchone()
            quiet = quiet + 1 if row and row[0] == 0 else 0
            assert time.monotonic() < deadline, "the replicas never went quiet"
            time.sleep(0.1)


MORE = [{**m, "id": f"{n + 3}"} for n, m in enumerate(MESSAGES)]  # the next two messages


@contextmanager
def alices_replica(db_url: str, tmp_path: Path, **extra: str) -> Iterator[httpx.Client]:
    """One ``memoir serve`` on ``db_url`` (its log at ``tmp_path/serve.log``), and a
    client of it with Alice's key."""
    env = _env(db_url, tmp_path / "home", **extra)
    key = memoir_cli("users", "add", "alice", env=env).strip()
    with (
        serve(env, tmp_path / "serve.log") as base,
        httpx.Client(
            base_url=base, headers={"Authorization": f"Bearer {key}"}, timeout=60
        ) as client,
    ):
        yield client


@contextmanager
def one_connection_replica(tmp_path: Path, *, timeout_s: int) -> Iterator[tuple[str, httpx.Client]]:
    """Alice's replica on a new schema (its URL), with a pool of one connection that a
    request waits ``timeout_s`` for."""
    pool = {"MEMOIR_PG_POOL_SIZE": "1", "MEMOIR_PG_POOL_TIMEOUT_S": str(timeout_s)}
    with pg_schema() as db_url, alices_replica(db_url, tmp_path, **pool) as client:
        yield db_url, client


@contextmanager
def pool_held(client: httpx.Client, db_url: str, sid: str) -> Iterator[InFlight]:
    """Alice's session ``sid`` made, then the replica's one pooled connection held by a
    read of it that waits on a lock (released on leaving): the request in flight."""
    _started(client, sid)
    with sessions_locked(db_url) as holder:
        holding = InFlight(client, "GET", f"/api/sessions/{sid}")
        wait_blocked(holder)
        yield holding


def _error(resp: httpx.Response) -> dict[str, str]:
    body = resp.json()
    assert set(body) == {"error"}, body
    error: dict[str, str] = body["error"]
    return error


def _started(client: httpx.Client, sid: str) -> None:
    assert client.post("/api/sessions", json={"id": sid}).status_code == 201
    sent = client.post(f"/api/sessions/{sid}/events", json={"messages": MESSAGES})
    assert sent.status_code == 200, sent.text


def _ordinals(client: httpx.Client, sid: str) -> list[int]:
    got = client.get(f"/api/sessions/{sid}/events")
    assert got.status_code == 200, got.text
    return [e["ordinal"] for e in got.json()["data"]["events"]]


def test_postgres_restarted_under_two_replicas(tmp_path: Path) -> None:
    with pg_cluster() as cluster:
        envs = [_env(cluster.url, tmp_path / name, MEMOIR_PG_POOL_TIMEOUT_S="5") for name in "ab"]
        key = memoir_cli("users", "add", "alice", env=envs[0]).strip()
        auth = {"Authorization": f"Bearer {key}"}
        with (
            serve(envs[0], tmp_path / "a.log") as base_a,
            serve(envs[1], tmp_path / "b.log") as base_b,
            httpx.Client(base_url=base_a, headers=auth, timeout=60) as a,
            httpx.Client(base_url=base_b, headers=auth, timeout=60) as b,
        ):
            _started(a, "restart")
            assert _ordinals(b, "restart") == [1, 2]  # b has pooled connections too
            wait_quiet(cluster.url)
            with sessions_locked_across_restart(cluster.url) as watcher:
                flying = InFlight(a, "GET", "/api/sessions/restart")
                # an append waits on the loop (its waits awaited, no thread): cut alike
                cut_short = [{**m, "id": f"cut-{n}"} for n, m in enumerate(MESSAGES)]
                appending = InFlight(
                    a, "POST", "/api/sessions/restart/events", {"messages": cut_short}
                )
                wait_blocked(watcher, 2, prepared=True)
                cluster.restart()  # fast: every session ends; the prepared lock stays
            for cut in (flying.result(), appending.result()):
                assert cut.status_code == 503, cut.text
                error = _error(cut)
                assert error["code"] == "store_unavailable"
                assert error["message"].startswith("postgres: the database server is restarting")
                assert error["message"].endswith("retry shortly"), error
                assert cut.headers["x-request-id"]
            # the same processes, no restart: every later request is answered, on both
            for client in (a, b, a, b, a, b):
                got = client.get("/api/sessions/restart")
                assert got.status_code == 200, got.text
                assert got.json()["data"]["session"]["name"] == "restart"
            sent = b.post("/api/sessions/restart/events", json={"messages": MORE})
            assert sent.status_code == 200, sent.text
            assert _ordinals(a, "restart") == [1, 2, 3, 4]
            for client in (a, b):
                ready = client.get("/readyz")
                assert ready.status_code == 200, ready.text
                assert ready.json()["data"]["status"] == "ready"


@pytest.mark.postgres
def test_an_exhausted_pool_answers_503_within_its_timeout(tmp_path: Path) -> None:
    with one_connection_replica(tmp_path, timeout_s=1) as (db_url, client):
        with pool_held(client, db_url, "pool") as holding:
            waiting = InFlight(client, "GET", "/api/sessions")
            refused = waiting.result(timeout=30)
            took = time.monotonic() - waiting.started
        assert refused.status_code == 503, refused.text
        error = _error(refused)
        assert error["code"] == "store_unavailable"
        assert "no free database connection within 1 s" in error["message"], error
        assert "MEMOIR_PG_POOL_SIZE" in error["message"]
        assert 1 <= took < 15, took  # waited for the pool's timeout, then answered
        held = holding.result()  # the lock is gone: the request holding the pool ends
        assert held.status_code == 200, held.text
        assert client.get("/api/sessions").status_code == 200


@pytest.mark.postgres
def test_a_statement_past_its_timeout_is_a_503_logged_with_its_route(tmp_path: Path) -> None:
    with pg_schema() as db_url:
        log_path = tmp_path / "serve.log"
        with alices_replica(db_url, tmp_path, MEMOIR_PG_STATEMENT_TIMEOUT_S="1") as client:
            _started(client, "slow")
            with sessions_locked(db_url):
                slow = client.get("/api/sessions/slow", headers={"X-Request-Id": "slow-1"})
            assert slow.status_code == 503, slow.text
            error = _error(slow)
            assert error["code"] == "store_unavailable"
            assert "ran past the 1 s statement timeout" in error["message"], error
            assert client.get("/api/sessions/slow").status_code == 200  # lock gone: served
        text = log_path.read_text()
        lines = [json.loads(line) for line in text.splitlines() if line.startswith("{")]
        warned = [
            line
            for line in lines
            if line.get("level") == "warning" and line.get("request_id") == "slow-1"
        ]
        assert len(warned) == 1, lines
        assert warned[0]["route"] == "/api/sessions/{session_id}"
        assert warned[0]["path"] == "/api/sessions/slow"
        assert "statement timeout" in warned[0]["message"]
        (access,) = [
            line
            for line in lines
            if line.get("logger") == "memoir.server.access" and line.get("request_id") == "slow-1"
        ]
        assert access["status"] == 503 and access["route"] == "/api/sessions/{session_id}"


@pytest.mark.postgres
def test_an_append_waiting_on_the_database_leaves_the_event_loop_free(tmp_path: Path) -> None:
    """On PostgreSQL an append runs on the event loop with its waits awaited: while it
    waits on a lock, the same process answers other requests at once; then it is stored."""
    with pg_schema() as db_url, alices_replica(db_url, tmp_path) as client:
        _started(client, "waits")
        with sessions_locked(db_url) as holder:
            appending = InFlight(client, "POST", "/api/sessions/waits/events", {"messages": MORE})
            wait_blocked(holder)
            for _ in range(5):  # the loop is free: answered while the append waits
                started = time.monotonic()
                assert client.get("/healthz").status_code == 200
                assert time.monotonic() - started < 2
            assert appending.answer is None  # still waiting on the lock
        done = appending.result()
        assert done.status_code == 200, done.text
        assert done.json()["data"] == {"added": 2, "skipped": 0, "last_ordinal": 4}
        assert _ordinals(client, "waits") == [1, 2, 3, 4]


@pytest.mark.postgres
def test_an_append_finding_the_pool_exhausted_waits_off_the_loop_then_503(
    tmp_path: Path,
) -> None:
    """No free connection: the append waits for one on a thread, not on the event loop
    (other requests are answered meanwhile), and past the pool's timeout it is a 503."""
    with one_connection_replica(tmp_path, timeout_s=3) as (db_url, client):
        with pool_held(client, db_url, "full") as holding:
            appending = InFlight(client, "POST", "/api/sessions/full/events", {"messages": MORE})
            time.sleep(0.5)  # the append waits for a connection now
            started = time.monotonic()
            assert client.get("/healthz").status_code == 200
            assert time.monotonic() - started < 1  # the loop is not the one waiting
            refused = appending.result(timeout=30)
            took = time.monotonic() - appending.started
        assert refused.status_code == 503, refused.text
        error = _error(refused)
        assert error["code"] == "store_unavailable"
        assert "no free database connection within 3 s" in error["message"], error
        assert 3 <= took < 15, took
        assert holding.result().status_code == 200
        assert _ordinals(client, "full") == [1, 2]  # the refused append stored nothing
        sent = client.post("/api/sessions/full/events", json={"messages": MORE})
        assert sent.status_code == 200, sent.text
        assert _ordinals(client, "full") == [1, 2, 3, 4]
