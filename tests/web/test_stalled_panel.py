"""A regeneration whose worker died mid-run: the page says, in words, that it has stalled
(no heartbeat for so many seconds, the worker may have stopped), instead of showing it as
running. The job row is written as a dead replica leaves it: running, claimed by a worker
of another host, its last heartbeat a minute old."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from memoir.app import Memoir
from memoir.config import Settings
from memoir.store.codec import JobRow

from .conftest import Browse
from .flows import Panel, conversation, wait_until
from .site import SERVER_ENV, Site


def test_a_stalled_job_is_said_in_words(site: Site, browse: Browse) -> None:
    sid = site.make_session("stalled", conversation(2))
    then = datetime.now(UTC) - timedelta(seconds=60)
    env = {"MEMOIR_HOME": str(site.home), **SERVER_ENV, **site.extra}
    with Memoir.open(Settings.from_env(env, sources=())) as m:
        _, created = m.store.jobs.create(
            JobRow(
                id="dead0000000000000000000000000001",
                kind="summary",
                user="alice",
                session_id=sid,
                state="running",
                created_at=then,
                started_at=then,
                heartbeat_at=then,
                claimed_by="elsewhere:4242:deadbeef",
                claimed_at=then,
                source_hash="x",
                attempts=1,
            )
        )
    assert created
    job = site.summary(sid)["job"]
    assert (job["state"], job["stalled"], job["worker"]) == (
        "running",
        True,
        "elsewhere:4242:deadbeef",
    )
    assert job["heartbeat_age_s"] >= 60
    page = browse.page()
    page.goto(f"{site.base}/sessions/{sid}")
    panel = Panel(page)
    wait_until(lambda: panel.status_text().startswith("Stalled"))
    said = panel.status_text()
    assert "no heartbeat for" in said and "may have stopped" in said, said
    seconds = int(said.split("no heartbeat for ", 1)[1].split(" s", 1)[0].replace(",", ""))
    assert seconds >= 60
