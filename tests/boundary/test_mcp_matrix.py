"""Every MCP tool, enumerated from the server's own tool list, called by an agent whose
server was started for Alice (``memoir mcp --user alice``) through the official SDK
client: on her objects it works; on Bob's and on ones that do not exist the tool error is
the same, the echoed id aside; lists and searches name nothing of Bob's; nothing of
Bob's changes. A tool the table does not classify fails the test."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from mcp_server.mcp_client import Client, Server, base_env
from memoir.memory.item_store import memory_parts

from .conftest import A_SESSION, A_STORED, B_SESSION, B_STORED, LEAK, A, B, World
from .matrix import dumps, no_leak, refs, same_refusal

# tool → the calls made of it: (kind, arguments with "{ref}" for the reference); kinds as
# in the HTTP matrix ("wide": the caller's own lists and searches, no reference)
TOOLS: dict[str, list[tuple[str, dict[str, Any]]]] = {
    "search": [
        ("wide", {"query": "prefer cluster tabs"}),
        ("session", {"query": "prefer", "session": "{ref}"}),
        ("project", {"query": "prefer", "project": "{ref}"}),
    ],
    "read": [("session", {"id": "{ref}"}), ("session", {"id": "{ref}:1"})],
    "summary": [("session", {"session": "{ref}"})],
    "memories": [
        ("wide", {}),
        ("wide", {"query": "prefer cluster"}),
        ("session", {"session": "{ref}"}),
        ("project", {"project": "{ref}"}),
    ],
    "remember": [("session", {"session": "{ref}"})],
    "forget": [("item", {"id": "{ref}"})],  # last: it forgets Alice's item
}


def _server(world: World, tmp_path: Path, *args: str, **env: str) -> Server:
    (tmp_path / "user-home").mkdir(exist_ok=True)
    return Server(
        base_env(tmp_path / "user-home", **world.env, **env),
        tmp_path / "server.log",
        args=("mcp", *args),
    )


def _fill(arguments: dict[str, Any], ref: str) -> dict[str, Any]:
    return {k: v.replace("{ref}", ref) if isinstance(v, str) else v for k, v in arguments.items()}


async def _call(client: Client, name: str, arguments: dict[str, Any]) -> tuple[bool, str]:
    reply = await client.call(name, arguments)
    return reply.is_error, reply.text


def test_every_tool_as_alice(world: World, tmp_path: Path) -> None:
    bob_before = world.snapshot(B)

    async def body(client: Client) -> None:
        listed = (await client.session.list_tools()).tools
        names = {t.name for t in listed}
        assert names == set(TOOLS), "tools the matrix does not classify (or no longer has)"
        for tool in listed:  # the user is the server's: no tool takes one
            named = {n.lower() for n in tool.inputSchema["properties"]}
            assert not {n for n in named if "user" in n or "owner" in n}, tool.name
        for name, calls in TOOLS.items():
            for kind, arguments in calls:
                if kind == "wide":
                    failed, text = await _call(client, name, arguments)
                    assert not failed, (name, text)
                    no_leak(world, text)
                    continue
                r = refs(world, kind)
                other = await _call(client, name, _fill(arguments, r.other))
                missing = await _call(client, name, _fill(arguments, r.missing))
                assert other[0], (name, arguments, other)  # a tool error
                same_refusal(other, missing, r)
                no_leak(world, other[1].replace(r.other, ""))
                failed, text = await _call(client, name, _fill(arguments, r.own))
                assert not failed, (name, arguments, text)
                no_leak(world, text)

    _server(world, tmp_path, "--user", A).run(body)
    assert dumps(world.snapshot(B)) == dumps(bob_before), "something of Bob's changed"
    # and Alice's own forget did forget her item
    assert memory_parts(world.memoir.store).items.get(world.a_item, owner=A) is None


def test_alice_cannot_read_list_or_forget_bobs(world: World, tmp_path: Path) -> None:
    """The issue's report, replayed: the agent for Alice reads her session, not Bob's;
    lists her memories, not Bob's; cannot forget Bob's item, which stays as it was."""
    bob_item = memory_parts(world.memoir.store).items.get(world.b_item, owner=B)
    assert bob_item is not None

    async def body(client: Client) -> dict[str, Any]:
        return {
            "own": (await client.call("read", {"id": A_SESSION})).data,
            "bob": await _call(client, "read", {"id": B_SESSION}),
            "memories": (await client.call("memories", {"limit": 100})).data,
            "forget": await _call(client, "forget", {"id": world.b_item}),
            "search": (await client.call("search", {"query": "quokka"})).data,
        }

    got = _server(world, tmp_path, "--user", A).run(body)
    assert (got["own"]["session"]["id"], got["own"]["session"]["name"]) == (A_STORED, A_SESSION)
    assert "tabs over spaces" in json.dumps(got["own"]["events"])
    assert got["bob"] == (
        True,
        f"no session {B_SESSION!r} in this Memoir home (run `memoir sync`?)",
    )
    assert [i["id"] for i in got["memories"]["items"]] == [world.a_item]
    assert got["forget"][0] and got["forget"][1].startswith(f"no memory item {world.b_item!r}")
    assert got["search"]["hits"] == []
    assert memory_parts(world.memoir.store).items.get(world.b_item, owner=B) == bob_item


def test_the_user_comes_from_the_option_the_environment_or_local(
    world: World, tmp_path: Path
) -> None:
    """``--user`` wins over MEMOIR_USER; with neither the server acts for local, who has
    nothing in this home."""

    async def sessions_seen(client: Client) -> list[str]:
        found = (await client.call("search", {"query": "prefer"})).data["hits"]
        return sorted({h["session_id"] for h in found})

    assert _server(world, tmp_path, "--user", B).run(sessions_seen) == [B_STORED]
    assert _server(world, tmp_path, MEMOIR_USER=B).run(sessions_seen) == [B_STORED]
    assert _server(world, tmp_path, "--user", A, MEMOIR_USER=B).run(sessions_seen) == [A_STORED]
    assert _server(world, tmp_path).run(sessions_seen) == []
    # the leak word is Bob's only: found by Bob's agent, by nobody else's
    assert LEAK in world.memoir.as_user(B).search(LEAK)[0].snippet
