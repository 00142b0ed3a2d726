"""The Session Memory panel in Chromium against a real ``memoir serve`` (scripted model):
Regenerate → progress to completed and the new summary; the summary buttons disabled while
the job is active; a POST whose answer is dropped reconciled to the one job it started (and
one that never reached the server to none); a failing job's message and Retry; a job that
is running when the page opens followed to its end."""

from __future__ import annotations

import statistics
import time
from typing import Any

import pytest

from .conftest import Browse, Screens
from .flows import Panel, conversation, wait_until
from .site import Site

pytestmark = pytest.mark.slow

REGENERATE = "**/api/sessions/*/summary/regenerate"

# Layout shifts the browser reports (Layout Instability API), none within 500 ms of input
LAYOUT_SHIFTS = """() => {
    window.__shifts = [];
    new PerformanceObserver((list) => {
        for (const e of list.getEntries()) if (!e.hadRecentInput) window.__shifts.push(e.value);
    }).observe({ type: 'layout-shift', buffered: false });
}"""


def open_session(browse: Browse, sid: str) -> tuple[Any, Panel]:
    page = browse.page()
    page.goto(f"{browse.site.base}/sessions/{sid}")
    page.locator(".exchange").first.wait_for()
    panel = Panel(page)
    wait_until(lambda: not panel.snapshot()["regenerate_disabled"])  # the summary was read
    return page, panel


def follow(panel: Panel, until: str, timeout: float = 60) -> list[dict[str, Any]]:
    """Snapshots of the panel every 50 ms until its status says ``until``."""
    seen: list[dict[str, Any]] = []
    deadline = time.monotonic() + timeout
    while True:
        snap = panel.snapshot()
        if not seen or (snap["status"], snap["note"], snap["regenerate_disabled"]) != (
            seen[-1]["status"],
            seen[-1]["note"],
            seen[-1]["regenerate_disabled"],
        ):
            seen.append(snap)
        if until in snap["status"]:
            return seen
        assert time.monotonic() < deadline, f"the panel never said {until!r}: {seen}"
        time.sleep(0.05)


def summary_gets(requests: list[tuple[float, str, str]], sid: str) -> list[float]:
    return [t for t, method, url in requests if method == "GET" and url.endswith(f"/{sid}/summary")]


def test_regenerate_shows_progress_and_the_new_summary(site: Site, browse: Browse) -> None:
    sid = site.make_session("progress", conversation(2))
    site.steer(tag="first")
    first = site.regenerate_and_wait(sid)
    assert "regeneration first" in first["summary"]
    # the conversation goes on (episodes already summarized come from the cache: these not)
    site.append(sid, conversation(7)[4:])

    page, panel = open_session(browse, sid)
    assert "regeneration first" in panel.snapshot()["summary"]
    updated = page.locator(".panel-meta dd").first.locator("time")
    updated_before = updated.get_attribute("datetime")
    assert updated_before == first["updated_at"]
    requests: list[tuple[float, str, str]] = []
    page.on("request", lambda r: requests.append((time.monotonic(), r.method, r.url)))
    page.evaluate(LAYOUT_SHIFTS)

    # three episodes to summarize at 1.2 s each: 3.6 s, two polls at least (panel.js polls
    # every 1.5 s); at 0.6 s each a loaded CI run saw one ("4 of 7", then merging)
    site.steer(tag="second", delay_s=1.2)
    panel.regenerate.focus()
    page.keyboard.press("Enter")  # keyboard usable: the button is a real button
    seen = follow(panel, "Regenerated")

    active = seen[:-1]
    assert active, seen
    # while the job was queued or running the summary buttons were disabled, the panel busy
    assert all(s["regenerate_disabled"] and not s["retry_shown"] for s in active), active
    assert all(s["busy"] == "true" for s in active), active
    steps = [s["status"] for s in seen]
    episodes = [s for s in steps if s.startswith("Summarizing episodes:")]
    done = [int(s.split(":")[1].split(" of ")[0]) for s in episodes]
    assert len(done) >= 2 and done == sorted(done) and done[-1] > done[0], steps
    final = seen[-1]
    assert not final["regenerate_disabled"] and final["busy"] == "false"
    assert (
        "regeneration second" in final["summary"] and "regeneration first" not in final["summary"]
    )
    assert page.locator(".panel-meta dd").nth(1).inner_text() == "scripted:web"
    assert updated.get_attribute("datetime") == site.summary(sid)["updated_at"] != updated_before

    # one POST, then a GET every 1.5 s while the job was active (the next one 1.5 s after
    # the previous answer), and none once it had ended
    posts = [t for t, method, url in requests if method == "POST"]
    assert len(posts) == 1
    gets = summary_gets(requests, sid)
    assert len(gets) >= 3
    gaps = [b - a for a, b in zip([posts[0], *gets], gets, strict=False)]
    assert min(gaps) >= 1.4, gaps
    assert statistics.median(gaps) < 3.0, gaps
    time.sleep(2.0)
    assert len(summary_gets(requests, sid)) == len(gets)  # polling stopped
    # nothing moved on the page while it polled
    assert page.evaluate("() => window.__shifts") == []
    jobs = site.jobs(sid)
    assert [j.state for j in jobs] == ["completed", "completed"]


