"""``Memoir``'s front door: exactly the verbs a user calls, each documented with an example,
and results that are public values (exported from ``memoir``), never the store's rows."""

from __future__ import annotations

import dataclasses
import inspect
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import memoir
from memoir.aio import AsyncMemoir, AsyncMemoryItems
from memoir.app import Memoir, MemoryItems
from memoir.config import Settings
from memoir.store.port import Store

# the front door: grow it only on purpose (what the server, the worker, the MCP server and
# the CLI need beyond it is a function of memoir.service)
VERBS = {
    "open",
    "at",
    "as_user",
    "close",
    "sync",
    "search",
    "session",
    "events",
    "exchanges",
    "append",
    "summarize",
    "compactor",
    "remember",
    "recall",
    "context",
    "forget",
    "memories",
    "jobs",
}
MEMORIES = {"list", "history", "export", "import_lines"}
# the values the verbs above return, each exported from ``memoir``
RESULTS = {
    "Appended",
    "CompactionResult",
    "ContextBlock",
    "Event",
    "Exchange",
    "ImportReport",
    "Job",
    "Memory",
    "MemoryReceipt",
    "MemorySource",
    "RecallHit",
    "Remembered",
    "SearchHit",
    "Session",
    "SessionRun",
    "SyncReport",
}
# what the store keeps to find an item, never shown past the front door
STORE_INTERNALS = {"normalized", "key_sig", "scope_key", "owner", "supersedes", "merge_into"}


def _public(cls: type) -> set[str]:
    return {name for name in vars(cls) if not name.startswith("_")}


def test_memoir_s_public_surface_is_exactly_the_verbs() -> None:
    assert _public(Memoir) == VERBS
    assert _public(MemoryItems) == MEMORIES
    assert len(VERBS) <= 20


def test_async_memoir_mirrors_the_front_door() -> None:
    # the async door adds only its own plumbing (the sync Memoir, a call, the async close)
    plumbing = {"memoir", "settings", "user", "call", "aclose", "closed"}
    assert _public(AsyncMemoir) == (VERBS - {"close"}) | plumbing
    assert _public(AsyncMemoryItems) == MEMORIES


@pytest.mark.parametrize(
    ("owner", "name"),
    [(Memoir, n) for n in sorted(VERBS)] + [(MemoryItems, n) for n in sorted(MEMORIES)],
)
def test_each_verb_has_a_docstring_with_an_example(owner: type, name: str) -> None:
    attribute = inspect.getattr_static(owner, name)
    function = attribute.fget if isinstance(attribute, property) else attribute
    doc = inspect.getdoc(function) or ""
    summary, _, example = doc.partition("Example::")
    assert summary.strip(), f"{name} has no docstring"
    code = [line for line in example.splitlines() if line.strip()]
    assert code and all(line.startswith("    ") for line in code), f"{name} shows no example"


def test_the_result_values_are_exported_and_frozen() -> None:
    assert set(memoir.__all__) >= RESULTS
    for name in RESULTS - {"SyncReport"}:  # a sync's report is filled in as it runs
        value = getattr(memoir, name)
        assert dataclasses.is_dataclass(value), name
        assert value.__dataclass_params__.frozen, name  # type: ignore[attr-defined]
    fields = {f.name for f in dataclasses.fields(memoir.Memory)}
    assert not fields & STORE_INTERNALS and "sources" in fields


@pytest.fixture
def home_memoir(home: Path, store: Store) -> Iterator[Memoir]:
    settings = Settings.from_env({"MEMOIR_HOME": str(home), "MEMOIR_EMBEDDER": "hash"}, sources=())
    m = Memoir(settings, store)
    chat: list[dict[str, Any]] = [
        {"id": "u1", "role": "user", "content": "Remember that we deploy on Fridays."},
        {"id": "a1", "role": "assistant", "content": "Noted: Fridays."},
    ]
    appended = m.append("chat-1", chat, project="ops")
    assert type(appended) is memoir.Appended and (appended.added, appended.skipped) == (2, 0)
    yield m
    m.close()


def test_memory_verbs_return_public_values_with_their_quotes(home_memoir: Memoir) -> None:
    m = home_memoir
    kept = m.remember("chat-1")
    assert type(kept) is memoir.Remembered and type(kept.receipt) is memoir.MemoryReceipt
    assert kept.receipt.outcome == "remembered" and kept.items
    item = kept.items[0]
    assert type(item) is memoir.Memory and "Fridays" in item.content
    assert [type(s) for s in item.sources] == [memoir.MemorySource]
    assert "Fridays" in item.sources[0].quote and item.sources[0].ordinal == 1
    hits = m.recall("when do we deploy")
    assert [type(h) for h in hits] == [memoir.RecallHit] and hits[0].item == item
    assert m.memories.list() == [item] and m.memories.history(item.id) == [item]
    gone = m.forget(item=item.id)
    assert [g.id for g in gone] == [item.id] and type(gone[0]) is memoir.Memory
    assert m.memories.list() == [] and m.recall("deploy") == []
