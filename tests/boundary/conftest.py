"""Two users in one home, on each backend: what every boundary test acts on.

Alice (A) and Bob (B) each have a session fed over the API and a memory remembered from
it; Bob's words hold "quokka", a word nothing of Alice's holds, so any answer to Alice
that mentions it has leaked. Built with the library, as a home is built by its users; the
surfaces under test (HTTP, MCP, CLI) then open the same home.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from memoir.app import Memoir
from memoir.config import Settings
from memoir.memory.item_store import memory_parts
from memoir.model.event import named_session_id

A, B = "alice", "bob"
A_SESSION, B_SESSION = "alice-chat", "bob-chat"  # each user's name for their session
# the ids they are stored under (what hits, exchange ids and quotes name)
A_STORED, B_STORED = named_session_id(A, A_SESSION), named_session_id(B, B_SESSION)
MISSING_SESSION = "nobody-chat"  # as long as the others: no length tells them apart
MISSING_ITEM = "0123456789abcdef0123456789abcdef"
LEAK = "quokka"  # in Bob's words only


@dataclass
class World:
    memoir: Memoir  # the home's Memoir (acting for local: it has nothing here)
    backend: str
    env: dict[str, str]  # what a subprocess needs to open this home
    a_item: str
    b_item: str
    keys: dict[str, str]  # each user's API key

    def snapshot(self, user: str) -> dict[str, Any]:
        """Everything ``user`` has, as plain values: a change of any of it shows."""
        view = self.memoir.as_user(user)
        store = self.memoir.store
        sessions = {i.session.id: i for i in store.sessions.recent(user=user)}
        return {
            "sessions": sessions,
            "events": {sid: store.events.of(sid) for sid in sessions},
            "items": memory_parts(store).items.find(owner=user, history=True),
            "export": list(view.memories.export()),
            "jobs": [j.to_json() for j in view.jobs().list(user=user)],
        }


def _say(memoir: Memoir, user: str, sid: str, project: str, text: str) -> str:
    memoir.append(
        sid,
        [
            {"role": "user", "content": text, "id": f"{sid}-1"},
            {"role": "assistant", "content": "Noted, I will keep that in mind.", "id": f"{sid}-2"},
        ],
        user=user,
        project=project,
    )
    outcome = memoir.as_user(user).remember(sid)
    assert outcome.items, outcome
    return outcome.items[0].id


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def world(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[World]:
    home = tmp_path / "home"
    env = {"MEMOIR_HOME": str(home), "MEMOIR_EMBEDDER": "none"}
    if request.param == "postgres":
        from conftest import migrated_pg_schema

        with migrated_pg_schema() as url:
            yield from _world(request.param, {**env, "MEMOIR_DATABASE_URL": url})
    else:
        yield from _world(request.param, env)


def _world(backend: str, env: dict[str, str]) -> Iterator[World]:
    settings = Settings.from_env(env, sources=())
    memoir = Memoir.open(settings)
    try:
        keys = {A: memoir.store.users.add(A), B: memoir.store.users.add(B)}
        a_item = _say(memoir, A, A_SESSION, "webshop", "I prefer tabs over spaces in the webshop.")
        b_item = _say(
            memoir, B, B_SESSION, "quokka-lab", "I prefer the quokka cluster for every deploy."
        )
        yield World(memoir, backend, env, a_item, b_item, keys)
    finally:
        memoir.close()
