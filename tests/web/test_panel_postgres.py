"""The Session Memory panel over PostgreSQL with Redis admission (what replicas share): a
POST whose answer is dropped still ends with exactly one job row, and the panel shows it."""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator
from typing import Any

import pytest

from jobs.helpers import pg_schema  # tests/jobs: a package on the rootdir path

from .conftest import Browse, require_browser
from .flows import Panel, conversation, wait_until
from .site import Site, scripted_server
from .test_panel import REGENERATE, follow

pytestmark = [pytest.mark.postgres, pytest.mark.redis, pytest.mark.slow]


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Site]:
    require_browser()
    redis_url = os.environ.get("MEMOIR_TEST_REDIS_URL")
    if not redis_url:
        pytest.skip("MEMOIR_TEST_REDIS_URL is not set")
    with pg_schema() as db_url:
        extra = {"MEMOIR_DATABASE_URL": db_url, "MEMOIR_REDIS_URL": redis_url}
        with scripted_server(tmp_path_factory.mktemp("pg-site"), extra=extra) as served:
            yield served


def test_a_dropped_receipt_is_one_job_on_postgres_and_redis(site: Site, browse: Browse) -> None:
    sid = f"pg-dropped-{uuid.uuid4().hex[:10]}"  # the test Redis is shared: a key of its own
    stored = site.make_session(sid, conversation(3))  # the id its jobs name
    site.steer(tag="postgres", delay_s=0.2)
    page = browse.page()
    page.goto(f"{site.base}/sessions/{sid}")
    panel = Panel(page)
    wait_until(lambda: not panel.snapshot()["regenerate_disabled"])
    receipts: list[dict[str, Any]] = []

    def drop_the_answer(route: Any) -> None:
        receipts.append(route.fetch().json())
        route.abort("connectionreset")

    page.route(REGENERATE, drop_the_answer)
    panel.regenerate.click()
    seen = follow(panel, "Regenerated")
    jobs = site.jobs(stored)
    assert [j.id for j in jobs] == [receipts[0]["data"]["job"]["id"]]
    assert jobs[0].state == "completed"
    assert "regeneration postgres" in seen[-1]["summary"]
