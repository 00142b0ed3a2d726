"""`memoir serve` as a process: a key from `memoir users add`, HTTP over a real socket, JSON
log lines with the request id, and a clean exit on SIGTERM."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest

pytestmark = pytest.mark.slow


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _memoir(*args: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "memoir.cli", *args],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )


def test_serve_end_to_end(home: Path, tmp_path: Path) -> None:
    env = {**os.environ, "MEMOIR_HOME": str(home), "MEMOIR_LLM": "offline"}
    key = _memoir("users", "add", "alice", env=env).stdout.strip()
    assert key.startswith("mk_")
    listed = json.loads(_memoir("users", "list", "--json", env=env).stdout)
    assert [(u["name"], u["keys"]) for u in listed] == [("alice", 1)]
    port = _free_port()
    log_path = tmp_path / "serve.log"
    log = log_path.open("w")
    proc = subprocess.Popen(
        [sys.executable, "-m", "memoir.cli", "serve", "--port", str(port), "--workers", "1"],
        env=env,
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    base = f"http://127.0.0.1:{port}"
    auth = {"Authorization": f"Bearer {key}"}
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                if httpx.get(f"{base}/healthz", timeout=1).status_code == 200:
                    break
            except httpx.TransportError:
                pass
            assert proc.poll() is None, "memoir serve exited"
            assert time.monotonic() < deadline, "memoir serve did not start"
            time.sleep(0.1)
        with httpx.Client(base_url=base, headers=auth, timeout=10) as client:
            assert client.get("/readyz").status_code == 200
            assert httpx.get(f"{base}/api/sessions").status_code == 401
            r = client.post("/api/sessions", json={"id": "e2e"})
            assert r.status_code == 201 and r.json()["data"]["session"]["name"] == "e2e"
            e2e = r.json()["data"]["session"]["id"]  # the id it is stored under
            batch = {
                "messages": [
                    {"role": "user", "content": "where is the deploy checklist?", "id": "a"},
                    {"role": "assistant", "content": "in docs/deploy.md", "id": "b"},
                ]
            }
            for _ in range(3):
                r = client.post(
                    "/api/sessions/e2e/events", json=batch, headers={"X-Request-Id": "req-e2e-1"}
                )
                assert r.status_code == 200 and r.headers["x-request-id"] == "req-e2e-1"
            events = client.get("/api/sessions/e2e/events").json()["data"]["events"]
            assert [e["ordinal"] for e in events] == [1, 2]
            hits = client.get("/api/search", params={"q": "deploy checklist"}).json()
            assert [h["session_id"] for h in hits["data"]["hits"]] == [e2e]
            job = client.post("/api/sessions/e2e/summary/regenerate")
            assert job.status_code == 202
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=60) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        log.close()
    text = log_path.read_text()
    lines = [json.loads(line) for line in text.splitlines() if line.startswith("{")]
    tagged = [x for x in lines if x.get("request_id") == "req-e2e-1"]
    assert len(tagged) == 3 and all(x["status"] == 200 for x in tagged)
    assert all(x.get("user") == "alice" for x in tagged)
