"""The page is safe with hostile text in strings a user controls beyond the message text
(test_pages covers messages, tool names and output, project names): a summary and a job
error that carry markup, a ``javascript:`` link in a message, and a 1 MB line; memory text,
quotes, keys and projects, a session's title (its id and its project, a path) made of
``<img onerror>``, ``<script>`` and ``javascript:`` links, and a 1 MB title, memory and
quote. Nothing executes (the page's title stays, no element is made from the text, the page
raises nothing and opens no dialog), the layout holds (no horizontal overflow of the page,
at 1280 and 390 wide), and the policy the server sends allows no inline script."""

from __future__ import annotations

import json
import re
from dataclasses import replace
from typing import Any
from urllib.parse import quote

import httpx

from memoir.app import Memoir
from memoir.config import Settings
from memoir.memory.item_store import memory_parts
from memoir.model import Harness, Session

from .conftest import Browse
from .flows import conversation, wait_until
from .site import SERVER_ENV, Site
from .test_panel import follow, open_session

EVIL = '<img src=x onerror="document.title=`pwned`">'
MADE = "main img, main script, main iframe, main a[href^='javascript']"


def test_summary_job_error_links_memories_and_a_huge_line_stay_text(
    site: Site, browse: Browse
) -> None:
    rule = f"From now on, always quote {EVIL} literally in the docs."  # markup in a message
    huge = "x" * (1024 * 1024)
    sid = site.make_session(
        "hostile-more",
        [
            *conversation(2),
            {"id": "h1", "role": "user", "content": f"see [the docs](javascript:alert(1)) {rule}"},
            {"id": "h2", "role": "assistant", "content": huge},
        ],
    )
    page, panel = open_session(browse, sid)
    original = page.title()
    # a summary ending in markup, then a job error made of markup
    site.steer(tag=EVIL)
    panel.regenerate.click()
    follow(panel, "Regenerated")
    assert EVIL in panel.snapshot()["summary"]
    site.steer(fail=f"provider said {EVIL}")
    panel.regenerate.click()
    follow(panel, "failed")
    assert EVIL in panel.alert.inner_text()
    assert page.locator(MADE).count() == 0
    width = page.evaluate("() => [document.documentElement.scrollWidth, window.innerWidth]")
    assert width[0] <= width[1] + 1, width  # the 1 MB line wraps or scrolls in its box
    assert page.title() == original != "pwned"
    policy = httpx.get(page.url).headers["content-security-policy"]  # the page's own
    assert "script-src 'self'" in policy and "unsafe-inline" not in policy


SCRIPT = "<script>document.title='pwned'</script>"
JS_LINK = "[open](javascript:document.title='pwned')"
HOSTILE = f"{EVIL} {SCRIPT} {JS_LINK} javascript:document.title='pwned'"
HOSTILE_ID = 'evil-<img src=x onerror="document.title=`pwned`">'  # ids come from transcripts
HUGE_ID = "huge-title"
MEGA = "m" * (1024 * 1024)


def _memory_line(item_id: str, content: str, quote: str, sessions: list[str]) -> str:
    return json.dumps(
        {
            "memoir_memory": 1,
            "id": item_id,
            "session_id": sessions[0],
            "project": HOSTILE,
            "scope": "project",
            "kind": "preference",
            "content": content,
            "keys": [EVIL[:60], "javascript:alert(1)"],
            "sources": [{"session_id": sid, "ordinal": 1, "quote": quote} for sid in sessions],
        }
    )


def _arrange(site: Site) -> None:
    """Alice's hostile session (its id and project made of markup, a project path) and a
    session whose title is a 1 MB line, through the library as a sync would store them;
    her memories made of markup through ``memoir memories import``'s own path, and one a
    1 MB line long written to the store as it is (bigger than import allows: what the page
    shows, it shows whatever the database holds)."""
    settings = Settings.from_env({"MEMOIR_HOME": str(site.home), **SERVER_ENV}, sources=())
    with Memoir.open(settings) as memoir:
        said = [{"role": "user", "content": f"I prefer {HOSTILE} in every kraken report."}]
        for sid, project in ((HOSTILE_ID, f"/srv/{HOSTILE}"), (HUGE_ID, MEGA)):
            # stored under the hostile id itself, as a sync stores a transcript's (a name
            # given to append is stored under a digest): the page links to it as it is
            made = Session(id=sid, project=project, harness=Harness.API, user="alice")
            memoir.store.api.create(made)
            memoir.append(sid, said, user="alice")
        long_quote = f"{EVIL} {SCRIPT} " + "q" * 900  # one line, as long as a quote may be
        lines = [
            _memory_line("hostile-1", f"{HOSTILE} " + "c" * 1800, long_quote, [HOSTILE_ID]),
            _memory_line("hostile-2", HOSTILE, long_quote, ["javascript:document.title='pwned'"]),
        ]
        report = memoir.memories.import_lines(lines, user="alice")
        assert report.items == 2, report
        [row] = [
            r for r in memory_parts(memoir.store).items.find(owner="alice") if r.id == "hostile-2"
        ]
        huge = replace(
            row,
            id="hostile-mega",
            operation_id="import:hostile-mega",
            content=MEGA,
            normalized=MEGA,
            key_sig="mega",
            sources=tuple(
                replace(s, quote=MEGA, operation_id="import:hostile-mega") for s in row.sources
            ),
        )
        memory_parts(memoir.store).items.import_all([huge], [])


