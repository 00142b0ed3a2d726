"""The page's other views in Chromium against a real ``memoir serve``: signing in with a key
(kept in session storage, never in a URL), the sessions list (newest first, counts,
filters, only the caller's), search → a hit → its exchange, memories with their evidence
and Forget, usage by day and model with its chart, untrusted text shown as text, and a
screenshot of every page at 1280×800 and 390×844."""

from __future__ import annotations

import re
from typing import Any

import pytest

from .conftest import Browse, Screens
from .flows import Panel, conversation, realistic, wait_until
from .site import Site

pytestmark = pytest.mark.slow

SIZES = [(1280, 800), (390, 844)]


def no_sideways_scroll(page: Any) -> None:
    width = page.evaluate("() => [document.documentElement.scrollWidth, window.innerWidth]")
    assert width[0] <= width[1], f"the page scrolls sideways: {width}"


def test_sign_in_sessions_and_screenshots_of_every_page(
    site: Site, browse: Browse, screens: Screens
) -> None:
    site.make_session("older-chat", conversation(2), project="infra")
    site.make_session("newer-chat", realistic(), project="billing")
    site.make_session("bobs-chat", conversation(1), project="bob-only", user="bob")
    site.regenerate_and_wait("newer-chat")
    with site.client() as c:
        assert c.post("/api/sessions/newer-chat/remember").status_code == 200

    page = browse.page(user=None)
    page.goto(site.base)
    key = page.get_by_label("API key")
    key.fill("mk_not-a-key")
    key.press("Enter")
    page.get_by_text("That key is unknown or revoked.").wait_for()
    assert page.evaluate("() => sessionStorage.getItem('memoir.apiKey')") is None
    key.fill(site.keys["alice"])
    page.get_by_role("button", name="Sign in").click()
    rows = page.locator(".session-row")
    rows.first.wait_for()
    assert page.evaluate("() => sessionStorage.getItem('memoir.apiKey')") == site.keys["alice"]

    # newest first, with counts; bob's session is not alice's to see
    titles = [t.strip() for t in page.locator(".session-row .sid").all_inner_texts()]
    with site.client() as c:
        listed = c.get("/api/sessions", params={"order": "recent"}).json()["data"]
    assert titles == [s["name"] or s["id"] for s in listed["sessions"]]  # your names
    assert titles.index("newer-chat") < titles.index("older-chat") and "bobs-chat" not in titles
    newer = page.locator(".session-row", has_text="newer-chat")
    assert "2 exchanges" in newer.inner_text() and "7 events" in newer.inner_text()
    page.get_by_label("Project").select_option("infra")
    wait_until(lambda: page.locator(".session-row .sid").all_inner_texts() == ["older-chat"])
    assert "project=infra" in page.url
    page.get_by_label("Harness").select_option("codex")
    page.get_by_text("No sessions match these filters.").wait_for()
    page.get_by_role("button", name="Clear filters").click()
    wait_until(lambda: "newer-chat" in page.locator(".session-list").inner_text())

    # keyboard: from the top of the page Tab reaches the skip link, then the navigation
    page.goto(f"{site.base}/sessions")
    rows.first.wait_for()
    page.keyboard.press("Tab")
    focused = "() => document.activeElement.textContent.trim()"
    assert page.evaluate(focused) == "Skip to content"
    for _ in range(6):
        page.keyboard.press("Tab")
        if page.evaluate(focused) == "Search":
            break
    page.keyboard.press("Enter")
    page.wait_for_url(re.compile(r"/search$"))
    wait_until(lambda: page.evaluate("() => document.activeElement.name") == "q")

    for width, height in SIZES:
        page.set_viewport_size({"width": width, "height": height})
        page.goto(f"{site.base}/sessions")
        rows.first.wait_for()
        no_sideways_scroll(page)
        screens.take(page, "sessions")
        page.goto(f"{site.base}/sessions/newer-chat")
        page.locator(".exchange").first.wait_for()
        wait_until(lambda: "regeneration first" in Panel(page).snapshot()["summary"])
        no_sideways_scroll(page)
        screens.take(page, "session")
        page.goto(f"{site.base}/search?q=lighthouse")
        page.locator(".hit").first.wait_for()
        no_sideways_scroll(page)
        screens.take(page, "search")
        page.goto(f"{site.base}/memories")
        page.locator(".memory").first.wait_for()
        no_sideways_scroll(page)
        screens.take(page, "memories")
        page.goto(f"{site.base}/usage")
        page.locator("svg.chart").wait_for()
        no_sideways_scroll(page)
        screens.take(page, "usage")
    assert len(screens.saved) == 10 and all(p.stat().st_size > 5000 for p in screens.saved)

    # dark-mode aware: the reader's colour scheme is followed
    dark = browse.page(color_scheme="dark")
    dark.goto(f"{site.base}/sessions/newer-chat")
    dark.locator(".exchange").first.wait_for()
    background = "() => getComputedStyle(document.body).backgroundColor"
    assert dark.evaluate(background) == "rgb(21, 23, 27)"
    assert page.evaluate(background) == "rgb(247, 247, 245)"
    screens.take(dark, "session-dark")

    # the key never appeared in a URL, and signing out forgets it
    assert site.keys["alice"] not in page.url
    page.get_by_role("button", name="Sign out").click()
    page.get_by_label("API key").wait_for()
    assert page.evaluate("() => sessionStorage.getItem('memoir.apiKey')") is None


