"""``memoir.service``, what the CLI, the HTTP and the MCP server call besides ``Memoir``, on both
backends: every read is the open Memoir's user's (another user's session, project or item
reads as none at all), and the API users' keys are made, rotated and revoked as the
``memoir users`` commands show them."""

from __future__ import annotations

import pytest

from memoir import service
from memoir.errors import NotFound
from memoir.model import RecentQuery

from .conftest import A_SESSION, A_STORED, B_SESSION, B_STORED, A, B, World


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


# what the HTTP server calls ---------------------------------------------------------------
def test_session_lists_are_the_callers_own(world: World) -> None:
    alice, bob = world.memoir.as_user(A), world.memoir.as_user(B)
    assert [s.id for s in service.sessions_created(alice, RecentQuery())] == [A_STORED]
    assert [s.id for s in service.sessions_created(bob, RecentQuery())] == [B_STORED]
    assert service.sessions_created(alice, RecentQuery(project="quokka-lab")) == []
    first = service.sessions_created(alice, RecentQuery())[0]
    assert first.created_at is not None
    past = (first.created_at, first.id)  # a page after the last one: empty
    assert service.sessions_created(alice, RecentQuery(), after=past) == []
    page = service.session_listing(alice, RecentQuery(), limit=10)
    assert [(i.session.id, i.exchanges, i.events) for i in page.sessions] == [(A_STORED, 1, 2)]
    assert (page.total, page.projects, page.more) == (1, ("webshop",), False)
    assert page.last_key == (page.sessions[0].last_at, A_STORED)
    later = service.session_listing(alice, RecentQuery(), limit=10, after=page.last_key)
    assert (later.sessions, later.total) == ((), 1)  # the total counts every page
    theirs = service.session_listing(alice, RecentQuery(project="quokka-lab"), limit=10)
    assert (theirs.sessions, theirs.total) == ((), 0)  # Bob's project: nothing of Alice's


@pytest.mark.parametrize(
    ("after", "limit", "ordinals", "more"),
    [
        (0, 1, [1], True),
        (0, 2, [1, 2], False),
        (0, 100, [1, 2], False),
        (1, 1, [2], False),
        (2, 5, [], False),
        (10**15, 5, [], False),  # far past the last: empty, nothing read
    ],
)
def test_a_page_of_events(
    world: World, after: int, limit: int, ordinals: list[int], more: bool
) -> None:
    page, more_follow = service.events_page(world.memoir, A_STORED, after=after, limit=limit)
    assert ([e.ordinal for e in page], more_follow) == (ordinals, more)


def test_a_page_of_exchanges_and_every_event(world: World) -> None:
    memoir = world.memoir
    page, more = service.exchanges_page(memoir, A_STORED, after=0, limit=1)
    assert ([x.id for x in page], more) == ([f"{A_STORED}:1"], False)
    assert service.exchanges_page(memoir, A_STORED, after=1, limit=1) == ([], False)
    events = service.events_of(memoir, A_STORED)
    assert [(e.ordinal, e.text[:8]) for e in events] == [(1, "I prefer"), (2, "Noted, I")]
    assert service.events_of(memoir, "nobody-chat") == []


def test_a_key_names_its_user_by_its_hash(world: World) -> None:
    memoir = world.memoir
    alices = service.key_hash(world.keys[A])
    assert alices != world.keys[A] and alices == service.key_hash(world.keys[A])
    assert service.user_for_key_hash(memoir, alices) == A
    assert service.user_for_key_hash(memoir, service.key_hash(world.keys[B])) == B
    assert service.user_for_key_hash(memoir, service.key_hash("mk_never_made")) is None
    assert service.schema_version(memoir) > 20


def test_a_summary_poll_is_the_callers_own(world: World) -> None:
    memoir = world.memoir
    alices, bobs = service.key_hash(world.keys[A]), service.key_hash(world.keys[B])
    found = service.session_summary(memoir, A_SESSION, key_hash=alices)  # by its name
    assert found is not None
    assert (found.user, found.session.id, found.job) == (A, A_STORED, None)
    assert (found.state.has_body, found.updated_at, found.unit, found.current) == (
        False,
        None,
        "events",
        0,
    )
    assert service.session_summary(memoir, A_STORED, user=A) == found  # by its id, as user
    assert service.session_summary(memoir, A_SESSION, key_hash=bobs) is None  # not Bob's
    assert service.session_summary(memoir, A_SESSION, user=B) is None
    assert service.session_summary(memoir, A_SESSION) is None  # nobody asked
    assert service.session_summary(memoir, "nobody-chat", key_hash=alices) is None