def test_a_dropped_receipt_is_reconciled_to_the_one_job(site: Site, browse: Browse) -> None:
    sid = site.make_session("dropped", conversation(4))
    site.steer(tag="kept", delay_s=0.3)
    page, panel = open_session(browse, sid)
    receipts: list[dict[str, Any]] = []

    def drop_the_answer(route: Any) -> None:
        answer = route.fetch()  # the request reaches the server, which admits the job …
        receipts.append(answer.json())
        route.abort("connectionreset")  # … and its answer never reaches the page

    page.route(REGENERATE, drop_the_answer)
    posts: list[str] = []
    page.on("request", lambda r: posts.append(r.url) if r.method == "POST" else None)
    panel.regenerate.click()
    seen = follow(panel, "Regenerated")

    assert len(receipts) == 1 and len(posts) == 1  # the page never POSTed a second time
    admitted = receipts[0]["data"]["job"]["id"]
    jobs = site.jobs(sid)
    assert [j.id for j in jobs] == [admitted] and jobs[0].state == "completed"
    notes = {s["note"] for s in seen}
    assert "The server's answer was lost; this is the regeneration it started." in notes
    assert all(s["regenerate_disabled"] for s in seen[:-1]), seen
    assert "regeneration kept" in seen[-1]["summary"]


def test_a_post_that_never_arrived_starts_nothing(site: Site, browse: Browse) -> None:
    sid = site.make_session("never-sent", conversation(2))
    site.steer(tag="later")
    page, panel = open_session(browse, sid)
    page.route(REGENERATE, lambda route: route.abort("connectionreset"))  # not sent on
    panel.regenerate.click()
    wait_until(lambda: "nothing was started" in panel.snapshot()["note"])
    snap = panel.snapshot()
    assert not snap["regenerate_disabled"] and snap["busy"] == "false"
    assert site.jobs(sid) == []
    page.unroute(REGENERATE)
    panel.regenerate.click()  # the reader tries again: now it goes through
    follow(panel, "Regenerated")
    assert [j.state for j in site.jobs(sid)] == ["completed"]


def test_a_failing_job_shows_its_message_and_retry_works(
    site: Site, browse: Browse, screens: Screens
) -> None:
    sid = site.make_session("failing", conversation(3))
    reason = "the provider could not parse the scripted reply (test failure)"
    site.steer(fail=reason)
    _page, panel = open_session(browse, sid)
    panel.regenerate.click()
    follow(panel, "failed")
    [failed] = site.jobs(sid)
    assert failed.state == "failed" and reason in failed.error
    assert panel.alert.inner_text() == failed.error  # the job's own message
    snap = panel.snapshot()
    assert snap["retry_shown"] and not snap["retry_disabled"] and not snap["regenerate_disabled"]
    screens.take(panel.page, "session-failed")

    site.steer(tag="retried", delay_s=0.3)
    panel.retry.click()
    seen = follow(panel, "Regenerated")
    assert all(s["regenerate_disabled"] and not s["retry_shown"] for s in seen[:-1]), seen
    assert not panel.alert.is_visible()
    assert "regeneration retried" in seen[-1]["summary"]
    assert [j.state for j in site.jobs(sid)] == ["failed", "completed"]


def test_a_job_running_when_the_page_opens_is_followed(site: Site, browse: Browse) -> None:
    sid = site.make_session("reopened", conversation(4))
    site.steer(tag="background", delay_s=0.5)
    with site.client() as c:
        job = c.post(f"/api/sessions/{sid}/summary/regenerate").json()["data"]["job"]
    page = browse.page()
    page.goto(f"{site.base}/sessions/{sid}")
    panel = Panel(page)
    wait_until(lambda: panel.snapshot()["busy"] == "true")
    assert panel.snapshot()["regenerate_disabled"]
    page.get_by_role("link", name="← Sessions").click()  # away, and back while it runs
    page.go_back()
    seen = follow(panel, "Regenerated")
    assert any(s["status"].startswith(("Summarizing", "Merging", "Saving", "Queued")) for s in seen)
    assert "regeneration background" in seen[-1]["summary"]
    assert [j.id for j in site.jobs(sid)] == [job["id"]]
