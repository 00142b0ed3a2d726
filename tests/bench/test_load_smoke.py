"""The load bench as a smoke test (issue 37, point 6): ``bench/load_bench.py`` for ~30 s
against the test PostgreSQL and Redis (a schema of its own), two `memoir serve` replicas
and a `memoir worker` as subprocesses. No timing is asserted: no 5xx, no lost request,
every route exercised, at most one job per session per storm, and the consistency check
(every acknowledged message stored exactly once, every job finished or resumable)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = [pytest.mark.postgres, pytest.mark.redis, pytest.mark.slow]

BENCH = Path(__file__).resolve().parents[2] / "bench" / "load_bench.py"


@pytest.mark.timeout(400)
def test_a_short_load_run_is_consistent_and_has_no_server_error() -> None:
    pg, redis = os.environ.get("MEMOIR_TEST_PG_URL"), os.environ.get("MEMOIR_TEST_REDIS_URL")
    if not pg or not redis:
        pytest.skip("MEMOIR_TEST_PG_URL and MEMOIR_TEST_REDIS_URL are not set")
    done = subprocess.run(
        [
            sys.executable,
            str(BENCH),
            "--duration",
            "30",
            "--users",
            "4",
            "--clients",
            "6",
            "--storm-every",
            "3",
            "--storm-size",
            "10",
            "--database-url",
            pg,
            "--redis-url",
            redis,
            "--json",
        ],
        capture_output=True,
        text=True,
        timeout=380,
    )
    assert done.returncode == 0, done.stderr[-3000:] + done.stdout[-3000:]
    result = json.loads(done.stdout)
    assert result["server_errors"] == 0, result["routes"]
    assert result["transport_errors"] == {}
    for op, route in result["routes"].items():
        assert route["count"] > 0, op
        assert all(status.startswith("2") for status in route["status"]), (op, route)
    jobs = result["jobs"]
    assert jobs["storms"] >= 3
    assert jobs["created"] <= jobs["requested"] == jobs["storms"]
    assert jobs["created"] >= 1 and jobs["max_per_storm"] >= 1
    assert jobs["in_database"] == jobs["created"] and jobs["not_answered"] == 0
    assert jobs["neither_finished_nor_resumable"] == 0
    assert jobs["overlapping"] == 0  # never two active jobs of one session at once
    check = result["consistency"]
    assert check["passed"] is True, check
    setup_messages = 2 * result["setup"]["sessions"]
    assert check["acknowledged"] > setup_messages  # the run appended, and it was checked
    assert check["events"] >= check["acknowledged"]
    assert (check["missing"], check["duplicated"], check["strays"]) == (0, 0, 0)
