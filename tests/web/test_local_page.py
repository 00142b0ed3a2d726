"""Your own transcripts on your own page, as the docs say: `memoir demo` syncs its corpus
into a kept home, `memoir remember` keeps an item, `memoir serve` prints a sign-in link, and
Chromium following that link sees the sessions list, a transcript with its summary, and the
memory — as the user ``local``, with no key made. The link works once."""

from __future__ import annotations

import os
import queue
import re
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from .conftest import Screens, require_browser
from .flows import Panel, wait_until
from .site import CHROMIUM_ARGS, chromium_path

pytestmark = pytest.mark.slow

MEMOIR = str(Path(sys.executable).parent / "memoir")  # .venv/bin/memoir, as the README runs it
INFRA = "7b8c9d0e-1f2a-4b3c-8d4e-5f6a7b8c9d06"  # PgBouncer in transaction pooling mode
DECIDED = "We decided to support Python 3.11 and newer only."  # `memoir remember 0199f1a2`
LINK = re.compile(r"http://127\.0\.0\.1:\d+/#login=[A-Za-z0-9_-]+")


def _env(tmp_path: Path, home: Path) -> dict[str, str]:
    """The test's environment without the developer's Memoir settings, in a fresh HOME."""
    env = {
        k: v
        for k, v in os.environ.items()
        if not (k.startswith(("MEMOIR_", "EPISODIC_MEMORY_")) and not k.startswith("MEMOIR_TEST_"))
        and k not in ("OPENAI_API_KEY", "ANTHROPIC_API_KEY")
    }
    (tmp_path / "user-home").mkdir(exist_ok=True)
    return {
        **env,
        "HOME": str(tmp_path / "user-home"),
        "MEMOIR_HOME": str(home),
        "MEMOIR_EMBEDDER": "none",
    }


def _run(env: dict[str, str], *args: str) -> str:
    done = subprocess.run(
        [MEMOIR, *args], env=env, capture_output=True, text=True, timeout=180, check=False
    )
    assert done.returncode == 0, f"memoir {' '.join(args)}: {done.stdout}{done.stderr}"
    return done.stdout


class Served:
    """`memoir serve` running, with the lines it printed on stdout."""

    def __init__(self, proc: subprocess.Popen[str], log: Path) -> None:
        self.proc = proc
        self.log = log
        self.lines: queue.Queue[str] = queue.Queue()
        self.printed: list[str] = []
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        try:
            for line in self.proc.stdout:
                self.lines.put(line)
        except (OSError, ValueError):  # closed at the end of the test
            return

    def link(self, timeout: float = 60) -> str:
        while True:
            try:
                line = self.lines.get(timeout=timeout)
            except queue.Empty:
                raise AssertionError(
                    f"no sign-in link printed: {self.printed} {self.log.read_text()}"
                ) from None
            self.printed.append(line)
            found = LINK.search(line)
            if found:
                return found.group(0)


@pytest.fixture
def served(tmp_path: Path) -> Iterator[Served]:
    """The docs' steps on a fresh home: demo (`--home` for the path `--keep` prints),
    remember, serve (`--port 0`: a free port, which the link names)."""
    require_browser()
    home = tmp_path / "demo-home"
    env = _env(tmp_path, home)
    _run(env, "demo", "--home", str(home))  # `make demo` runs `memoir demo --keep`
    assert DECIDED in _run(env, "remember", "0199f1a2")
    log = tmp_path / "serve.log"
    with log.open("w") as err:
        proc = subprocess.Popen(
            [MEMOIR, "serve", "--port", "0"], env=env, stdout=subprocess.PIPE, stderr=err, text=True
        )
        try:
            yield Served(proc, log)
        finally:
            proc.terminate()
            try:
                proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
            if proc.stdout is not None:
                proc.stdout.close()


@pytest.fixture
def chromium() -> Iterator[Any]:
    from playwright.sync_api import sync_playwright

    with sync_playwright() as pw:
        launched = pw.chromium.launch(executable_path=chromium_path(), args=CHROMIUM_ARGS)
        try:
            yield launched
        finally:
            launched.close()


def _page(chromium: Any, errors: list[str]) -> Any:
    page = chromium.new_context(viewport={"width": 1280, "height": 800}).new_page()
    page.set_default_timeout(20_000)
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    return page


def test_the_printed_link_shows_your_own_sessions_transcripts_and_memories(
    served: Served, chromium: Any, screens: Screens
) -> None:
    link = served.link()
    # the line docs/http.md quotes (on the port asked for: 0 picks a free one here)
    assert f"Sign in to your own sessions (user local): {link}\n" in served.printed
    errors: list[str] = []
    page = _page(chromium, errors)
    page.goto(link)

    # the sessions list: the whole demo corpus, yours (local's), no key made for it
    rows = page.locator(".session-row")
    rows.first.wait_for()
    wait_until(lambda: rows.count() == 14)
    assert "login=" not in page.url  # the token left the address bar at once
    key = page.evaluate("() => sessionStorage.getItem('memoir.apiKey')")
    assert key.startswith("mp_") and key not in link
    assert INFRA in page.locator(".session-list").inner_text()
    screens.take(page, "local-sessions")

    # a transcript, with the summary the demo wrote beside it
    page.locator(".session-row", has_text=INFRA).get_by_role("link").first.click()
    page.wait_for_url(re.compile(f"/sessions/{INFRA}$"))
    page.locator(".exchange").first.wait_for()
    first = page.locator(".exchange").first.inner_text()
    assert "QueuePool limit" in first and "PgBouncer in transaction mode" in first
    wait_until(lambda: len(Panel(page).snapshot()["summary"].strip()) > 40)
    assert "PgBouncer" in Panel(page).snapshot()["summary"]
    screens.take(page, "local-session")

    # the memory `memoir remember` kept, with the user's words
    page.get_by_role("link", name="Memories").click()
    page.wait_for_url(re.compile(r"/memories$"))
    page.locator(".memory").first.wait_for()
    assert page.locator(".memory", has_text=DECIDED).count() == 1
    screens.take(page, "local-memories")

    # the same link a second time signs nobody in
    again = _page(chromium, errors)
    again.goto(link)
    again.get_by_text("used already or has expired").wait_for()
    assert again.get_by_label("API key").is_visible()
    assert again.evaluate("() => sessionStorage.getItem('memoir.apiKey')") is None
    assert "login=" not in again.url

    # signing out ends the page's key on the server too
    page.get_by_role("button", name="Sign out").click()
    page.get_by_label("API key").wait_for()
    import httpx

    base = link.split("/#", 1)[0]
    r = httpx.get(f"{base}/api/sessions", headers={"Authorization": f"Bearer {key}"})
    assert r.status_code == 401 and "has ended" in r.text
    assert errors == []
