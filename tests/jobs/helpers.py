"""What the job tests share: a Memoir whose summaries are rows and whose episodes are
small, a long session owned by a user, a model reply, a Redis server of a test's own."""

from __future__ import annotations

import json
import shutil
import socket
import subprocess
import time
from collections.abc import Iterator
from contextlib import AbstractContextManager, contextmanager
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from memoir.app import Memoir
from memoir.config import Settings
from memoir.llm.port import ModelRequest, Purpose
from memoir.model import Author, Event, EventKind, Harness, Session
from memoir.store.values import IngestBatch

FAST = {
    "summary_store": "database",
    "episode_tokens": 300,
    "episode_concurrency": 1,
    "job_heartbeat_s": 0.1,
    "job_abort_s": 20.0,
    "job_claim_s": 20.0,
    "job_abandon_s": 30.0,
}


def open_memoir(home: Path, **overrides: Any) -> Memoir:
    options = {**FAST, **overrides}
    return Memoir.open(Settings.from_env({"MEMOIR_HOME": str(home)}, sources=(), **options))


def history(turns: int = 4, sid: str = "s1") -> list[Event]:
    """``turns`` user/assistant pairs of ~60 words: one episode each at 300 tokens."""
    words = " ".join(f"word{i}" for i in range(60))
    at = datetime(2025, 1, 1, tzinfo=UTC)
    out: list[Event] = []
    for k in range(turns):
        for kind, author, text in (
            (EventKind.USER_TEXT, Author.USER, f"MARK{k} question {words}"),
            (EventKind.ASSISTANT_TEXT, Author.ASSISTANT, f"answer about MARK{k} {words}"),
        ):
            n = len(out) + 1
            out.append(Event(sid, n, kind, author, text, timestamp=at + timedelta(minutes=n)))
    return out


def add_session(memoir: Memoir, sid: str = "s1", user: str = "alice", turns: int = 4) -> None:
    session = Session(id=sid, project="p", harness=Harness.API, user=user)
    memoir.store.ingest.apply(IngestBatch(session=session, events=tuple(history(turns, sid))))


def reply(tag: str = "done") -> Any:
    """A model answer for every purpose the episodic summarizer asks: a valid episode (or
    merge) object; the merge says ``tag``."""

    def answer(request: ModelRequest) -> str:
        text = f"merged by {tag}" if request.meta.purpose is Purpose.MERGE else "an episode"
        return json.dumps({"narrative": text, "facts": ["a fact"], "keywords": ["k"]})

    return answer


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@contextmanager
def redis_server(port: int) -> Iterator[subprocess.Popen[bytes]]:
    """A redis-server of this test's own on ``port`` (no persistence), stopped after."""
    exe = shutil.which("redis-server")
    if exe is None:
        pytest.skip("redis-server is not installed")
    proc = subprocess.Popen(
        [exe, "--port", str(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + 10
        while True:
            try:
                with socket.create_connection(("127.0.0.1", port), timeout=0.2):
                    break
            except OSError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.05)
        yield proc
    finally:
        proc.terminate()
        proc.wait(10)


def wait_for(predicate: Any, timeout: float = 20.0, step: float = 0.02) -> Any:
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError("timed out waiting")
        time.sleep(step)


def pg_schema() -> AbstractContextManager[str]:
    """A URL whose connections see only a migrated schema of the test cluster with no rows
    (the root conftest's ``migrated_pg_schema``: every other test folder's conftest is in
    a package, so ``conftest`` names only the root one)."""
    from conftest import migrated_pg_schema

    return migrated_pg_schema()


# a worker process to kill -9 mid-job: its model answers slowly, and says "merged by the
# dead" in a merge, so a test sees whether anything of it was written
DOOMED_WORKER = """
import json, sys, threading
from memoir import service
from memoir.app import Memoir
from memoir.config import Settings
from memoir.llm import ScriptedModel
from memoir.llm.port import Purpose

opts, delay_s, worker_id = json.loads(sys.argv[1]), float(sys.argv[2]), sys.argv[3] or None
m = Memoir.open(Settings.from_env(sources=(), **opts))

def answer(request):
    text = "merged by the dead" if request.meta.purpose is Purpose.MERGE else "an episode"
    return json.dumps({"narrative": text, "facts": ["a fact"], "keywords": ["k"]})

model = ScriptedModel(default=answer, delay_s=delay_s)
m._model = lambda: model
print("ready", flush=True)
service.run_worker(m, threading.Event(), worker_id=worker_id)  # None: host:pid:random
"""


def start_doomed_worker(
    folder: Path, opts: dict[str, Any], *, delay_s: float, worker_id: str | None = None
) -> tuple[subprocess.Popen[str], Path]:
    """:data:`DOOMED_WORKER` started on the home of ``opts`` (no MEMOIR_* of this process's
    environment); the process and the file its stderr goes to."""
    import os
    import sys

    script = folder / "worker.py"
    script.write_text(DOOMED_WORKER)
    env = {k: v for k, v in os.environ.items() if not k.startswith("MEMOIR_")}
    errors = folder / "worker.err"
    with errors.open("w") as err:
        proc = subprocess.Popen(
            [sys.executable, str(script), json.dumps(opts), str(delay_s), worker_id or ""],
            stdout=subprocess.DEVNULL,
            stderr=err,
            text=True,
            env=env,
        )
    return proc, errors
