"""What the browser tests drive: a real ``memoir serve`` subprocess (the CLI command, with
the scripted model: ``scripted_serve.py``) on a home of its own, two users with keys, an
HTTP client for arranging data, the job rows read straight from the server's database, and
Chromium from Debian's package (``/usr/bin/chromium``) through Playwright."""

from __future__ import annotations

import json
import os
import shutil
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx

from memoir.app import Memoir
from memoir.config import Settings
from memoir.store.codec import JobRow
from server.serve_proc import free_port, memoir_cli, running  # tests/server: on the rootdir path

__all__ = [
    "CHROMIUM",
    "CHROMIUM_ARGS",
    "Site",
    "chromium_path",
    "scripted_server",
]

CHROMIUM = "/usr/bin/chromium"
# headless, and quiet: without the networking flags Chromium keeps calling home
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
LAUNCHER = Path(__file__).resolve().parent / "scripted_serve.py"


def chromium_path() -> str | None:
    """Debian's chromium, when installed (``apt-get install chromium``)."""
    if os.access(CHROMIUM, os.X_OK):
        return CHROMIUM
    return shutil.which("chromium")


# the server's settings: summaries as rows, small episodes one at a time (progress to
# watch), fast heartbeats, the hash embedder (deterministic, no model files)
SERVER_ENV = {
    "MEMOIR_LLM": "offline",  # memory extraction: the offline extractor; summaries: scripted
    "MEMOIR_SUMMARY_STORE": "database",
    "MEMOIR_EMBEDDER": "hash",
    "MEMOIR_SYNC_DISABLED": "1",
    "MEMOIR_EPISODE_TOKENS": "300",
    "MEMOIR_EPISODE_CONCURRENCY": "1",
    "MEMOIR_JOB_HEARTBEAT_S": "0.5",
}


@dataclass
class Site:
    base: str
    home: Path
    control_path: Path
    keys: dict[str, str]
    log_path: Path
    env: dict[str, str] = field(repr=False)
    extra: dict[str, str] = field(default_factory=dict)  # settings beyond SERVER_ENV

    def steer(self, *, delay_s: float = 0.0, fail: str | None = None, tag: str = "first") -> None:
        """How the scripted model answers from now on (read again on every call)."""
        self.control_path.write_text(
            json.dumps({"delay_s": delay_s, "fail": fail, "tag": tag}), encoding="utf-8"
        )

    def client(self, user: str = "alice") -> httpx.Client:
        return httpx.Client(
            base_url=self.base,
            headers={"Authorization": f"Bearer {self.keys[user]}"},
            timeout=30,
        )

    def make_session(
        self,
        sid: str,
        messages: list[dict[str, Any]],
        *,
        project: str = "billing",
        user: str = "alice",
    ) -> str:
        """``user``'s session named ``sid``, fed ``messages``: the id it is stored under
        (what hits link to and jobs name; URLs take it as they take the name)."""
        with self.client(user) as c:
            r = c.post("/api/sessions", json={"id": sid, "project": project})
            assert r.status_code == 201, r.text
            stored = str(r.json()["data"]["session"]["id"])  # the id the name is stored under
            r = c.post(f"/api/sessions/{sid}/events", json={"messages": messages})
            assert r.status_code == 200, r.text
        return stored

    def append(self, sid: str, messages: list[dict[str, Any]], user: str = "alice") -> None:
        with self.client(user) as c:
            r = c.post(f"/api/sessions/{sid}/events", json={"messages": messages})
            assert r.status_code == 200 and r.json()["data"]["added"] == len(messages), r.text

    def summary(self, sid: str, user: str = "alice") -> dict[str, Any]:
        with self.client(user) as c:
            r = c.get(f"/api/sessions/{sid}/summary")
            assert r.status_code == 200, r.text
            data: dict[str, Any] = r.json()["data"]
            return data

    def regenerate_and_wait(self, sid: str, timeout: float = 60) -> dict[str, Any]:
        """A regeneration through the API, waited for; the summary GET's data after it."""
        with self.client() as c:
            r = c.post(f"/api/sessions/{sid}/summary/regenerate")
            assert r.status_code == 202, r.text
            job_id = r.json()["data"]["job"]["id"]
        deadline = time.monotonic() + timeout
        while True:
            data = self.summary(sid)
            if data["job"]["id"] == job_id and data["job"]["state"] not in ("queued", "running"):
                assert data["job"]["state"] == "completed", data["job"]
                return data
            assert time.monotonic() < deadline, f"job {job_id} did not finish: {data['job']}"
            time.sleep(0.1)

    def jobs(self, sid: str) -> list[JobRow]:
        """The job rows of ``sid`` in the server's database, oldest first."""
        env = {"MEMOIR_HOME": str(self.home), **SERVER_ENV, **self.extra}
        settings = Settings.from_env(env, sources=())
        with Memoir.open(settings) as m:
            rows = m.store.jobs.find(limit=10_000)
        return sorted((r for r in rows if r.session_id == sid), key=lambda r: r.created_at)


def _server_env(home: Path) -> dict[str, str]:
    """The test process's environment without any Memoir setting of the developer's."""
    env = {
        k: v
        for k, v in os.environ.items()
        if not (k.startswith(("MEMOIR_", "EPISODIC_MEMORY_")) and not k.startswith("MEMOIR_TEST_"))
        and k
        not in ("OPENAI_API_KEY", "ANTHROPIC_API_KEY", "OPENAI_BASE_URL", "ANTHROPIC_BASE_URL")
    }
    return {**env, **SERVER_ENV, "MEMOIR_HOME": str(home), "HOME": str(home.parent / "user-home")}


@contextmanager
def scripted_server(
    root: Path, *, workers: int = 1, extra: dict[str, str] | None = None
) -> Iterator[Site]:
    """``memoir serve`` with the scripted model on a free port, under ``root`` (``extra``:
    more settings, e.g. a database and Redis): once ``/healthz`` answers; SIGTERM (then
    kill) after."""
    home = root / "memoir-home"
    home.mkdir(parents=True)
    (root / "user-home").mkdir(exist_ok=True)
    env = {**_server_env(home), **(extra or {})}
    keys = {user: memoir_cli("users", "add", user, env=env).strip() for user in ("alice", "bob")}
    control = root / "model-control.json"
    port = free_port()
    log_path = root / "serve.log"
    site = Site(f"http://127.0.0.1:{port}", home, control, keys, log_path, env, dict(extra or {}))
    site.steer()
    command = [sys.executable, str(LAUNCHER), str(control), "serve", "--port", str(port)]
    command += ["--workers", str(workers)]
    with running(command, env, log_path, site.base):
        yield site
