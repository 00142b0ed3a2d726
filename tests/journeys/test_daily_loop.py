"""The daily loop of a person who works with coding agents, end to end, one journey per
agent: a transcript appears → the SessionStart hook (Claude Code) or ``memoir sync``
(Codex) archives it → ``memoir search`` in the default mode, ``GET /api/search`` and the MCP
``search`` tool each rank it first → its summary exists → what the user said to remember is
a memory item with its quote → ``memoir memories context`` holds it once and no harness
text → the page shows the session. Every step checks values, as the user would look."""

from __future__ import annotations

import json
import re
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import anyio
import httpx
import pytest
from mcp.client.session import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client

from server.serve_proc import free_port, running  # tests/: on the rootdir path
from web.conftest import require_browser
from web.site import CHROMIUM_ARGS, chromium_path

from .loop import MEMOIR, Home, wait_for
from .transcripts import (
    CAVEAT,
    ENV_CONTEXT,
    QUERY,
    RULE,
    write_claude_session,
    write_codex_session,
    write_near_misses,
)

# the offline model and no embeddings extra in the subprocesses' own settings: what `make demo`
# gives a new user (the fresh-findable tests cover the embeddings extra per write path)
HARNESS_TEXT = ("Caveat:", "DO NOT respond", "<command-name>", "<environment_context>", "AGENTS.md")


def _item_with_rule(home: Home) -> dict[str, Any] | None:
    """The memory item whose quote holds the user's rule word for word, if there is one."""
    for item in home.json("memories", "list")["items"]:
        if any(RULE in source["quote"] for source in item["sources"]):
            return item
    return None


def _first_hit_session(hits: list[dict[str, Any]]) -> str:
    assert hits, "no hits"
    return str(hits[0]["session_id"])


async def _mcp_search(command: list[str], env: dict[str, str], log: Path) -> list[str]:
    params = StdioServerParameters(command=command[0], args=command[1:], env=env)
    with log.open("a", encoding="utf-8") as errlog:
        async with (
            stdio_client(params, errlog=errlog) as (read, write),
            ClientSession(read, write) as session,
        ):
            await session.initialize()
            result = await session.call_tool("search", {"query": QUERY})
            assert not result.isError, result.content
            text = result.content[0].text  # type: ignore[union-attr]
            return re.findall(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}", text)


def _mcp_command(home: Home, agent: str) -> tuple[list[str], dict[str, str]]:
    """The MCP server's command (and the environment it pins) as `memoir mcp install`
    wrote it for the agent: Claude Code's plugin ``.mcp.json``, Codex's ``config.toml``."""
    if agent == "claude-code":
        home.run("mcp", "install", "--claude")
        plugin = home.memoir_home / "claude-code-plugin" / ".mcp.json"
        server = json.loads(plugin.read_text())["mcpServers"]["memoir"]
    else:
        home.run("mcp", "install", "--codex")
        import tomllib

        config = (home.user_home / ".codex" / "config.toml").read_text()
        server = tomllib.loads(config)["mcp_servers"]["memoir"]
    return [server["command"], *server.get("args", [])], dict(server.get("env") or {})


