"""Jobs across replicas are honest: a running job whose worker missed three heartbeats is
reported as stalled (with its heartbeat's age) on the library, CLI and API, each worker's id
is its own (host:pid:random) and shown on the job, and a worker starting on the host of a
dead worker (its pid gone) takes that worker's jobs over at once — long before the
abandon interval — with the claim's fence keeping a superseded writer out."""

from __future__ import annotations

import functools
import os
import signal
import socket
import subprocess
import threading
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from memoir import service
from memoir.jobs import Worker, default_worker_id
from memoir.jobs.values import STALLED_BEATS, Job, stalled, worker_gone
from memoir.llm import ScriptedModel
from memoir.store.codec import JobRow
from memoir.summaries.persist import read_summary_body

from .helpers import FAST, add_session, open_memoir, pg_schema, reply, start_doomed_worker, wait_for

T0 = datetime(2026, 1, 1, tzinfo=UTC)
HOST = "box"


@pytest.mark.parametrize(
    ("state", "beat_ago", "expected"),
    [
        ("running", 0.0, False),
        ("running", 29.9, False),  # under three 10 s heartbeats
        ("running", 30.1, True),
        ("running", 900.0, True),
        ("queued", 900.0, False),
        ("completed", 900.0, False),
        ("failed", 900.0, False),
    ],
)
def test_stalled_after_three_missed_heartbeats(state: str, beat_ago: float, expected: bool) -> None:
    beat = T0 - timedelta(seconds=beat_ago)
    assert stalled(state, beat, beat, beat, T0, 10.0) is expected
    assert STALLED_BEATS == 3


def test_stalled_counts_from_the_claim_before_the_first_heartbeat() -> None:
    claimed = T0 - timedelta(seconds=31)
    assert stalled("running", None, claimed, T0 - timedelta(hours=1), T0, 10.0)
    assert not stalled(
        "running", None, T0 - timedelta(seconds=5), T0 - timedelta(hours=1), T0, 10.0
    )


@pytest.mark.parametrize(
    ("claimed_by", "alive_pids", "expected"),
    [
        ("box:123:abcd1234", set(), True),  # this host, its process gone
        ("box:123:abcd1234", {123}, False),  # this host, still running
        ("other:123:abcd1234", set(), False),  # another host: only time can tell
        ("serve-1", set(), False),  # a name of another shape is never judged
        ("box:12x:abcd", set(), False),
        ("", set(), False),
        (None, set(), False),
        ("my:box:123:abcd1234", set(), False),  # the host part is everything before pid
    ],
)
def test_worker_gone(claimed_by: str | None, alive_pids: set[int], expected: bool) -> None:
    assert worker_gone(claimed_by, HOST, lambda pid: pid in alive_pids) is expected


def test_worker_ids_are_unique_and_name_host_and_pid() -> None:
    ids = {default_worker_id() for _ in range(50)}
    assert len(ids) == 50
    host, pid, _ = next(iter(ids)).rsplit(":", 2)
    assert (host, int(pid)) == (socket.gethostname(), os.getpid())


def _row(**over: Any) -> JobRow:
    base: dict[str, Any] = {
        "id": "j1",
        "kind": "summary",
        "user": "alice",
        "session_id": "s1",
        "state": "running",
        "created_at": T0 - timedelta(minutes=5),
        "claimed_by": "box:1:ab",
        "claimed_at": T0 - timedelta(minutes=5),
        "heartbeat_at": T0 - timedelta(seconds=45),
    }
    return JobRow(**{**base, **over})


def test_the_job_as_shown_names_its_worker_and_stall() -> None:
    shown = Job.from_row(_row(), now=T0, heartbeat_s=10.0).to_json()
    assert shown["worker"] == "box:1:ab"
    assert shown["stalled"] is True
    assert shown["heartbeat_age_s"] == 45.0
    fresh = Job.from_row(_row(heartbeat_at=T0 - timedelta(seconds=2)), now=T0, heartbeat_s=10.0)
    assert (fresh.stalled, fresh.heartbeat_age_s) == (False, 2.0)
    done = Job.from_row(_row(state="completed"), now=T0, heartbeat_s=10.0).to_json()
    assert (done["worker"], done["stalled"], done["heartbeat_age_s"]) == (None, False, None)


