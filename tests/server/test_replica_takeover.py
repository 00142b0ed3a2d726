"""Two `memoir serve` replicas on one PostgreSQL schema and the test Redis; the one running
a regeneration is killed with ``kill -9``. Through the other replica the job is reported
``stalled`` (with its heartbeat's age and the dead worker's id) within 40 s; a replica
restarted on the same host takes the job over within 10 s (its worker's pid is gone, so it
does not wait for the 930 s abandon interval) and finishes it; nothing is written twice."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
import uuid
from pathlib import Path
from typing import Any

import httpx
import pytest

from jobs.helpers import pg_schema  # tests/jobs: a package on the rootdir path

from .serve_proc import free_port, memoir_cli, running, serve

pytestmark = [pytest.mark.postgres, pytest.mark.redis, pytest.mark.slow]

LAUNCHER = Path(__file__).resolve().parents[1] / "web" / "scripted_serve.py"
ACTIVE = ("queued", "running")  # a job not yet ended


def _wait(what: str, probe: Any, timeout: float) -> Any:
    deadline = time.monotonic() + timeout
    last = None
    while time.monotonic() < deadline:
        last = probe()
        if last:
            return last
        time.sleep(0.2)
    raise AssertionError(f"{what}: not within {timeout} s (last: {last!r})")


def _scripted(env: dict[str, str], control: Path, port: int, out: Any) -> subprocess.Popen[str]:
    """A replica with the scripted model (slow calls: a job to kill mid-way) and a worker."""
    return subprocess.Popen(
        [
            sys.executable,
            str(LAUNCHER),
            str(control),
            "serve",
            "--port",
            str(port),
            "--workers",
            "1",
        ],
        env=env,
        stdout=out,
        stderr=subprocess.STDOUT,
        text=True,
    )


def test_a_killed_replicas_job_is_stalled_then_resumed_on_its_host(tmp_path: Path) -> None:
    redis_url = os.environ.get("MEMOIR_TEST_REDIS_URL")
    if not redis_url:
        pytest.skip("MEMOIR_TEST_REDIS_URL is not set")
    with pg_schema() as db_url:
        env = {
            **os.environ,
            "MEMOIR_DATABASE_URL": db_url,
            "MEMOIR_REDIS_URL": redis_url,
            "MEMOIR_SUMMARY_STORE": "database",
            "MEMOIR_SYNC_DISABLED": "1",
            "MEMOIR_EMBEDDER": "none",
            "MEMOIR_EPISODE_TOKENS": "300",
            "MEMOIR_EPISODE_CONCURRENCY": "1",
            "MEMOIR_JOB_HEARTBEAT_S": "1",  # stalled after 3 s without one
            "MEMOIR_HOME": str(tmp_path / "home"),
        }
        key = memoir_cli("users", "add", "alice", env=env).strip()
        auth = {"Authorization": f"Bearer {key}"}
        sid = f"takeover-{uuid.uuid4().hex[:12]}"
        control = tmp_path / "control.json"
        control.write_text(json.dumps({"delay_s": 1.0, "tag": "doomed"}))
        port_a = free_port()
        base_a = f"http://127.0.0.1:{port_a}"
        log_a = (tmp_path / "a.log").open("w")
        doomed = _scripted(env, control, port_a, log_a)
        try:
            with (
                serve(env, tmp_path / "b.log") as base_b,
                httpx.Client(base_url=base_b, headers=auth, timeout=30) as b,
            ):
                _wait("replica a", lambda: _healthy(base_a), 30)
                assert b.post("/api/sessions", json={"id": sid}).status_code == 201
                words = " ".join(f"word{i}" for i in range(60))
                messages = [
                    {
                        "role": role,
                        "content": f"step {n} of the migration plan {words}",
                        "id": f"{n}",
                    }
                    for n, role in enumerate(["user", "assistant"] * 6)
                ]
                sent = b.post(f"/api/sessions/{sid}/events", json={"messages": messages})
                assert sent.status_code == 200, sent.text
                job = b.post(f"/api/sessions/{sid}/summary/regenerate").json()["data"]["job"]
                # replica a's worker (b runs none) takes it and gets one episode in
                running_job = _wait(
                    "the job running on replica a",
                    lambda: (
                        (j := _job(b, sid))
                        and j["state"] == "running"
                        and j["completed"] >= 1
                        and j
                    ),
                    60,
                )
                host, pid, _ = running_job["worker"].rsplit(":", 2)
                assert (host, int(pid)) == (socket.gethostname(), doomed.pid)
                assert running_job["stalled"] is False
                doomed.send_signal(signal.SIGKILL)
                doomed.wait(10)
                killed = time.monotonic()
                stalled = _wait(
                    "the job reported stalled",
                    lambda: (j := _job(b, sid)) and j["stalled"] and j,
                    40,
                )
                assert stalled["id"] == job["id"] and stalled["state"] == "running"
                assert stalled["heartbeat_age_s"] >= 2.9
                assert stalled["worker"] == running_job["worker"]
                assert time.monotonic() - killed < 40
                # the replica restarted on this host takes the job over at once
                control.write_text(json.dumps({"delay_s": 0, "tag": "resumed"}))
                restarted_at = time.monotonic()
                with running(
                    [
                        sys.executable,
                        str(LAUNCHER),
                        str(control),
                        "serve",
                        "--port",
                        str(port_a),
                        "--workers",
                        "1",
                    ],
                    env,
                    tmp_path / "a2.log",
                    base_a,
                ):
                    resumed = _wait(  # put back in the queue (a poll may see that), then run
                        "the job resumed",
                        lambda: (j := _job(b, sid)) and j["state"] not in ACTIVE and j,
                        60,
                    )
                    took = time.monotonic() - restarted_at
                assert resumed["state"] == "completed", resumed
                assert took < 10 + 30, took  # 10 s once up; a slow start-up is the rest
                assert resumed["attempts"] == 2 and resumed["stalled"] is False
                summary = b.get(f"/api/sessions/{sid}/summary").json()["data"]["summary"]
                assert "(regeneration resumed)" in summary
                assert "(regeneration doomed)" not in summary  # the dead writer wrote nothing
        finally:
            if doomed.poll() is None:
                doomed.kill()
                doomed.wait(10)
            log_a.close()


def _healthy(base: str) -> bool:
    try:
        return httpx.get(f"{base}/healthz", timeout=1).status_code == 200
    except httpx.TransportError:
        return False


def _job(client: httpx.Client, sid: str) -> dict[str, Any] | None:
    got = client.get(f"/api/sessions/{sid}/summary")
    assert got.status_code == 200, got.text
    job: dict[str, Any] | None = got.json()["data"]["job"]
    return job
