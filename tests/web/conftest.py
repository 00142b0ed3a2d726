"""The browser suite's fixtures: one scripted ``memoir serve`` and one Chromium per module,
a fresh browser context (so a fresh session storage) per test, screenshots under the
run's tmp dir (also copied to ``$MEMOIR_TEST_SCREENSHOTS`` when set).

Without Debian's chromium (or the playwright package) these tests are skipped — loudly: the
summary at the end of the run says so in capitals — and with ``MEMOIR_TEST_REQUIRE_BROWSER=1``
(``make test`` sets it, after installing chromium from apt) they fail instead.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from .site import CHROMIUM_ARGS, Site, chromium_path, scripted_server

NOT_RUN = "BROWSER TESTS NOT RUN"


def _missing() -> str | None:
    try:
        import playwright.sync_api  # noqa: F401
    except ImportError:
        return "the playwright package is not installed (pip install -e '.[dev]')"
    if chromium_path() is None:
        return "Debian's chromium is not installed (apt-get install chromium)"
    return None


def require_browser() -> None:
    missing = _missing()
    if missing is None:
        return
    message = f"{NOT_RUN}: {missing}"
    if os.environ.get("MEMOIR_TEST_REQUIRE_BROWSER") == "1":
        pytest.fail(message, pytrace=False)
    pytest.skip(message)


def pytest_terminal_summary(terminalreporter: Any) -> None:
    """Say it in capitals when the browser suite was skipped (also under xdist: the skips
    are read from the reports the workers sent)."""
    reasons = {
        str(report.longrepr[2]) if isinstance(report.longrepr, tuple) else str(report.longrepr)
        for report in terminalreporter.stats.get("skipped", [])
    }
    reasons = {r for r in reasons if NOT_RUN in r}
    if reasons:
        terminalreporter.write_sep(
            "!", "THE BROWSER SUITE (tests/web) DID NOT RUN", red=True, bold=True
        )
        for reason in sorted(reasons):
            terminalreporter.write_line(f"  {reason}", red=True, bold=True)
        terminalreporter.write_line(
            "  `make test` installs chromium from apt and runs it.", red=True
        )


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Site]:
    require_browser()
    with scripted_server(tmp_path_factory.mktemp("site")) as served:
        yield served


@pytest.fixture(scope="module")
def browser(site: Site) -> Iterator[Any]:
    from playwright.sync_api import sync_playwright

    with sync_playwright() as pw:
        launched = pw.chromium.launch(executable_path=chromium_path(), args=CHROMIUM_ARGS)
        try:
            yield launched
        finally:
            launched.close()


class Screens:
    """Screenshots of a test, into its tmp dir (and ``$MEMOIR_TEST_SCREENSHOTS``)."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self.saved: list[Path] = []

    def take(self, page: Any, name: str, *, full_page: bool = False) -> Path:
        size = page.viewport_size
        path = self.folder / f"{name}-{size['width']}x{size['height']}.png"
        page.screenshot(path=str(path), full_page=full_page)
        self.saved.append(path)
        extra = os.environ.get("MEMOIR_TEST_SCREENSHOTS")
        if extra:
            Path(extra).mkdir(parents=True, exist_ok=True)
            shutil.copy(path, Path(extra) / path.name)
        return path


@pytest.fixture
def screens(tmp_path: Path) -> Screens:
    folder = tmp_path / "screenshots"
    folder.mkdir()
    return Screens(folder)


class Browse:
    """A browser context of one test: pages with the errors they raised collected (an
    uncaught exception in the page fails the test)."""

    def __init__(self, browser: Any, site: Site) -> None:
        self.browser = browser
        self.site = site
        self.contexts: list[Any] = []
        self.errors: list[str] = []
        self.dialogs: list[str] = []

    def page(
        self,
        *,
        width: int = 1280,
        height: int = 800,
        user: str | None = "alice",
        color_scheme: str = "light",
    ) -> Any:
        context = self.browser.new_context(
            viewport={"width": width, "height": height}, color_scheme=color_scheme
        )
        self.contexts.append(context)
        page = context.new_page()
        page.set_default_timeout(20_000)
        page.on("pageerror", lambda exc: self.errors.append(str(exc)))

        def console(message: Any) -> None:  # what the page's policy refused is a bug too
            if message.type == "error" and "Content Security Policy" in message.text:
                self.errors.append(message.text)

        page.on("console", console)

        def dialog(d: Any) -> None:
            self.dialogs.append(d.message)
            d.dismiss()

        page.on("dialog", dialog)
        if user is not None:  # signed in as the form would: the key in session storage
            page.goto(f"{self.site.base}/static/icon.svg")
            page.evaluate("k => sessionStorage.setItem('memoir.apiKey', k)", self.site.keys[user])
        return page

    def close(self) -> None:
        for context in self.contexts:
            context.close()


@pytest.fixture
def browse(browser: Any, site: Site) -> Iterator[Browse]:
    b = Browse(browser, site)
    try:
        yield b
    finally:
        b.close()
    assert b.errors == [], f"the page raised: {b.errors}"
    assert b.dialogs == [], f"the page opened dialogs: {b.dialogs}"
