"""The owner is in the query: the recent-sessions list pages, counts and facets one user's
sessions in SQL with a keyset cursor bound to its caller; searches (text and meaning) and
prefix lookups never see another user's rows (no adapter filters rows by user in Python:
test_no_filter_in_adapters.py)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from fastapi.testclient import TestClient

from memoir.model import RecentQuery
from memoir.model.event import named_session_id
from memoir.search.embedders import HashEmbedder
from memoir.server import create_app

from .conftest import A_STORED, B_SESSION, B_STORED, A, B, World


def _more_sessions(world: World, user: str, n: int, project: str) -> list[str]:
    """``n`` more sessions of ``user``'s: the ids they are stored under."""
    made = []
    for k in range(n):
        sid = f"{user}-extra-{k:02d}"
        world.memoir.append(
            sid, [{"role": "user", "content": f"note {k} of {user}"}], user=user, project=project
        )
        made.append(named_session_id(user, sid))
    return made


def test_keyset_pages_total_and_facets_are_the_callers(world: World) -> None:
    mine = [A_STORED, *_more_sessions(world, A, 7, "api-a")]
    _more_sessions(world, B, 5, "bob-only")
    sessions = world.memoir.store.sessions
    seen: list[str] = []
    key = None
    while True:
        page = sessions.listing(A, RecentQuery(), limit=3, after=key, counted=True)
        assert page.total == 8
        assert page.projects == ("api-a", "webshop") and page.harnesses == ("api",)
        seen += [i.session.id for i in page.sessions]
        key = page.last_key
        if not page.more:
            break
    assert sorted(seen) == sorted(mine) and len(seen) == len(set(seen))  # none twice, none lost
    assert seen == [i.session.id for i in sessions.recent(user=A)]  # in the listing's order
    only = sessions.listing(A, RecentQuery(project="api-a"), counted=True)
    assert only.total == 7 and {i.session.project for i in only.sessions} == {"api-a"}
    # a project of Bob's, named by Alice: nothing, and his project is in no facet of hers
    theirs = sessions.listing(A, RecentQuery(project="bob-only"), counted=True)
    assert theirs.total == 0 and theirs.sessions == () and "bob-only" not in theirs.projects
    later = datetime.now(UTC) + timedelta(days=1)
    assert sessions.listing(A, RecentQuery(since=later), counted=True).total == 0
    assert sessions.listing(A, RecentQuery(until=later), counted=True).total == 8


def test_a_cursor_is_bound_to_its_caller(world: World) -> None:
    _more_sessions(world, A, 4, "api-a")
    _more_sessions(world, B, 4, "api-b")
    alice = {"Authorization": f"Bearer {world.keys[A]}"}
    bob = {"Authorization": f"Bearer {world.keys[B]}"}
    with TestClient(create_app(world.memoir), raise_server_exceptions=False) as client:
        url = "/api/sessions?order=recent&limit=2"
        first = client.get(url, headers=alice).json()
        cursor = first["next_cursor"]
        assert cursor and first["data"]["total"] == 5
        assert A not in cursor and "alice" not in cursor  # opaque: no name in it
        second = client.get(f"{url}&cursor={cursor}", headers=alice).json()
        assert not {s["id"] for s in first["data"]["sessions"]} & {
            s["id"] for s in second["data"]["sessions"]
        }
        # another's cursor names no page of bob's: 404, as another's session is
        stolen = client.get(f"{url}&cursor={cursor}", headers=bob)
        assert stolen.status_code == 404
        assert stolen.json()["error"]["message"] == "cursor: not a cursor this API gave"
        forged = client.get(f"{url}&cursor=eyJvZmZzZXQiOjJ9", headers=alice)  # {"offset":2}
        assert forged.status_code == 404


def test_prefixes_and_searches_see_one_owner(world: World) -> None:
    sessions = world.memoir.store.sessions
    # a prefix of the stored id (as a hit's session_id[:8]) or of the name: the owner's
    for ref in (B_STORED[:8], "bob", B_SESSION, B_STORED):
        assert sessions.resolve(ref, user=B) == B_STORED
        assert [s.id for s in sessions.with_prefix(ref, user=A)] == []
        with pytest.raises(Exception, match=f"no session '{ref}'"):
            sessions.resolve(ref, user=A)
    alice = world.memoir.as_user(A)
    assert {h.session_id for h in alice.search("prefer", mode="text")} == {A_STORED}
    assert alice.search("quokka", mode="text") == []


@pytest.mark.parametrize("mode", ["vector", "hybrid"])
def test_meaning_search_masks_other_owners_before_scoring(world: World, mode: str) -> None:
    """Bob's exchange is the nearest to his words by meaning, and never among Alice's
    hits (the owner is a mask over the matrix, as project and session are)."""
    embedder = HashEmbedder()
    from memoir.search import embed_backlog

    embed_backlog(world.memoir.store, embedder)
    found = world.memoir.as_user(A).search(
        "quokka cluster deploy", mode=mode, embedder=embedder, summaries=None
    )
    assert {h.session_id for h in found} <= {A_STORED}
    theirs = world.memoir.as_user(B).search(
        "quokka cluster deploy", mode=mode, embedder=embedder, summaries=None
    )
    assert B_STORED in {h.session_id for h in theirs}
