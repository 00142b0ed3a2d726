"""The result bound holds on a 5 MB transcript: every page, every mode, every list."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from memoir.app import Memoir
from memoir.demo import ClaudeWriter, tool_use_block
from memoir.mcp.tools import DEFAULT_PAGE_CHARS, MAX_RESULT_CHARS
from memoir.model import EventKind

from .mcp_client import Client, Server, run_cli

SID = "dddddddd-5555-4666-8777-888888888888"


@pytest.fixture
def big_home(tmp_path: Path, server_for: Callable[..., Server]) -> Path:
    """A home holding one Claude Code session of more than 5 MB: 70 exchanges with a 60 KB
    build log each, long replies, and a 400 KB pasted message."""
    w = ClaudeWriter(SID, cwd="/home/ann/code/big")
    for i in range(70):
        w.user(f"Round {i}: the nightly build broke again, look at the log. " + "details " * 180)
        w.assistant(tool_use_block(f"t{i}", "Bash", {"command": f"make build-{i} 2>&1"}))
        log = "".join(f"[{i}:{n:05d}] compiling module_{n}.c … ok\n" for n in range(1_500))
        w.tool(f"t{i}", log + f"error: round {i} failed: undefined symbol frobnicate_{i}\n")
        w.assistant(f"Round {i} fails on frobnicate_{i}. " + "The linker says so. " * 400)
    w.user("Here is the whole core dump I pasted: " + "0xdeadbeef " * 36_000)
    w.assistant("That dump is too long to read at once; the top frame is the linker.")
    data = w.bytes()
    assert len(data) > 5 * 1024 * 1024
    source = tmp_path / "src" / "-home-ann-code-big"
    source.mkdir(parents=True)
    (source / f"{SID}.jsonl").write_bytes(data)
    home = tmp_path / "big-home"
    env = server_for(home).env
    run_cli(env, "sync", "--no-summaries", "--source", str(source.parent))
    return home


async def _pages(client: Client, limit: int | None = None, **args: Any) -> list[Any]:
    pages: list[Any] = []
    after = None
    while limit is None or len(pages) < limit:
        call = {"id": SID, **args} | ({} if after is None else {"after": after})
        reply = await client.call("read", call)
        pages.append(reply)
        after = reply.data["next_after"]
        if after is None:
            break
    return pages


def test_reading_a_5_mb_transcript_stays_in_bounds(
    big_home: Path, server_for: Callable[..., Server]
) -> None:
    async def body(client: Client) -> Any:
        short = await _pages(client)
        full = await _pages(client, limit=12, tools="full", max_chars=MAX_RESULT_CHARS)
        tail = await client.call("read", {"id": SID, "after": 280, "max_chars": 2_000})
        hits = await client.call("search", {"query": "frobnicate linker", "limit": 50})
        return short, full, tail, hits

    short, full, tail, hits = server_for(big_home).run(body)
    assert all(len(p.text) <= DEFAULT_PAGE_CHARS for p in short)
    assert all(len(p.text) <= MAX_RESULT_CHARS for p in full)
    with Memoir.at(big_home, embedder="none") as memoir:
        events = memoir.store.events.of(SID)
    visible = [e.ordinal for e in events if e.kind not in (EventKind.META, EventKind.THINKING)]
    seen = [e["n"] for p in short for e in p.data["events"]]
    assert seen == visible  # paged through the whole session: disjoint, nothing skipped
    logs = [e for p in full for e in p.data["events"] if e["kind"] == "tool_result"]
    assert logs and all(e["left_out"] > 0 for e in logs)  # 60 KB logs, each cut to a page
    assert all("undefined symbol frobnicate_" in e["text"] for e in logs)  # their end kept
    (dump,) = [e for p in short for e in p.data["events"] if "core dump" in e["text"]]
    assert dump["left_out"] > 380_000 and len(dump["text"]) < DEFAULT_PAGE_CHARS
    assert len(tail.text) <= 2_000 and tail.data["events"][0]["n"] == 281
    assert len(hits.text) <= MAX_RESULT_CHARS
    found = hits.data
    assert len(found["hits"]) + found["dropped"] == 50  # every hit kept or counted
    assert all(h["session_id"] == SID for h in found["hits"])
