"""kill -9 a worker process mid-job: the job is abandoned on schedule, and the next
worker's start-up resumes it, reusing the episodes the dead worker finished (cached)."""

from __future__ import annotations

import functools
import os
import signal
import subprocess
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from memoir import service
from memoir.jobs import ABANDONED, Worker
from memoir.llm import ScriptedModel
from memoir.summaries.persist import read_summary_body

from .helpers import FAST, add_session, open_memoir, pg_schema, reply, start_doomed_worker, wait_for

# a claim outlives a heartbeat by far more than a loaded machine stalls a process (CI runs
# this beside the whole suite on two cores: at 3 s the doomed worker once lost its claim)
TIMING = {"job_heartbeat_s": 0.1, "job_abort_s": 8.0, "job_claim_s": 8.0, "job_abandon_s": 9.0}


@pytest.mark.parametrize(
    "backend", ["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)]
)
def test_a_killed_worker_is_abandoned_then_resumed_with_cached_episodes(
    tmp_path: Path, backend: str
) -> None:
    if backend == "postgres":
        with pg_schema() as url:
            run(tmp_path, {"database_url": url})
    else:
        run(tmp_path, {})


def run(tmp_path: Path, extra: dict[str, Any]) -> None:
    home = tmp_path / "home"
    opts = {**FAST, **TIMING, **extra, "home": str(home)}
    m = open_memoir(home, **{k: v for k, v in opts.items() if k != "home"})
    proc: subprocess.Popen[str] | None = None
    try:
        add_session(m)
        job = service.regenerate_summary(m, "alice", "s1")
        proc, errors = start_doomed_worker(tmp_path, opts, delay_s=0.4, worker_id="doomed")
        # two of four episodes done (each takes 0.4 s), then kill -9
        try:
            wait_for(lambda: (r := m.store.jobs.get(job.id)) and r.completed >= 2, timeout=60)
        except AssertionError:
            row, said = m.store.jobs.get(job.id), errors.read_text()[-2000:]
            stalled = f"the doomed worker did not get on: {row!r}; it said {said}"
            raise AssertionError(stalled) from None
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(10)
        killed_at = time.monotonic()
        running = m.store.jobs.get(job.id)
        assert running is not None and running.state == "running"
        assert running.claimed_by == "doomed"
        done_before = running.completed
        model = ScriptedModel(default=reply("the next worker"))
        m._model = lambda: model  # type: ignore[method-assign]
        sweeper = Worker(
            m.jobs(),
            {"summary": functools.partial(service.run_summary_job, m)},
            worker_id="sweeper",
        )
        assert sweeper.sweep() == []  # not yet: its last heartbeat is recent
        gone = wait_for(lambda: sweeper.sweep(), timeout=30, step=0.1)
        assert time.monotonic() - killed_at >= TIMING["job_abandon_s"] - 0.5  # on schedule
        assert [j.id for j in gone] == [job.id]
        failed = m.jobs().get(job.id)
        assert failed is not None and failed.state == "failed" and failed.error == ABANDONED
        # the next worker's start-up resumes the job
        stop = threading.Event()
        thread = threading.Thread(
            target=service.run_worker, args=(m, stop), kwargs={"worker_id": "next"}
        )
        thread.start()
        try:
            final = wait_for(
                lambda: (j := m.jobs().get(job.id)) and j.state == "completed" and j, timeout=30
            )
        finally:
            stop.set()
            thread.join(10)
        assert final.attempts == 2 and final.data.get("resumed") == 1
        # the finished episodes came from the cache: only the rest, and the merge, were asked
        assert model.calls <= 4 - done_before + 1
        assert model.calls >= 1
        body = read_summary_body(service.summary_store(m), m.store, "s1")
        assert body is not None and "merged by the next worker" in body
    finally:
        if proc is not None and proc.poll() is None:
            proc.kill()
            proc.wait(10)
        m.close()
