"""Summary regeneration as jobs through the Memoir facade: request, duplicates, the
worker, the oversized guard, 50 concurrent requests across two instances on PostgreSQL +
Redis, Redis going away and coming back, and a superseded worker refused."""

from __future__ import annotations

import functools
import os
import threading
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest

from memoir import service
from memoir.app import Memoir
from memoir.errors import NotFound, OversizedHistory
from memoir.jobs import ABANDONED, AdmissionUnavailable, Job, Worker
from memoir.llm import ScriptedModel
from memoir.summaries.persist import read_summary_body

from .helpers import add_session, free_port, open_memoir, pg_schema, redis_server, reply, wait_for


@pytest.fixture
def memoir(home: Path) -> Iterator[Memoir]:
    m = open_memoir(home)
    yield m
    m.close()


def use_model(m: Memoir, model: ScriptedModel) -> ScriptedModel:
    m._model = lambda: model  # type: ignore[method-assign]
    return model


def run_worker(m: Memoir) -> tuple[threading.Event, threading.Thread]:
    stop = threading.Event()
    thread = threading.Thread(target=service.run_worker, args=(m, stop), kwargs={"worker_id": "w1"})
    thread.start()
    return stop, thread


def test_a_regeneration_is_one_job_that_a_worker_completes(memoir: Memoir) -> None:
    add_session(memoir)
    model = use_model(memoir, ScriptedModel(default=reply("the worker")))
    job = service.regenerate_summary(memoir, "alice", "s1")
    assert job.state == "queued" and job.kind == "summary"
    assert service.regenerate_summary(memoir, "alice", "s1").id == job.id  # a duplicate
    assert service.summary_job(memoir, "alice", "s1") == job
    with pytest.raises(NotFound):
        service.regenerate_summary(memoir, "bob", "s1")  # not bob's session: not told it exists
    assert service.summary_job(memoir, "bob", "s1") is None
    stop, thread = run_worker(memoir)
    try:
        done = wait_for(
            lambda: (j := service.summary_job(memoir, "alice", "s1")) and not j.active and j
        )
    finally:
        stop.set()
        thread.join(10)
    assert done.id == job.id and done.state == "completed", done.error
    assert (done.phase, done.completed, done.total) == ("merge", 1, 1)
    assert model.calls == 5  # four episodes and the merge
    body = read_summary_body(service.summary_store(memoir), memoir.store, "s1")
    assert body is not None and "merged by the worker" in body
    shown = done.to_json()
    assert shown["state"] == "completed" and shown["id"] == job.id and shown["error"] is None
    # the job has ended: a new request is a new job
    assert service.regenerate_summary(memoir, "alice", "s1").id != job.id


def test_an_oversized_history_is_refused_at_request_time(home: Path) -> None:
    with open_memoir(home, episode_max_full_tokens=400) as m:
        add_session(m)
        with pytest.raises(OversizedHistory, match="incremental compression"):
            service.regenerate_summary(m, "alice", "s1")
        assert m.store.jobs.find() == []


def test_a_failing_run_fails_the_job_with_its_reason(memoir: Memoir) -> None:
    add_session(memoir)
    use_model(memoir, ScriptedModel(default=lambda r: "not json at all"))
    job = service.regenerate_summary(memoir, "alice", "s1")
    stop, thread = run_worker(memoir)
    try:
        done = wait_for(lambda: (j := memoir.jobs().get(job.id)) and not j.active and j)
    finally:
        stop.set()
        thread.join(10)
    assert done.state == "failed" and done.error and "internal error" not in done.error


def test_cancel_stops_a_queued_job(memoir: Memoir) -> None:
    add_session(memoir)
    job = service.regenerate_summary(memoir, "alice", "s1")
    cancelled = memoir.jobs().cancel(job.id)
    assert cancelled.state == "failed" and cancelled.error == "cancelled"
    assert service.regenerate_summary(memoir, "alice", "s1").id != job.id
    with pytest.raises(NotFound):
        memoir.jobs().cancel("nope")