# a dead worker's job taken over by a worker started on its host ------------------------
TIMING = {"job_heartbeat_s": 0.2, "job_abort_s": 60.0, "job_claim_s": 60.0, "job_abandon_s": 120.0}


@pytest.mark.parametrize(
    "backend", ["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)]
)
def test_a_killed_workers_job_is_stalled_then_taken_over_on_its_host(
    tmp_path: Path, backend: str
) -> None:
    if backend == "postgres":
        with pg_schema() as url:
            _takeover(tmp_path, {"database_url": url})
    else:
        _takeover(tmp_path, {})


def _takeover(tmp_path: Path, extra: dict[str, Any]) -> None:
    home = tmp_path / "home"
    opts = {**FAST, **TIMING, **extra, "home": str(home)}
    m = open_memoir(home, **{k: v for k, v in opts.items() if k != "home"})
    proc: subprocess.Popen[str] | None = None
    try:
        add_session(m)
        job = service.regenerate_summary(m, "alice", "s1")
        proc, _ = start_doomed_worker(tmp_path, opts, delay_s=0.5)
        wait_for(lambda: (r := m.store.jobs.get(job.id)) and r.completed >= 1, timeout=60)
        running = m.jobs().get(job.id)
        assert running is not None and running.state == "running" and not running.stalled
        assert running.worker is not None
        assert running.worker.startswith(f"{socket.gethostname()}:{proc.pid}:")
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(10)
        killed = time.monotonic()
        # stalled after three missed heartbeats, on every surface reading the service
        seen = wait_for(lambda: (j := m.jobs().get(job.id)) and j.stalled and j, timeout=20)
        assert seen.state == "running" and seen.heartbeat_age_s is not None
        assert seen.heartbeat_age_s >= STALLED_BEATS * TIMING["job_heartbeat_s"] - 0.05  # rounded
        assert m.jobs().latest("alice", "s1").stalled  # what the summary GET reports
        # a worker started on this host takes it over at once (abandon_s is 120 s)
        model = ScriptedModel(default=reply("the next worker"))
        m._model = lambda: model  # type: ignore[method-assign]
        stop = threading.Event()
        thread = threading.Thread(target=service.run_worker, args=(m, stop))
        thread.start()
        try:
            final = wait_for(
                lambda: (j := m.jobs().get(job.id)) and j.state == "completed" and j, timeout=30
            )
        finally:
            stop.set()
            thread.join(10)
        assert time.monotonic() - killed < 10 + 20  # well before abandon_s (120 s)
        assert final.attempts == 2 and final.worker is None and not final.stalled
        body = read_summary_body(service.summary_store(m), m.store, "s1")
        assert body is not None and "merged by the next worker" in body
        assert "merged by the dead" not in body  # nothing of the dead worker's written
    finally:
        if proc is not None and proc.poll() is None:
            proc.kill()
            proc.wait(10)
        m.close()


def test_take_over_leaves_live_and_remote_workers_alone(tmp_path: Path) -> None:
    m = open_memoir(tmp_path / "home", **TIMING)
    try:
        for sid in ("s1", "s2", "s3"):
            add_session(m, sid)
            service.regenerate_summary(m, "alice", sid)
        host = socket.gethostname()
        owners = {"s1": f"{host}:999999:dead", "s2": f"{host}:{os.getpid()}:live", "s3": "far:1:x"}
        for sid, owner in owners.items():
            row = m.store.jobs.claim(owner, now=datetime.now(UTC), claim_s=60, kinds=["summary"])
            assert row is not None
            owners[sid] = (row.session_id, owner)  # type: ignore[assignment]
        worker = Worker(m.jobs(), {"summary": functools.partial(service.run_summary_job, m)})
        released = worker.take_over_local(alive=lambda pid: pid == os.getpid())
        assert [r.claimed_by for r in released] == [f"{host}:999999:dead"]
        states = {j.session_id: (j.state, j.worker) for j in m.jobs().list()}
        assert states[released[0].session_id] == ("queued", None)
        assert sorted(s for s, _ in states.values()) == ["queued", "running", "running"]
    finally:
        m.close()
