"""``memoir memories context`` and ``Memoir.context``: one user's items, each
statement once. Reproduces the report: two users' items in one home were mixed in one
block, and a statement kept in two projects' scopes was printed twice."""

from __future__ import annotations

import json

import pytest

from cli_run import run_cli
from memoir.memory.item_store import memory_parts

from .conftest import A, B, World

DECISION = "We decided to deploy on Fridays only."


def _say(world: World, user: str, sid: str, project: str, text: str) -> list[str]:
    world.memoir.append(sid, [{"role": "user", "content": text}], user=user, project=project)
    return [i.id for i in world.memoir.as_user(user).remember(sid).items]


@pytest.fixture
def crowded(world: World) -> World:
    # the same decision said in two of Alice's projects: two project-scoped items
    first = _say(world, A, "alice-deploy-1", "webshop", DECISION)
    second = _say(world, A, "alice-deploy-2", "api-a", DECISION)
    assert first and second and first != second
    # Bob says Alice's words too: his item, not hers
    assert _say(world, B, "bob-tabs", "quokka-lab", "I prefer tabs over spaces in the webshop.")
    return world


def test_the_block_holds_one_users_items_each_once(crowded: World) -> None:
    world = crowded
    alice = world.memoir.as_user(A).context(budget_tokens=2000)
    lines = alice.text.splitlines()[1:]
    assert len(lines) == 2, alice.text  # her preference, and her decision once
    assert sum(DECISION in line for line in lines) == 1
    assert world.a_item in alice.items
    owners = {memory_parts(world.memoir.store).items.get(i).owner for i in alice.items}  # type: ignore[union-attr]
    assert owners == {A}
    assert alice.left_out == 0  # a repeated statement is not "left out of the budget"
    assert world.memoir.context(budget_tokens=2000).text == ""  # local has none
    bob = world.memoir.as_user(B).context(budget_tokens=2000, query="tabs")
    assert set(bob.items) & set(alice.items) == set() and "tabs" in bob.text


def test_the_cli_prints_the_users_block(
    crowded: World, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    for key, value in crowded.env.items():
        monkeypatch.setenv(key, value)
    code, out, err = run_cli(["--user", A, "memories", "context", "--budget", "2000"], capsys)
    assert code == 0, err
    lines = out.splitlines()[1:]
    assert len(lines) == len(set(lines)) == 2
    assert "quokka" not in out and sum(DECISION in line for line in lines) == 1
    code, out, err = run_cli(["memories", "context", "--json"], capsys)
    assert code == 0 and json.loads(out)["items"] == []
