"""Two `memoir serve` processes on one PostgreSQL schema and the test Redis, as two replicas
behind a load balancer: a storm of regenerate POSTs spread over both admits one job."""

from __future__ import annotations

import os
import threading
import uuid
from pathlib import Path
from typing import Any

import httpx
import pytest

from jobs.helpers import pg_schema  # tests/jobs: a package on the rootdir path
from memoir.model.event import named_session_id

from .serve_proc import memoir_cli, serve

pytestmark = [pytest.mark.postgres, pytest.mark.redis, pytest.mark.slow]

STORM = 50


def test_regenerate_storm_over_two_replicas_admits_one_job(tmp_path: Path) -> None:
    redis_url = os.environ.get("MEMOIR_TEST_REDIS_URL")
    if not redis_url:
        pytest.skip("MEMOIR_TEST_REDIS_URL is not set")
    with pg_schema() as db_url:
        base_env = {
            **os.environ,
            "MEMOIR_DATABASE_URL": db_url,
            "MEMOIR_REDIS_URL": redis_url,
            "MEMOIR_SUMMARY_STORE": "database",
            "MEMOIR_LLM": "offline",
            "MEMOIR_SYNC_DISABLED": "1",
        }
        envs = []
        for name in ("a", "b"):
            (tmp_path / name).mkdir()
            envs.append({**base_env, "MEMOIR_HOME": str(tmp_path / name)})
        key = memoir_cli("users", "add", "alice", env=envs[0]).strip()
        assert key.startswith("mk_")
        auth = {"Authorization": f"Bearer {key}"}
        sid = f"storm-{uuid.uuid4().hex[:12]}"  # the test Redis is shared: a key of its own
        # no workers (--workers 0): the job stays queued through the storm and after
        with (
            serve(envs[0], tmp_path / "a.log") as base_a,
            serve(envs[1], tmp_path / "b.log") as base_b,
            httpx.Client(base_url=base_a, headers=auth, timeout=30) as a,
            httpx.Client(base_url=base_b, headers=auth, timeout=30) as b,
        ):
            assert a.post("/api/sessions", json={"id": sid}).status_code == 201
            messages = [
                {"role": "user", "content": "plan the migration to postgres", "id": "1"},
                {"role": "assistant", "content": "first dump, then restore", "id": "2"},
            ]
            r = b.post(f"/api/sessions/{sid}/events", json={"messages": messages})
            assert r.status_code == 200, r.text
            # the session and its events are one store's: both replicas see them
            for client in (a, b):
                got = client.get(f"/api/sessions/{sid}/events").json()["data"]["events"]
                assert [e["ordinal"] for e in got] == [1, 2]

            barrier = threading.Barrier(STORM)
            results: list[Any] = [None] * STORM

            def post(n: int) -> None:
                client = a if n % 2 == 0 else b
                try:
                    barrier.wait(timeout=30)
                    resp = client.post(f"/api/sessions/{sid}/summary/regenerate")
                    results[n] = (resp.status_code, resp.json())
                except BaseException as exc:  # reported below, with the request it was
                    results[n] = exc

            threads = [threading.Thread(target=post, args=(n,)) for n in range(STORM)]
            for t in threads:
                t.start()
            for t in threads:
                t.join(timeout=90)
            errors = [r for r in results if isinstance(r, BaseException)]
            assert not errors, errors
            answers = [r for r in results if not isinstance(r, BaseException)]
            assert len(answers) == STORM
            assert [status for status, _ in answers] == [202] * STORM, answers
            jobs = [body["data"]["job"] for _, body in answers]
            ids = {job["id"] for job in jobs}
            assert len(ids) == 1, ids
            (job_id,) = ids
            stored = named_session_id("alice", sid)  # the id alice's name is stored under
            assert all(job["session"] == stored for job in jobs)

            for client in (a, b):
                got = client.get(f"/api/sessions/{sid}/summary")
                assert got.status_code == 200, got.text
                assert got.json()["data"]["job"]["id"] == job_id
            # once the storm is over, a replica still answers with the same job
            again = b.post(f"/api/sessions/{sid}/summary/regenerate")
            assert again.status_code == 202 and again.json()["data"]["job"]["id"] == job_id