@pytest.mark.parametrize("with_redis", [pytest.param(True, marks=pytest.mark.redis), False])
@pytest.mark.postgres
def test_fifty_concurrent_requests_on_two_instances_make_one_job(
    tmp_path: Path, with_redis: bool
) -> None:
    redis = os.environ.get("MEMOIR_TEST_REDIS_URL") if with_redis else None
    if with_redis and not redis:
        pytest.skip("MEMOIR_TEST_REDIS_URL is not set")
    with pg_schema() as url:
        opts: dict[str, Any] = {"database_url": url, "redis_url": redis}
        a = open_memoir(tmp_path / "a", **opts)
        b = open_memoir(tmp_path / "b", **opts)
        try:
            sid = f"s-{os.urandom(6).hex()}"  # the test Redis is shared by every test
            add_session(a, sid)
            barrier = threading.Barrier(50)

            def request(n: int) -> str:
                barrier.wait()
                return service.regenerate_summary(a if n % 2 else b, "alice", sid).id

            with ThreadPoolExecutor(50) as pool:
                ids = list(pool.map(request, range(50)))
            assert len(ids) == 50 and len(set(ids)) == 1
            assert [j.id for j in a.store.jobs.find()] == ids[:1]
        finally:
            a.close()
            b.close()


def test_redis_away_fails_new_jobs_closed_while_reads_work(home: Path) -> None:
    port = free_port()
    m = open_memoir(home, redis_url=f"redis://127.0.0.1:{port}/0")
    try:
        add_session(m, "s1")
        add_session(m, "s2")
        use_model(m, ScriptedModel(default=reply("before the outage")))
        with redis_server(port):
            first = service.regenerate_summary(m, "alice", "s1")
            assert (
                Worker(
                    m.jobs(), {"summary": functools.partial(service.run_summary_job, m)}
                ).run_once()
                is not None
            )
        # Redis is stopped now
        with pytest.raises(AdmissionUnavailable, match="reads keep working"):
            service.regenerate_summary(m, "alice", "s2")
        assert m.store.jobs.active("alice", "s2") is None  # nothing written
        done = service.summary_job(m, "alice", "s1")  # reads keep working
        assert done is not None and done.id == first.id and done.state == "completed"
        assert "before the outage" in (service.summary_body(m, "s1") or "")
        with redis_server(port):  # back
            again = service.regenerate_summary(m, "alice", "s2")
            assert again.state == "queued"
            assert service.regenerate_summary(m, "alice", "s2").id == again.id
    finally:
        m.close()


def test_a_superseded_worker_is_refused_and_its_replacement_stands(home: Path) -> None:
    """Worker A's claim expires while its merge hangs; B takes the job over and saves its
    summary; A's merge then returns and A's save is refused."""
    opts = {"job_abort_s": 0.5, "job_claim_s": 0.5, "job_abandon_s": 30.0}
    a, b = open_memoir(home, **opts), open_memoir(home, **opts)
    try:
        add_session(a)
        in_merge, go_on = threading.Event(), threading.Event()
        answer_b = reply("B")

        def answer_a(request: Any) -> str:
            if "<episodes>" in request.messages[-1].content:  # the merge: hang there
                in_merge.set()
                go_on.wait(20)
                return str(reply("A")(request))
            return str(answer_b(request))

        use_model(a, ScriptedModel(default=answer_a))
        use_model(b, ScriptedModel(default=answer_b))
        job = service.regenerate_summary(a, "alice", "s1")
        ended: list[Job | None] = []
        worker_a = Worker(
            a.jobs(), {"summary": functools.partial(service.run_summary_job, a)}, worker_id="A"
        )
        thread = threading.Thread(target=lambda: ended.append(worker_a.run_once()))
        thread.start()
        assert in_merge.wait(20)
        worker_b = Worker(
            b.jobs(), {"summary": functools.partial(service.run_summary_job, b)}, worker_id="B"
        )
        taken = wait_for(lambda: worker_b.run_once(), timeout=20)  # once A's claim expired
        assert taken.id == job.id and taken.state == "completed", taken.error
        assert "merged by B" in (read_summary_body(service.summary_store(b), b.store, "s1") or "")
        go_on.set()  # A's merge returns now; its save is refused
        thread.join(20)
        assert ended and ended[0] is not None and ended[0].state == "completed"
        row = a.store.jobs.get(job.id)
        assert row is not None and row.claimed_by == "B" and row.state == "completed"
        body = read_summary_body(service.summary_store(a), a.store, "s1") or ""
        assert "merged by B" in body and "merged by A" not in body
        assert not any(
            "merged by A" in t.data.get("data", {}).get("narrative", "")
            for t in a.store.traces.find("s1")
        )
    finally:
        go_on.set()
        a.close()
        b.close()


