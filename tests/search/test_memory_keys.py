"""Memories as search keys: an exchange that is evidence for a memory item is found through
the item's words, even when its own text holds none of them; only through the caller's
items, and only when the memory items are handed to the search (``Memoir.search`` does)."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import pytest

from memoir import Memoir
from memoir.memory.item_rows import MemoryItemRow, MemorySourceRow
from memoir.memory.item_store import memory_parts
from memoir.search.engine import search

SAID = "I moved the builds to the new runner."


def _item(m: Memoir, owner: str, item_id: str = "i1") -> MemoryItemRow:
    content = "Deployment cadence is weekly."
    sid = _stored_id(m)
    return MemoryItemRow(
        id=item_id,
        session_id=sid,
        project="p",
        scope="global",
        kind="fact",
        content=content,
        normalized=content.casefold(),
        keys=("deployment", "cadence"),
        operation_id=f"op-{item_id}",
        created_at=datetime(2026, 1, 1, tzinfo=UTC),
        sources=(MemorySourceRow(sid, 1, SAID),),
        owner=owner,
    )


def _stored_id(m: Memoir) -> str:
    """The id the session named "s1" is stored under (a library session's name is its
    user's name for it)."""
    return m.store.sessions.resolve("s1", user=m.user)


@pytest.fixture
def m(tmp_path: Path) -> Iterator[Memoir]:
    with Memoir.at(tmp_path / "home", embedder="hash") as memoir:
        memoir.append(
            "s1",
            [
                {"id": "u1", "role": "user", "content": SAID},
                {"id": "a1", "role": "assistant", "content": "Done, the runner is live."},
            ],
            project="p",
        )
        memoir.append(
            "s2",
            [
                {"id": "u2", "role": "user", "content": "What is the capital of Peru?"},
                {"id": "a2", "role": "assistant", "content": "Lima."},
            ],
            project="p",
        )
        yield memoir


@pytest.mark.parametrize("mode", ["text", "hybrid"])
def test_an_exchange_is_found_through_the_item_it_is_evidence_for(m: Memoir, mode: str) -> None:
    memory_parts(m.store).items.save([_item(m, m.user)])
    hits = m.search("deployment cadence", mode=mode)
    assert hits[0].exchange_id == f"{_stored_id(m)}:1"  # the first, and in text the only one
    assert len(hits) == 1 or mode == "hybrid"


def test_without_the_items_nothing_holds_those_words(m: Memoir) -> None:
    memory_parts(m.store).items.save([_item(m, m.user)])
    assert search(m.store, "deployment cadence", mode="text") == []
    found = search(m.store, "deployment cadence", mode="text", items=memory_parts(m.store).items)
    assert [h.exchange_id for h in found] == [f"{_stored_id(m)}:1"]


def test_another_users_item_finds_nothing(m: Memoir) -> None:
    memory_parts(m.store).items.save([_item(m, "someone-else")])
    assert m.search("deployment cadence", mode="text") == []
