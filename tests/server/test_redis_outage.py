"""Redis stopped under a running `memoir serve`: a regenerate POST that needs admission
fails closed (503 with the error shape) while summary reads go on from the database; Redis
back on the same port → POSTs work again, without restarting the server.

The server runs one worker with the offline model, so the first job completes and writes
the stored summary: with no active job left, the POST during the outage must be admitted
(a duplicate of an *active* job is answered from the database, Redis or not)."""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Any

import httpx
import pytest

from jobs.helpers import free_port, redis_server  # tests/jobs: a package on the rootdir path

from .serve_proc import memoir_cli, serve

pytestmark = pytest.mark.slow


def _settled(client: httpx.Client, sid: str, job_id: str) -> dict[str, Any]:
    """The summary GET's data once job ``job_id`` has ended (it must complete)."""
    deadline = time.monotonic() + 60
    while True:
        got = client.get(f"/api/sessions/{sid}/summary")
        assert got.status_code == 200, got.text
        data: dict[str, Any] = got.json()["data"]
        job = data["job"]
        assert job is not None and job["id"] == job_id
        if job["state"] not in ("queued", "running"):
            assert job["state"] == "completed", job
            return data
        assert time.monotonic() < deadline, f"job {job_id} did not finish: {job}"
        time.sleep(0.1)


def test_redis_outage_over_http(home: Path, tmp_path: Path) -> None:
    port = free_port()
    env = {
        **os.environ,
        "MEMOIR_HOME": str(home),
        "MEMOIR_REDIS_URL": f"redis://127.0.0.1:{port}/0",
        "MEMOIR_SUMMARY_STORE": "database",
        "MEMOIR_LLM": "offline",
        "MEMOIR_SYNC_DISABLED": "1",
        "MEMOIR_JOB_HEARTBEAT_S": "0.2",
    }
    key = memoir_cli("users", "add", "alice", env=env).strip()
    auth = {"Authorization": f"Bearer {key}"}
    sid = "outage"
    with (
        redis_server(port) as redis_proc,
        serve(env, tmp_path / "serve.log", workers=1) as base,
        httpx.Client(base_url=base, headers=auth, timeout=30) as client,
    ):
        assert client.post("/api/sessions", json={"id": sid}).status_code == 201
        messages = [
            {"role": "user", "content": "plan the migration to postgres", "id": "1"},
            {"role": "assistant", "content": "first dump, then restore", "id": "2"},
        ]
        r = client.post(f"/api/sessions/{sid}/events", json={"messages": messages})
        assert r.status_code == 200, r.text
        first = client.post(f"/api/sessions/{sid}/summary/regenerate")
        assert first.status_code == 202, first.text
        first_id = first.json()["data"]["job"]["id"]
        stored = _settled(client, sid, first_id)
        assert stored["summary"], stored  # the offline model's summary, in the database

        redis_proc.terminate()
        redis_proc.wait(10)
        down = client.post(
            f"/api/sessions/{sid}/summary/regenerate", headers={"X-Request-Id": "req-down"}
        )
        assert down.status_code == 503, down.text
        assert down.headers["x-request-id"] == "req-down"
        body = down.json()
        assert set(body) == {"error"}
        assert body["error"]["code"] == "admission_unavailable"
        assert "Redis" in body["error"]["message"]
        got = client.get(f"/api/sessions/{sid}/summary")
        assert got.status_code == 200, got.text
        during = got.json()["data"]
        assert during["summary"] == stored["summary"]
        assert during["updated_at"] == stored["updated_at"]
        assert during["job"]["id"] == first_id  # no job was written for the refused POST
        ready = client.get("/readyz")  # reads work: ready, degraded (no job admission)
        assert ready.status_code == 200, ready.text
        assert ready.json()["data"]["status"] == "degraded"
        assert ready.json()["data"]["degraded"] == ["job admission"]

        with redis_server(port):  # back on the same port, empty (no persistence)
            back = client.post(f"/api/sessions/{sid}/summary/regenerate")
            assert back.status_code == 202, back.text
            back_id = back.json()["data"]["job"]["id"]
            assert back_id != first_id
            assert client.get("/readyz").json()["data"]["status"] == "ready"
            again = _settled(client, sid, back_id)
            assert again["summary"]