def test_the_abandoned_message_points_to_a_retry() -> None:
    assert "retry to reuse completed episodes" in ABANDONED


def test_the_fenced_summary_store_writes_only_while_the_check_passes(memoir: Memoir) -> None:
    from memoir.jobs import Superseded
    from memoir.summaries.persist import save_summary
    from memoir.summaries.port import FencedSummaryStore

    add_session(memoir)
    allowed = [True]

    def check() -> None:
        if not allowed[0]:
            raise Superseded("gone")

    fenced = FencedSummaryStore(service.summary_store(memoir), check)
    save_summary(fenced, memoir.store, "s1", "first text", model="m")
    allowed[0] = False
    with pytest.raises(Superseded):
        save_summary(fenced, memoir.store, "s1", "second text", model="m")
    assert read_summary_body(service.summary_store(memoir), memoir.store, "s1") == "first text"


@pytest.mark.parametrize("change", ["edited", "appended"])
def test_events_edited_under_a_running_job_invalidate_its_result(
    memoir: Memoir, change: str
) -> None:
    """A rewrite of the events the job read fails it (its summary is not saved); events
    appended after them do not."""
    from dataclasses import replace as swap

    from memoir.model import Harness, Session
    from memoir.store import IngestBatch

    from .helpers import history

    add_session(memoir)
    started = threading.Event()

    def slow(request: Any) -> str:
        started.set()
        threading.Event().wait(0.3)
        return reply("the worker")(request)

    use_model(memoir, ScriptedModel(default=slow))
    job = service.regenerate_summary(memoir, "alice", "s1")
    stop, thread = run_worker(memoir)
    try:
        assert started.wait(10)
        session = Session(id="s1", project="p", harness=Harness.API, user="alice")
        if change == "edited":
            events = [swap(e, text=e.text.replace("MARK1", "EDITED")) for e in history(4)]
            memoir.store.ingest.apply(IngestBatch(session, tuple(events), reset=True))
        else:
            more = [swap(e, ordinal=e.ordinal + 8) for e in history(1)]
            memoir.store.ingest.apply(IngestBatch(session, tuple(more)))
        done = wait_for(lambda: (j := memoir.jobs().get(job.id)) and not j.active and j)
    finally:
        stop.set()
        thread.join(10)
    body = read_summary_body(service.summary_store(memoir), memoir.store, "s1")
    if change == "edited":
        assert done.state == "failed" and "edited or deleted" in done.error
        assert body is None
    else:
        assert done.state == "completed", done.error
        assert body is not None and "merged by the worker" in body


def test_worker_log_lines_carry_the_job_id(
    memoir: Memoir, caplog: pytest.LogCaptureFixture
) -> None:
    import json as json_lib
    import logging

    from memoir.server.plumbing import JsonFormatter

    add_session(memoir)
    use_model(memoir, ScriptedModel(default=reply("the worker")))
    job = service.regenerate_summary(memoir, "alice", "s1")
    with caplog.at_level(logging.INFO, logger="memoir.jobs"):
        stop, thread = run_worker(memoir)
        try:
            wait_for(lambda: (j := memoir.jobs().get(job.id)) and not j.active and j)
        finally:
            stop.set()
            thread.join(10)
    running = [r for r in caplog.records if "running job" in r.getMessage()]
    assert running and all(getattr(r, "job_id", None) == job.id for r in running)
    assert json_lib.loads(JsonFormatter().format(running[0]))["job_id"] == job.id


@pytest.mark.postgres
def test_a_replicas_threads_have_names_of_their_own(tmp_path: Path) -> None:
    """`memoir serve --workers 2` on PostgreSQL: the job workers (memoir-worker-N) and the
    connection pool's threads (memoir-pg-worker-N) never share a name, so a thread dump
    or a log line's thread says which is which."""
    with pg_schema() as url:
        memoir = open_memoir(tmp_path / "home", database_url=url)
        stop = threading.Event()
        workers: list[threading.Thread] = []
        try:
            workers = service.start_workers(memoir, 2, stop)
            names = [t.name for t in threading.enumerate() if t.name.startswith("memoir")]
            assert {t.name for t in workers} == {"memoir-worker-1", "memoir-worker-2"}
            assert any(n.startswith("memoir-pg-worker-") for n in names), names
            assert len(names) == len(set(names)), sorted(names)
        finally:
            stop.set()
            for t in workers:
                t.join(timeout=30)
            memoir.close()