@pytest.mark.parametrize("agent", ["claude-code", "codex"])
def test_the_daily_loop(agent: str, tmp_path: Path) -> None:
    require_browser()
    home = Home(tmp_path / "me")
    home.user_home.mkdir()
    ended = datetime.now(UTC) - timedelta(days=1)  # quiet since yesterday
    # weeks of older sessions near the query, synced and embedded before today's
    near = write_near_misses(home.user_home, ended=ended)
    home.run("sync")
    home.run("embed")
    assert {h["session_id"] for h in home.json("search", QUERY, "--mode", "vector")} == set(near)
    # 1. the agent writes a transcript; it reaches the archive the way the user set it up
    if agent == "claude-code":
        home.run("hook", "install")
        sid, _ = write_claude_session(home.user_home, ended=ended)
        home.run_hook()  # a background sync: archive, index, summaries, memories
    else:
        sid, _ = write_codex_session(home.user_home, ended=ended)
        home.run("sync")

    # 2. found first in the default mode, the moment it is stored
    # (the hook's sync runs in the background: wait until it has stored the session, not
    # merely until the near-misses written before it answer)
    def stored() -> list[dict[str, str]] | None:
        got = home.json("search", QUERY)
        return got if sid in {h["session_id"] for h in got} else None

    hits = wait_for("the session in search", stored)
    assert _first_hit_session(hits) == sid
    # 3. its summary exists, and says what it was about
    session = wait_for(
        "the summary",
        lambda: (s := home.json("show", sid[:8])).get("summary") and s,
        timeout=120,
    )
    summary = session["summary"]
    assert "xport" in summary or "invoice" in summary.lower(), summary
    assert not any(mark in summary for mark in HARNESS_TEXT), summary
    # 4. what the user asked to keep is a memory, quoted word for word, with no other command
    item = wait_for("the memory item", lambda: _item_with_rule(home), timeout=120)
    assert "linter" in item["content"].lower()
    assert all("Caveat" not in source["quote"] for source in item["sources"])
    # 5. the context block an agent gets holds it once, and nothing the harness wrote
    context = home.run("memories", "context").stdout
    assert context.lower().count("linter") == 1, context
    marks = (*HARNESS_TEXT, CAVEAT[:40], ENV_CONTEXT[:20])
    assert not any(mark in context for mark in marks), context

    # 6. the agent's own route: MCP search as installed, the venv not on PATH
    command, pinned = _mcp_command(home, agent)
    assert Path(command[0]).is_absolute(), command
    env = {**home.without_venv(), **pinned}
    found = anyio.run(_mcp_search, command, env, tmp_path / "mcp.log")
    assert found and found[0] == sid, found

    # 7. the service and the page, as docs/http.md says: `memoir serve` on loopback prints a
    # one-time sign-in link for the local user; scripts use a key of local's own
    key = home.run("users", "key", "local").stdout.strip()
    port = free_port()
    log = tmp_path / "serve.log"
    base = f"http://127.0.0.1:{port}"
    with running([MEMOIR, "serve", "--port", str(port)], home.env, log, base):
        got = httpx.get(
            f"{base}/api/search",
            params={"q": QUERY},
            headers={"Authorization": f"Bearer {key}"},
            timeout=30,
        )
        assert got.status_code == 200, got.text
        assert _first_hit_session(got.json()["data"]["hits"]) == sid
        link = wait_for("the sign-in link", lambda: _login_link(log, base))
        _check_page(link, sid, tmp_path)


def _login_link(log: Path, base: str) -> str | None:
    found = re.search(re.escape(base) + r"/#login=\S+", log.read_text())
    return found.group(0) if found else None


def _check_page(link: str, sid: str, tmp_path: Path) -> None:
    """Follow the sign-in link: the session is in the list; its transcript shows the user's
    request, with the harness's text there but dimmed (marked as the harness's); its
    summary panel (the summary GET, a synced session's summary file) shows the summary."""
    from playwright.sync_api import expect, sync_playwright

    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=chromium_path(), args=CHROMIUM_ARGS)
        try:
            page = browser.new_context(viewport={"width": 1280, "height": 800}).new_page()
            errors: list[str] = []
            page.on("pageerror", lambda exc: errors.append(str(exc)))
            page.set_default_timeout(20_000)
            page.goto(link)
            row = page.locator(".session-row", has_text=sid)
            row.first.wait_for()
            row.get_by_role("link").first.click()
            page.wait_for_url(re.compile(f"/sessions/{sid}$"))
            page.locator(".exchange").first.wait_for()
            shown = page.locator(".session-view, main").first.inner_text()
            assert "Zephyrine bucket keeps timing out" in shown, shown[:2000]
            panel = page.locator(".panel-summary")
            expect(panel).to_contain_text(re.compile("xport|invoice", re.IGNORECASE))
            assert "No summary yet" not in panel.inner_text()
            page.screenshot(path=str(tmp_path / "page.png"), full_page=True)
            assert errors == [], errors
        finally:
            browser.close()
