"""``memoir.service``, what the CLI and the MCP server call besides ``Memoir``, on both
backends: every read is the open Memoir's user's (another user's session, project or item
reads as none at all), and the API users' keys are made, rotated and revoked as the
``memoir users`` commands show them."""

from __future__ import annotations

import pytest

from memoir import service
from memoir.errors import NotFound

from .conftest import A_SESSION, A_STORED, B_SESSION, A, B, World


def test_sessions_and_projects_are_the_users_own(world: World) -> None:
    alice = world.memoir.as_user(A)
    assert service.session_id(alice, A_SESSION[:7]) == A_STORED  # a unique prefix of the name
    assert service.session_id(alice, A_STORED[:7]) == A_STORED  # or of the stored id
    with pytest.raises(NotFound):
        service.session_id(alice, B_SESSION)  # Bob's: as one that does not exist
    found = service.find_session(alice, A_SESSION)
    assert found is not None and found.project == "webshop"
    assert service.find_session(alice, B_SESSION) is None
    assert [s.id for s in service.recent_sessions(alice, 10)] == [A_STORED]
    assert [(name, count) for name, _, count in service.projects(alice)] == [("webshop", 1)]
    assert list(service.project_folders(alice)) == ["webshop"]
    assert service.project(alice, "webshop") == "webshop"
    with pytest.raises(NotFound):
        service.project(alice, "quokka-lab")


def test_a_session_is_read_by_its_exact_ids(world: World) -> None:
    alice = world.memoir.as_user(A)
    exchanges = service.exchanges_of(alice, A_STORED)
    assert [x.id for x in exchanges] == [f"{A_STORED}:1"]
    assert service.has_exchange(alice, f"{A_STORED}:1")
    assert not service.has_exchange(alice, f"{A_STORED}:2")
    assert list(service.exchanges_by_id(alice, [f"{A_STORED}:1", "nobody:1"])) == [f"{A_STORED}:1"]
    assert service.last_event(alice, A_STORED) == 2
    assert service.last_event(alice, "nobody-chat") == 0


def test_memory_items_are_the_users_own(world: World) -> None:
    alice = world.memoir.as_user(A)
    assert [i.id for i in service.memory_items(alice)] == [world.a_item]
    assert service.memory_item(alice, world.b_item) is None  # Bob's: as none at all
    item = service.memory_item(alice, world.a_item)
    assert item is not None and "tabs" in item.content
    assert list(service.memory_citations(alice, A_STORED).values()) == [[world.a_item]]
    assert {r.session_id for r in service.memory_receipts(alice)} == {A_STORED}
    assert service.memory_receipts(alice, B_SESSION) == []
    service.forget_item(alice, world.a_item)
    assert service.memory_item(alice, world.a_item) is None
    assert service.memory_item(world.memoir.as_user(B), world.b_item) is not None


def test_keys_are_made_rotated_and_revoked(world: World) -> None:
    memoir = world.memoir
    first = service.add_user(memoir, "carol", label="laptop")
    second = service.new_key(memoir, "carol")
    assert first != second
    assert {u.name: u.keys for u in service.users(memoir)}["carol"] == 2
    rotated = service.rotate_key(memoir, "carol")
    assert rotated not in (first, second)
    assert {u.name: u.keys for u in service.users(memoir)}["carol"] == 1
    assert service.revoke_keys(memoir, "carol") == 1
    assert {u.name: u.keys for u in service.users(memoir)}["carol"] == 0
    with pytest.raises(NotFound):
        service.new_key(memoir, "nobody")


@pytest.mark.parametrize(
    ("text", "words"),
    [("tabs", True), ("  tabs  spaces ", True), ("", False), ("   ", False), ("?!", False)],
)
def test_has_words(text: str, words: bool) -> None:
    assert service.has_words(text) is words


def test_the_database_file_is_known_before_opening(world: World) -> None:
    from memoir.config import Settings

    settings = Settings.from_env(world.env, sources=())
    path = service.database_file(settings)
    if world.backend == "sqlite":
        assert path == settings.sqlite_path and path.exists()
    else:
        assert path is None
    assert not service.read_only(world.memoir)