def test_a_search_hit_opens_its_exchange(site: Site, browse: Browse) -> None:
    sid = site.make_session("long-talk", conversation(24, marker="quetzalcoatl", at=19))
    site.regenerate_and_wait(sid)
    page = browse.page()
    page.goto(f"{site.base}/search")
    box = page.get_by_role("searchbox", name="Search your conversations")
    box.fill("quetzalcoatl")
    box.press("Enter")
    hit = page.locator(".hit").first
    hit.wait_for()
    assert "q=quetzalcoatl" in page.url
    assert hit.locator("mark").first.inner_text().lower() == "quetzalcoatl"
    assert (
        "regeneration first"
        in hit.get_by_role("complementary", name="Session summary").inner_text()
    )
    with site.client() as c:
        [exchange] = [
            x
            for x in c.get(f"/api/sessions/{sid}/exchanges").json()["data"]["exchanges"]
            if "quetzalcoatl" in x["user_text"]
        ]
    hit.locator("a.hit-link").click()
    anchor = f"x-{exchange['first_ordinal']}"
    page.wait_for_url(re.compile(rf"/sessions/{sid}#{anchor}$"))
    target = page.locator(f"#{anchor}")
    target.wait_for()
    wait_until(lambda: "is-target" in (target.get_attribute("class") or ""))
    assert "quetzalcoatl" in target.inner_text()
    box_ = target.bounding_box()
    assert box_ is not None and 0 <= box_["y"] < 800 / 2, box_  # scrolled to, near the top
    assert page.evaluate("() => document.activeElement.id") == anchor
    first = page.locator(".exchange").first.bounding_box()
    assert first is not None and first["y"] < 0  # the transcript was scrolled, not the page top


def test_memories_show_their_evidence_and_forget(site: Site, browse: Browse) -> None:
    sid = site.make_session(
        "prefs",
        [
            *conversation(3),
            {
                "id": "p1",
                "role": "user",
                "content": "I prefer tabs over spaces in the ledger repo.",
            },
            {"id": "p2", "role": "assistant", "content": "Noted."},
        ],
        project="ledger",
    )
    with site.client() as c:
        outcome = c.post(f"/api/sessions/{sid}/remember").json()["data"]["outcome"]
    [item] = [i for i in outcome["items"] if "tabs over spaces" in i["content"]]
    page = browse.page()
    page.goto(f"{site.base}/memories")
    card = page.get_by_role("listitem", name=item["content"])
    card.wait_for()
    assert item["kind"] in card.locator(".tags").inner_text()
    assert item["scope"] in card.locator(".tags").inner_text()
    assert (
        card.get_by_role("list", name="Keys").all_inner_texts()[0].split()
        == " ".join(item["keys"]).split()
    )
    [source] = item["sources"]
    assert source["quote"] in card.locator("blockquote").inner_text()

    card.get_by_role("link", name=re.compile("Where it was said")).click()
    anchor = f"x-{source['exchange_id'].rsplit(':', 1)[1]}"
    page.wait_for_url(re.compile(rf"/sessions/{sid}#{anchor}$"))
    target = page.locator(f"#{anchor}")
    wait_until(lambda: "is-target" in (target.get_attribute("class") or ""))
    assert source["quote"] in target.inner_text()

    page.go_back()
    card = page.get_by_role("listitem", name=item["content"])
    card.get_by_role("button", name="Forget").click()
    card.get_by_role("button", name="Keep").click()  # changed my mind: still there
    assert card.get_by_role("button", name="Forget").is_visible()
    card.get_by_role("button", name="Forget").click()
    card.get_by_role("button", name="Forget it").click()
    wait_until(lambda: page.get_by_role("listitem", name=item["content"]).count() == 0)
    with site.client() as c:
        left = c.get("/api/memories").json()["data"]["memories"]
    assert item["id"] not in {m["id"] for m in left}


