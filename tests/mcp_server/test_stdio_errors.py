"""Bad calls come back as tool errors of one sentence, and the server serves the next one."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from .mcp_client import WEBSHOP, Client, Server

BAD_CALLS = [
    ("read", {"id": "no-such-session"}, "no session 'no-such-session' in this Memoir home"),
    ("summary", {"session": "ffffffff"}, "no session 'ffffffff'"),
    ("read", {"id": f"{WEBSHOP}:999"}, f"no exchange '{WEBSHOP}:999'"),
    ("search", {"query": "coupon", "limit": -1}, "limit must be from 1 to 50; got -1"),
    ("search", {"query": "coupon", "limit": "ten"}, "limit must be a whole number"),
    ("search", {"query": "x" * 100_000}, "query is 100,000 characters long"),
    ("search", {}, "search needs 'query'"),
    ("search", {"query": "coupon", "colour": "red"}, "search does not take 'colour'"),
    ("search", {"query": "coupon", "mode": "fuzzy"}, "mode must be one of text, vector, hybrid"),
    (
        "search",
        {"query": "coupon", "after": "the day after never"},
        "after: 'the day after never' is not a date",
    ),
    ("search", {"query": "coupon", "project": "nowhere"}, "no project 'nowhere'"),
    ("read", {"id": WEBSHOP, "after": -3}, "after must be from 0 to"),
    ("read", {"id": WEBSHOP, "after": 10_000}, "after must be from 0 to 17"),
    ("read", {"id": WEBSHOP, "max_chars": 50}, "max_chars must be from 2,000 to 20,000"),
    ("memories", {"kind": "rumour"}, "kind must be one of fact, preference"),
    ("memories", {"keys": "x" * 500}, "each keys entry is at most 100 characters"),
    ("forget", {"id": "zzzzzzzz"}, "no memory item 'zzzzzzzz'"),
    ("no_such_tool", {}, "there is no tool 'no_such_tool'"),
]


def test_each_bad_call_is_a_tool_error_and_the_next_call_works(
    demo_home: Path, server_for: Callable[..., Server]
) -> None:
    async def body(client: Client) -> list[tuple[Any, Any]]:
        replies = []
        for tool, arguments, _ in BAD_CALLS:  # one server for all: it must keep serving
            bad = await client.call(tool, arguments)
            good = await client.call("search", {"query": "coupon", "mode": "text", "limit": 2})
            replies.append((bad, good))
        return replies

    replies = server_for(demo_home).run(body)
    for (tool, _, says), (bad, good) in zip(BAD_CALLS, replies, strict=True):
        assert bad.is_error, (tool, says)
        assert says in bad.text, (says, bad.text)
        assert "\n" not in bad.text and "Traceback" not in bad.text
        assert len(bad.text) < 400  # a sentence, not an echo of a 100 KB argument
        assert good.data["hits"][0]["project"] == "-home-ann-code-webshop"


def test_a_home_without_an_archive_says_so_and_is_not_created(
    tmp_path: Path, server_for: Callable[..., Server]
) -> None:
    home = tmp_path / "typo-home"

    async def body(client: Client) -> Any:
        return await client.call("search", {"query": "coupon"}), await client.call("memories")

    search, memories = server_for(home).run(body)
    assert search.is_error and memories.is_error
    assert search.text.startswith(f"no Memoir archive at {home} yet; run `memoir sync`")
    assert not (home / "memoir.db").exists()