# the elements reaching past the window's right edge: what a failure names
_WIDE = """() => [...document.querySelectorAll('main *')]
  .filter((e) => e.getBoundingClientRect().right > window.innerWidth + 1).slice(0, 6)
  .map((e) => `${e.tagName}.${e.className} ${Math.round(e.getBoundingClientRect().width)}px`)"""


def _holds(page: Any, original_title: str) -> None:
    assert page.locator(MADE).count() == 0
    assert page.title() != "pwned" and original_title in page.title()
    width = page.evaluate("() => [document.documentElement.scrollWidth, window.innerWidth]")
    if width[0] > width[1] + 1:  # the long lines must wrap or scroll in their boxes
        wide = page.evaluate(_WIDE)
        raise AssertionError(f"{page.url[:80]} scrolls sideways {width}: {wide}")


def test_memory_text_quote_session_title_and_project_stay_text(site: Site, browse: Browse) -> None:
    _arrange(site)
    page = browse.page()
    policy = page.goto(f"{site.base}/sessions").headers["content-security-policy"]
    script_src = re.search(r"script-src ([^;]*)", policy)
    assert script_src is not None and script_src.group(1).split() == ["'self'"], policy
    assert "unsafe-inline" not in policy and "unsafe-eval" not in policy
    rows = page.locator(".session-row")
    wait_until(lambda: rows.count() >= 2)
    main = page.locator("main")
    assert HOSTILE_ID in main.inner_text() and EVIL in main.inner_text()
    _holds(page, "Sessions")

    page.goto(f"{site.base}/sessions/{quote(HOSTILE_ID, safe='')}")
    page.locator(".exchange").first.wait_for()
    heading = page.locator("main h1")
    wait_until(lambda: HOSTILE in heading.inner_text())
    assert heading.inner_text() == f"/srv/{HOSTILE} · {HOSTILE_ID}"
    assert page.title() == f"/srv/{HOSTILE} · {HOSTILE_ID} · Memoir"  # as text, not run
    assert HOSTILE in page.locator(".turn.user").inner_text()
    _holds(page, HOSTILE)

    page.goto(f"{site.base}/sessions/{HUGE_ID}")
    page.locator(".exchange").first.wait_for()
    wait_until(lambda: len(heading.inner_text()) > len(MEGA))
    _holds(page, HUGE_ID)

    page.goto(f"{site.base}/memories")
    cards = page.locator(".memory")
    wait_until(lambda: cards.count() == 3)
    text = main.inner_text()
    assert EVIL in text and SCRIPT in text and JS_LINK in text and MEGA in text
    evidence = page.locator(".evidence a")
    hrefs = [evidence.nth(k).get_attribute("href") or "" for k in range(evidence.count())]
    assert hrefs and all(h.startswith("/sessions/") for h in hrefs), hrefs
    assert f"/sessions/{quote(HOSTILE_ID, safe='')}#x-1" in hrefs  # its exchange
    _holds(page, "Memories")

    page.goto(f"{site.base}/search?q=kraken")
    page.locator(".hit").first.wait_for()
    assert EVIL in main.inner_text()
    _holds(page, "kraken")

    page.set_viewport_size({"width": 390, "height": 844})  # and on a phone
    for path, ready, title in (
        ("/sessions", ".session-row", "Sessions"),
        ("/memories", ".memory", "Memories"),
        (f"/sessions/{HUGE_ID}", ".exchange", HUGE_ID),
    ):
        page.goto(f"{site.base}{path}")
        page.locator(ready).first.wait_for()
        wait_until(lambda: len(main.inner_text()) > len(MEGA))
        _holds(page, title)
