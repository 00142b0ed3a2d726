"""Export/import, forget and item lookup on both backends: an import checks every field
of every line first and writes in one transaction; an imported end closes the copy here;
forget --matching is literal; an id prefix is literal, case-sensitive and owner-aware."""

from __future__ import annotations

import json
from typing import Any

import pytest

from memoir.errors import MemoirError, NotFound, UsageError
from memoir.llm import counter_for
from memoir.memory.item_rows import MemoryItemRow
from memoir.memory.item_store import memory_parts
from memoir.memory.keeping import forget, holds_all, import_lines, read_line
from memoir.memory.memories import turn_choices
from memoir.memory.recall import context_block, recall
from memoir.store import Store
from memoir.store.values import ItemFilter

BERLIN, LISBON = "b0000000000000b1", "1000000000000011"
SECRET = "AKIAIOSFODNN7EXAMPLE"  # the AWS documentation's example key


def line(item_id: str = BERLIN, content: str = "I live in Berlin.", **fields: Any) -> str:
    o: dict[str, Any] = {
        "memoir_memory": 1,
        "id": item_id,
        "owner": "local",
        "session_id": "s1",
        "project": "",
        "scope": "global",
        "kind": "fact",
        "content": content,
        "keys": ["city"],
        "created_at": "2026-01-05T09:00:00+00:00",
        "sources": [{"session_id": "s1", "ordinal": 1, "quote": content.rstrip(".")}],
    }
    o.update(fields)
    return json.dumps(o)


def stone(fingerprint: str = "ab" * 16) -> str:
    return json.dumps({"memoir_memory": 1, "tombstone": fingerprint, "owner": "local"})


BAD_LINES = [
    ('{"memoir_memory": 1, "kind"', "not JSON"),
    (line(kind="garbage"), "unknown kind"),
    (line(content=f"my key is {SECRET}"), "secret"),
    (line(keys="figs"), "keys must be a list"),
    (line(keys=[]), "no_keys"),
    (line(superseded_by=BERLIN), "superseded by itself"),
    (line(superseded_by="ffffffffffffffff"), "names no item"),
    (
        line(valid_from="2026-02-01T00:00:00+00:00", valid_until="2026-01-01T00:00:00+00:00"),
        "valid_until is before valid_from",
    ),
    (line(sources=[{"session_id": "s1", "ordinal": -1, "quote": "I live here"}]), "ordinal"),
    (line(sources=[{"session_id": "s1", "ordinal": 2**70, "quote": "I live here"}]), "ordinal"),
    (line(sources=[{"session_id": "s1", "ordinal": True, "quote": "I live here"}]), "ordinal"),
    (line(content="x" * 3000), "longer than 2000"),
    (line(content="I live in\x00Berlin."), "NUL"),
    (line(session_id="s\x001"), "NUL"),
    (line(sources=[]), "at least one quote"),
    (
        line(temporal={"type": "interval", "start": "2026-02-01", "end": "2026-01-01"}),
        "interval_start_after_end",
    ),
    (line(created_at="yesterday"), "not an ISO time"),
    (line(item_id="x" * 100), "not an item id"),
    (json.dumps({"memoir_memory": 1, "tombstone": 5}), "tombstone"),
]


@pytest.mark.parametrize(("bad", "why"), BAD_LINES)
def test_a_bad_line_is_refused_with_its_number_and_nothing_is_written(
    store: Store, bad: str, why: str
) -> None:
    items = memory_parts(store).items
    import_lines(items, [line(LISBON, "I live in Lisbon.")])
    before = (items.find(history=True), items.tombstone_rows())
    # tombstones first (they used to be committed before the bad line was met)
    here = items.find()[0].sources[0]
    from memoir.memory.item_rows import evidence_fingerprint

    forgets_lisbon = stone(evidence_fingerprint(here.session_id, here.ordinal, here.quote))
    with pytest.raises(MemoirError, match=why) as raised:
        import_lines(items, [forgets_lisbon, stone(), "", bad])
    assert str(raised.value).startswith("line 4:")
    assert (items.find(history=True), items.tombstone_rows()) == before


def test_read_line_takes_a_well_formed_export_line() -> None:
    got = read_line(line(keys=["City ", "city"]), None)
    assert isinstance(got, MemoryItemRow) and got.keys == ("city",)
    assert read_line("   ", None) is None
    assert read_line(stone(), "ann") == ("ann", "ab" * 16)


def test_an_import_closes_the_copy_of_an_item_it_brings_the_end_of(store: Store) -> None:
    items = memory_parts(store).items
    import_lines(items, [line()])  # this home knows Berlin
    moved = [
        line(superseded_by=LISBON, valid_until="2026-03-01T00:00:00+00:00"),
        line(
            LISBON,
            "I live in Lisbon.",
            created_at="2026-03-01T00:00:00+00:00",
            sources=[{"session_id": "s1", "ordinal": 5, "quote": "I live in Lisbon"}],
        ),
    ]
    import_lines(items, moved)
    assert [i.content for i in items.find()] == ["I live in Lisbon."]
    (old,) = [i for i in items.find(history=True) if i.id == BERLIN]
    assert old.superseded_by == LISBON and old.valid_until is not None


