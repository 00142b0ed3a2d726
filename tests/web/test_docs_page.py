"""``/docs`` in a real browser under the page's own Content-Security-Policy: Swagger UI
starts (its start-up script is a file, not inline), lists the API's operations, and the
browser refuses nothing (a refusal is logged as a console error, which fails the test)."""

from __future__ import annotations

from typing import Any


def test_docs_run_under_the_strict_policy(browse: Any) -> None:
    page = browse.page(user=None)
    refused: list[str] = []
    page.on("console", lambda m: refused.append(m.text) if m.type == "error" else None)
    response = page.goto(f"{browse.site.base}/docs")
    assert response is not None and response.status == 200
    policy = response.headers["content-security-policy"]
    assert "script-src 'self'" in policy and "unsafe-inline" not in policy
    page.locator(".opblock-summary-path", has_text="/api/search").first.wait_for()
    paths = page.locator(".opblock-summary-path").all_inner_texts()
    assert any(p.strip().startswith("/api/sessions") for p in paths), paths
    assert refused == [], refused