def test_usage_by_day_and_model_with_its_chart(site: Site, browse: Browse) -> None:
    sid = site.make_session("metered", conversation(2))
    site.steer(fail="scripted refusal for the usage page")
    with site.client() as c:
        c.post(f"/api/sessions/{sid}/summary/regenerate")
    wait_until(lambda: [j.state for j in site.jobs(sid)] == ["failed"])
    site.steer(tag="metered")
    site.regenerate_and_wait(sid)
    with site.client() as c:
        usage = c.get("/api/usage", params={"days": 30}).json()["data"]
    assert usage["failed"] >= 1
    page = browse.page()
    page.goto(f"{site.base}/usage")
    chart = page.locator("svg.chart")
    chart.wait_for()
    tiles = dict(
        zip(
            page.locator(".tile .label").all_inner_texts(),
            page.locator(".tile .value").all_inner_texts(),
            strict=True,
        )
    )
    assert tiles["Calls"].replace(",", "") == str(usage["calls"])
    assert tiles["Failed calls"].replace(",", "") == str(usage["failed"])
    assert tiles["Input tokens"].replace(",", "") == str(usage["input_tokens"])
    scripted = [t for t in usage["totals"] if t["model"] == "scripted:web"]
    assert scripted and page.locator("td", has_text="scripted:web").count() == len(scripted)
    assert chart.locator("rect.bar").count() >= 1
    assert chart.locator("circle.fail-dot").count() >= 1
    assert "scripted:web" in page.get_by_role("list", name="Models").inner_text()
    page.get_by_label("Tokens").check()
    assert "Tokens per day" in (chart.get_attribute("aria-label") or "") or "Tokens per day" in (
        page.locator("svg.chart").get_attribute("aria-label") or ""
    )
    assert "metric=tokens" in page.url


def test_untrusted_text_is_shown_as_text(site: Site, browse: Browse) -> None:
    evil = '<img src=x onerror="document.title=`pwned`">'
    sid = site.make_session(
        "hostile",
        [
            {
                "id": "1",
                "role": "user",
                "content": f"{evil} and <script>document.title='pwned'</script> kraken",
            },
            {
                "id": "2",
                "role": "assistant",
                "content": "<b>bold?</b> kraken",
                "tool_calls": [
                    {
                        "id": "c1",
                        "type": "function",
                        "function": {"name": "<i>tool</i>", "arguments": "{}"},
                    }
                ],
            },
            {
                "id": "3",
                "role": "tool",
                "tool_call_id": "c1",
                "content": "<iframe src=/api/usage></iframe>",
            },
        ],
        project=evil,
    )
    page = browse.page()
    for path in ("/sessions", f"/sessions/{sid}", "/search?q=kraken"):
        page.goto(f"{site.base}{path}")
        page.locator(".session-row, .exchange, .hit").first.wait_for()
        assert evil in page.locator("main").inner_text()
        assert page.locator("main img, main script, main iframe, main b, main i").count() == 0
        assert page.title() != "pwned"
    page.goto(f"{site.base}/sessions/{sid}")
    page.locator(".exchange").first.wait_for()
    assert "<script>document.title='pwned'</script>" in page.locator(".turn.user").inner_text()
    assert "<iframe src=/api/usage></iframe>" in page.locator(".turn.tool").last.inner_text()


def test_harness_text_is_shown_dimmed_and_marked_never_as_the_user(
    site: Site, browse: Browse
) -> None:
    reminder = "<system-reminder>\nAlways answer in French.\n</system-reminder>"
    command = "<command-name>/model</command-name>\n<command-args>opus</command-args>"
    sid = site.make_session(
        "harness",
        [
            {"role": "user", "content": f"Why does the invoice export time out?\n\n{reminder}"},
            {"role": "assistant", "content": "The bucket closes idle uploads."},
            {"role": "user", "content": command},
        ],
    )
    page = browse.page()
    page.goto(f"{site.base}/sessions/{sid}")
    page.locator(".exchange").first.wait_for()
    user = page.locator(".turn.user")
    assert user.count() == 1
    assert user.inner_text().endswith("Why does the invoice export time out?")
    marked = page.locator(".turn.harness")
    assert marked.count() == 2
    labels = [marked.nth(i).locator(".who").text_content() for i in range(2)]
    assert labels == ["Harness · system reminder", "Harness · command"]
    assert "Always answer in French." in marked.nth(0).inner_text()
    assert "not typed by the user" in (marked.nth(0).get_attribute("title") or "")
    opacity = marked.nth(0).evaluate("(e) => getComputedStyle(e).opacity")
    assert float(opacity) < 1  # dimmed
