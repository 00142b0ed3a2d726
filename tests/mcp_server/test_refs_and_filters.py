"""A reference reads as an exchange before it reads as a session id (one decision, shared
by `memoir show` and the ``read`` tool); an empty filter is a tool error, never dropped."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from memoir.errors import MemoirError, NotFound
from memoir.mcp.reading import exchange_parts, read_target

from .ambiguous_home import SQUATTER_TEXT, build_ambiguous_home
from .mcp_client import WEBSHOP, Client, Server

SESSIONS = {"many", "many:3", "solo:7", "abc123", "x:5"}
EXCHANGES = {"many:1", "many:3", "abc123:1", "x:5:1"}


def _resolve(ref: str) -> str:
    if ref in SESSIONS:
        return ref
    found = [s for s in SESSIONS if s.startswith(ref)]
    if len(found) == 1:
        return found[0]
    if found:
        raise MemoirError(f"session prefix {ref!r} matches {len(found)} sessions")
    raise NotFound(f"no session {ref!r}")


def _target(ref: str) -> tuple[str, str | None]:
    return read_target(
        ref,
        resolve=_resolve,
        is_session=SESSIONS.__contains__,
        is_exchange=EXCHANGES.__contains__,
        hint=" (hint)",
    )


@pytest.mark.parametrize(
    ("ref", "target"),
    [
        ("many", ("many", None)),
        ("many:3", ("many", "many:3")),  # the exchange, though "many:3" is a session too
        ("many:1", ("many", "many:1")),
        ("solo:7", ("solo:7", None)),  # no session "solo": the older id stays reachable
        ("abc", ("abc123", None)),
        ("abc:1", ("abc123", "abc123:1")),  # a prefix for the session part
        ("abc123:1", ("abc123", "abc123:1")),
        ("x:5", ("x:5", None)),  # session x:5 (no session "x")
        ("x:5:1", ("x:5", "x:5:1")),
        ("many:", ("many:3", None)),  # not exchange-shaped: a unique prefix
    ],
)
def test_read_target(ref: str, target: tuple[str, str | None]) -> None:
    assert _target(ref) == target


@pytest.mark.parametrize(
    ("ref", "error", "says"),
    [
        ("many:999", NotFound, "no exchange 'many:999': session many has no exchange :999 (hint)"),
        ("many:2", NotFound, "session many has no exchange :2"),
        ("nosuch:3", NotFound, "no session 'nosuch'"),
        ("nosuch", NotFound, "no session 'nosuch'"),
        ("m:1", MemoirError, "matches 2 sessions"),
    ],
)
def test_read_target_refuses(ref: str, error: type[Exception], says: str) -> None:
    with pytest.raises(error, match=None) as caught:
        _target(ref)
    assert says in str(caught.value)


@pytest.mark.parametrize(
    ("ref", "parts"),
    [
        ("s:12", ("s", "12")),
        ("a:b:3", ("a:b", "3")),
        ("s:", None),
        (":3", None),
        ("s:3a", None),
        ("s:²", None),  # str.isdigit takes it; an exchange number never is
        ("plain", None),
    ],
)
def test_exchange_parts(ref: str, parts: tuple[str, str] | None) -> None:
    assert exchange_parts(ref) == parts


def test_read_prefers_the_exchange_and_keeps_an_older_id_reachable(
    tmp_path: Path, server_for: Callable[..., Server]
) -> None:
    home = build_ambiguous_home(tmp_path / "home")

    async def body(client: Client) -> list[Any]:
        return [
            (await client.call("read", {"id": ref, "context": 0})).data
            for ref in ("many:3", "solo:7", "many")
        ]

    exchange, older, whole = server_for(home, MEMOIR_USER="alice").run(body)
    assert exchange["session"]["id"] == "many"
    assert exchange["range"]["exchange"] == "many:3"
    assert [e["text"] for e in exchange["events"]] == ["question number 1", "answer number 1"]
    assert SQUATTER_TEXT not in str(exchange)
    assert older["session"]["id"] == "solo:7" and "exchange" not in older["range"]
    assert whole["session"]["id"] == "many" and whole["range"] == {"first": 1, "last": 300}


EMPTY_FILTERS = [
    ("search", {"query": "coupon", "session": ""}, "session is empty: give a session id"),
    ("search", {"query": "coupon", "session": "   "}, "session is empty"),
    ("search", {"query": "coupon", "project": ""}, "project is empty: give a project's name"),
    ("search", {"query": "coupon", "after": " "}, "after is empty: give a date"),
    ("search", {"query": "coupon", "before": ""}, "before is empty: give a date"),
    ("search", {"query": "coupon", "harness": ""}, "harness must be one of claude-code"),
    ("search", {"query": "coupon", "role": ""}, "role must be one of user, assistant, tool"),
    ("memories", {"session": ""}, "session is empty"),
    ("memories", {"project": ""}, "project is empty"),
    ("memories", {"kind": ""}, "kind must be one of"),
    ("remember", {"session": ""}, "session is empty"),  # not "the current conversation"
]


def test_an_empty_filter_is_a_tool_error(
    demo_home: Path, server_for: Callable[..., Server]
) -> None:
    async def body(client: Client) -> list[Any]:
        replies = [await client.call(tool, arguments) for tool, arguments, _ in EMPTY_FILTERS]
        left_out = await client.call("search", {"query": "coupon", "mode": "text"})
        scoped = await client.call(
            "search", {"query": "coupon", "mode": "text", "session": WEBSHOP[:8]}
        )
        return [replies, left_out, scoped]

    replies, left_out, scoped = server_for(demo_home).run(body)
    for (tool, arguments, says), reply in zip(EMPTY_FILTERS, replies, strict=True):
        assert reply.is_error, (tool, arguments, reply.text)
        assert says in reply.text, (says, reply.text)
    assert left_out.data["hits"]  # left out, a filter still means "every session"
    assert {h["session_id"] for h in scoped.data["hits"]} == {WEBSHOP}
