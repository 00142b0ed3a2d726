"""Every tool through the SDK's own stdio client, against `memoir mcp` on the demo home."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import jsonschema

from memoir import service
from memoir.app import Memoir
from memoir.mcp.tools import MAX_RESULT_CHARS
from memoir.model import EventKind

from .mcp_client import CODEX, INFRA, LONG, WEBSHOP, Client, Server, run_cli

TOOLS = {"search", "read", "summary", "remember", "memories", "forget"}


def _visible_events(home: Path, session: str) -> list[int]:
    """The event numbers `read` shows by default, read through the library."""
    with Memoir.at(home, embedder="none") as memoir:
        events = memoir.store.events.of(session)
    return [e.ordinal for e in events if e.kind not in (EventKind.META, EventKind.THINKING)]


def test_the_server_lists_six_tools_described_for_a_model(
    demo_home: Path, server_for: Callable[..., Server]
) -> None:
    async def body(client: Client) -> Any:
        return client.init, (await client.session.list_tools()).tools

    init, tools = server_for(demo_home).run(body)
    assert init.serverInfo.name == "memoir"
    assert "search" in (init.instructions or "")
    assert {t.name for t in tools} == TOOLS
    for tool in tools:
        jsonschema.Draft202012Validator.check_schema(tool.inputSchema)
        assert tool.inputSchema["additionalProperties"] is False
        assert "Use it" in (tool.description or "")  # says when to use it
        assert tool.annotations is not None
    described = {t.name: t.description or "" for t in tools}
    for name in TOOLS - {"forget"}:
        assert f"{MAX_RESULT_CHARS:,} characters" in described[name], name
    assert "next_after" in described["read"] and "max_chars" in described["read"]
    flags = {t.name: t.annotations for t in tools}
    assert flags["search"].readOnlyHint and not flags["forget"].readOnlyHint
    assert flags["forget"].destructiveHint


def test_search_finds_the_session_a_known_query_names(
    demo_home: Path, server_for: Callable[..., Server]
) -> None:
    async def body(client: Client) -> Any:
        return (
            await client.call("search", {"query": "PgBouncer transaction pooling", "mode": "text"}),
            await client.call("search", {"query": "flaky coupon timezone", "limit": 1}),
            await client.call("search", {"query": "coupon", "project": "-home-ann-code-infra"}),
            await client.call("search", {"query": "zebrafish quantum"}),
        )

    pgbouncer, coupon, elsewhere, nothing = server_for(demo_home).run(body)
    hits = pgbouncer.data["hits"]
    assert hits[0]["session_id"] == INFRA
    assert hits[0]["exchange_id"] == f"{INFRA}:7"
    assert hits[0]["project"] == "-home-ann-code-infra"
    assert hits[0]["timestamp"] == "2025-10-14T09:02:20+00:00"
    assert "PgBouncer now sits between the API and Postgres" in hits[0]["snippet"]
    # issue 38: the goal the user stated first, then how it ended
    assert hits[0]["summary"].startswith("Under the load test the API logs `QueuePool limit")
    assert "— done: PgBouncer now sits between the API and Postgres" in hits[0]["summary"]
    with Memoir.at(demo_home, embedder="none") as memoir:  # the library's own answers
        direct = memoir.search("PgBouncer transaction pooling", mode="text", limit=10)
        (coupon_top,) = memoir.search("flaky coupon timezone", limit=1)
    assert [h["exchange_id"] for h in hits] == [h.exchange_id for h in direct]
    (top,) = coupon.data["hits"]
    assert top["session_id"] == WEBSHOP and top["exchange_id"] == coupon_top.exchange_id
    assert all(h["project"] == "-home-ann-code-infra" for h in elsewhere.data["hits"])
    assert nothing.data == {"hits": [], "dropped": 0, "note": nothing.data["note"]}
    assert nothing.data["note"].startswith("no matches")


def test_read_pages_are_disjoint_and_cover_the_session(
    demo_home: Path, server_for: Callable[..., Server]
) -> None:
    async def body(client: Client) -> list[Any]:
        pages = []
        after = None
        for _ in range(200):
            args: dict[str, Any] = {"id": LONG[:8], "max_chars": 2_000}
            if after is not None:
                args["after"] = after
            reply = await client.call("read", args)
            pages.append(reply)
            after = reply.data["next_after"]
            if after is None:
                return pages
        raise AssertionError("read never reached the end of the session")

    pages = server_for(demo_home).run(body)
    assert len(pages) > 3  # the long session does not fit in one small page
    seen: list[int] = []
    for page in pages:
        assert len(page.text) <= 2_000
        numbers = [e["n"] for e in page.data["events"]]
        assert numbers, "every page moves on"
        assert numbers == sorted(numbers)
        assert not seen or numbers[0] > seen[-1]  # disjoint, in order
        seen.extend(numbers)
    assert seen == _visible_events(demo_home, LONG)  # nothing skipped, nothing twice
    assert pages[0].data["session"]["id"] == LONG
    assert pages[0].data["session"]["project"] == "-home-ann-code-webshop"


def test_read_an_exchange_with_its_neighbours(
    demo_home: Path, server_for: Callable[..., Server]
) -> None:
    async def body(client: Client) -> Any:
        return (
            await client.call("read", {"id": f"{WEBSHOP}:12", "context": 0}),
            await client.call("read", {"id": f"{WEBSHOP[:8]}:12", "context": 1}),
            await client.call("read", {"id": f"{WEBSHOP}:12", "context": 0, "tools": "none"}),
        )

    alone, around, no_tools = server_for(demo_home).run(body)
    data = alone.data
    assert data["range"]["exchange"] == f"{WEBSHOP}:12"
    assert data["range"]["exchanges"] == [f"{WEBSHOP}:12"]
    events = data["events"]
    assert events[0] == {
        "n": 12,
        "kind": "user",
        "exchange": f"{WEBSHOP}:12",
        "at": "2025-10-14T09:04:00+00:00",
        "text": "Good catch. Please fix it and run the checkout tests. From now on, always use "
        "timezone-aware datetimes in this repo. I prefer small commits with one fix each.",
    }
    assert [e["n"] for e in events] == list(range(12, 18))
    assert events[-1]["kind"] == "assistant" and "All 8 checkout tests pass" in events[-1]["text"]
    assert data["next_after"] is None
    wider = around.data["range"]
    assert wider["exchanges"][1] == f"{WEBSHOP}:12" and len(wider["exchanges"]) == 2
    assert wider["first"] < 12 and wider["last"] == 17
    assert {e["kind"] for e in no_tools.data["events"]} == {"user", "assistant"}


def test_summary_gives_the_stored_text_and_its_coverage(
    demo_home: Path, server_for: Callable[..., Server]
) -> None:
    async def body(client: Client) -> Any:
        return await client.call("summary", {"session": WEBSHOP[:8]})

    data = server_for(demo_home).run(body).data
    with Memoir.at(demo_home, embedder="none") as memoir:
        body_text = service.summary_body(memoir, WEBSHOP)
    assert data["session_id"] == WEBSHOP and data["state"] == "real"
    assert data["summary"] == body_text and data["left_out"] == 0
    archived = demo_home / "archive" / "-home-ann-code-webshop" / f"{WEBSHOP}.jsonl"
    assert data["coverage"] == {
        "unit": "bytes",
        "covered": archived.stat().st_size,
        "current": archived.stat().st_size,
        "complete": True,
        "last_exchange": "2025-10-14T09:05:40.000Z",
    }


def test_remember_recall_and_forget(fresh_demo: Path, server_for: Callable[..., Server]) -> None:
    async def body(client: Client) -> Any:
        saved = await client.call("remember", {"session": CODEX[:8]})
        again = await client.call("remember", {"session": CODEX[:8]})
        listed = await client.call("memories", {})
        found = await client.call("memories", {"query": "timezone datetimes"})
        keyed = await client.call("memories", {"keys": ["Support Python"]})
        kinds = await client.call("memories", {"kind": "preference"})
        item = kinds.data["items"][0]["id"]
        gone = await client.call("forget", {"id": item[:6]})
        after = await client.call("memories", {})
        twice = await client.call("forget", {"id": item})
        return saved, again, listed, found, keyed, gone, after, twice, item

    saved, again, listed, found, keyed, gone, after, twice, item = server_for(fresh_demo).run(body)
    assert saved.data["outcome"] == "remembered" and saved.data["session_id"] == CODEX
    (decision,) = saved.data["items"]
    assert decision["content"] == "We decided to support Python 3.11 and newer only."
    assert decision["sources"] == [
        {
            "session_id": CODEX,
            "ordinal": 7,
            "exchange_id": f"{CODEX}:7",
            "quote": "We decided to support Python 3.11 and newer only.",
        }
    ]
    # the same turn again is the same operation: its answer, nothing saved twice
    assert [i["id"] for i in again.data["items"]] == [decision["id"]]
    assert len(listed.data["items"]) == 3  # the tour's two and this one
    assert found.data["items"][0]["kind"] == "constraint"
    assert "timezone-aware" in found.data["items"][0]["content"]
    assert [i["id"] for i in keyed.data["items"]] == [decision["id"]]
    assert gone.data == {"forgotten": item, "content": "I prefer small commits with one fix each."}
    assert item not in [i["id"] for i in after.data["items"]] and len(after.data["items"]) == 2
    assert twice.is_error and twice.text.startswith("no memory item")


def test_remember_without_a_session_takes_the_current_conversation(
    tmp_path: Path, server_for: Callable[..., Server]
) -> None:
    from memoir.demo import ClaudeWriter

    project = tmp_path / "work" / "app"
    project.mkdir(parents=True)
    sid = "cccccccc-1111-4222-8333-444444444444"
    writer = ClaudeWriter(sid, cwd=str(project))
    writer.user("From now on, always run ruff before committing in this repo.")
    writer.assistant("Understood: ruff before every commit.")
    source = tmp_path / "claude-projects"
    folder = source / "-work-app"
    folder.mkdir(parents=True)
    (folder / f"{sid}.jsonl").write_bytes(writer.bytes())
    home = tmp_path / "home"  # an archive without this transcript: remember syncs first
    server = server_for(home, cwd=project, MEMOIR_SOURCES=str(source))
    empty = tmp_path / "empty"
    empty.mkdir()
    run_cli(server.env, "sync", "--no-summaries", "--source", str(empty))

    async def body(client: Client) -> Any:
        return await client.call("remember", {})

    reply = server.run(body)
    assert reply.data["session_id"] == sid
    assert [i["content"] for i in reply.data["items"]] == [
        "From now on, always run ruff before committing in this repo."
    ]
