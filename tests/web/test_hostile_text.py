"""The page is safe with hostile text in strings a user controls beyond the message text
(test_pages covers messages, tool names and output, project names): a summary and a job
error that carry markup, a ``javascript:`` link in a message, and a 1 MB line. Nothing
executes (the page's title stays, no element is made from the text), the layout holds (no
horizontal overflow of the page), and the policy allows no inline script."""

from __future__ import annotations

from .conftest import Browse
from .flows import conversation
from .site import Site
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
    policy = page.evaluate("() => document.querySelector('meta[http-equiv]')?.content || ''")
    assert "unsafe-inline" not in policy