def test_an_import_closes_a_local_item_saying_the_same_under_another_id(store: Store) -> None:
    items = memory_parts(store).items
    import_lines(items, [line("ccccccccccccccc1")])
    import_lines(
        items,
        [
            line(superseded_by=LISBON, valid_until="2026-03-01T00:00:00+00:00"),
            line(
                LISBON,
                "I live in Lisbon.",
                sources=[{"session_id": "s1", "ordinal": 5, "quote": "I live in Lisbon"}],
            ),
        ],
    )
    assert [i.content for i in items.find()] == ["I live in Lisbon."]


def test_an_item_merged_before_is_already_here_on_every_repeat(store: Store) -> None:
    items = memory_parts(store).items
    import_lines(items, [line("ccccccccccccccc1")])
    other = line(sources=[{"session_id": "s2", "ordinal": 3, "quote": "I live in Berlin"}])
    first = import_lines(items, [other])
    again = import_lines(items, [other])
    assert (first.merged, first.already) == (1, 0)
    assert (again.merged, again.already) == (0, 1)
    same = import_lines(items, [line("dddddddddddddd11")])  # no quote it lacked
    assert (same.merged, same.already) == (0, 1)


def test_forget_matching_holds_every_word_literally(store: Store) -> None:
    items = memory_parts(store).items
    import_lines(
        items,
        [
            line("aaaa00000000000a", "I write Python daily.", keys=["python"]),
            line("aaaa00000000000b", "I prefer small commits.", keys=["commits"]),
        ],
    )
    assert forget(items, memory_parts(store).memory, matching="python OR commits") == []
    assert len(items.find()) == 2
    assert (
        forget(items, memory_parts(store).memory, matching='"') == []
    )  # no words: nothing matched
    assert len(items.find()) == 2
    gone = forget(items, memory_parts(store).memory, matching="PYTHON daily")
    assert [i.id for i in gone] == ["aaaa00000000000a"]


@pytest.mark.parametrize(
    ("words", "held"),
    [
        (("python",), True),
        (("python", "or", "commits"), False),
        (("tabs",), True),
        (("python", "tabs"), True),
        (("pyth",), False),
    ],
)
def test_holds_all(words: tuple[str, ...], held: bool) -> None:
    item = read_line(line(content="I write Python.", keys=["tabs"]), None)
    assert isinstance(item, MemoryItemRow)
    assert holds_all(item, words) is held


def test_an_id_prefix_is_literal_case_sensitive_and_owner_aware(store: Store) -> None:
    items = memory_parts(store).items
    import_lines(items, [line("abcd_e0000000001", "I like tea.", keys=["tea"])], "ann")
    import_lines(items, [line("abcdXe0000000002", "I like rum.", keys=["rum"])], "bob")
    assert items.get("abcd_e").id == "abcd_e0000000001"  # type: ignore[union-attr]
    assert items.get("abcd%") is None and items.get("%000") is None  # no wildcards
    assert items.get("ABCD_E") is None  # case-sensitive
    assert items.get("abc") is None  # fewer than 4 characters
    assert items.get("a" * 100_000) is None
    with pytest.raises(MemoirError, match=r"matches 2 items .*give more of the id"):
        items.get("abcd")
    assert items.get("abcd", owner="bob").id == "abcdXe0000000002"  # type: ignore[union-attr]
    assert items.get("abcd_e0000000001", owner="bob") is None
    with pytest.raises(NotFound):
        forget(items, memory_parts(store).memory, item="abcd_e", owner="bob")


def test_the_context_block_masks_a_secret_and_recall_bounds_its_limit(store: Store) -> None:
    items = memory_parts(store).items
    # an item stored with a secret (before imports were checked)
    row = read_line(line(content="I deploy to prod."), None)
    assert isinstance(row, MemoryItemRow)
    from dataclasses import replace

    items.save([replace(row, content=f"My key is {SECRET}.", normalized="my key")])
    block = context_block(items.find(), 800, counter_for("cl100k_base"))
    assert SECRET not in block.text and "redacted" in block.text
    with pytest.raises(UsageError):
        recall(items, "key", ItemFilter(), limit=10**20)
    assert items.find(limit=10**20) != []


@pytest.mark.parametrize(
    ("users", "said"),
    [
        ([3], "the only user message is event 3"),
        ([1, 3, 5], "user messages are events 1, 3, 5"),
        (list(range(1, 40, 2)), "20 user messages, events 1 (the first) to 39 (the latest)"),
    ],
)
def test_turn_choices(users: list[int], said: str) -> None:
    assert said in turn_choices(users)
    assert "…" not in turn_choices(users)


def test_remember_returns_the_receipt_another_process_settled_while_it_waited(
    store: Store,
) -> None:
    from .test_recall import _memories, _say

    memories = _memories(store)
    (turn,) = _say(store, "s1", ["I prefer tabs over spaces."])
    real = memories.lane.drain

    def drained_elsewhere(*args: Any, **kwargs: Any) -> dict[str, Any]:
        real(*args, **kwargs)  # the work settles ...
        return {}  # ... but by another process's lane: this one ran nothing

    memories.lane.drain = drained_elsewhere  # type: ignore[method-assign]
    out = memories.remember("s1", turn)
    assert out.waiting is None and out.receipt is not None
    assert out.receipt.outcome == "remembered" and len(out.items) == 1
    with pytest.raises(UsageError, match="the only user message is event 1"):
        memories.remember("s1", 2)
    memories.close()
