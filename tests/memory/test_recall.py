"""Memory that gets used (issue 22), on both backends: duplicates merge (20 concurrent
writers end as one item), later statements supersede earlier ones (recall as of a past
time returns what held then), forgetting tombstones the evidence, recall ranks and
filters, the context block keeps its budget."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from conftest import fresh_pg_schema
from memoir.llm import OfflineModel, counter_for
from memoir.memory.decisions import Work
from memoir.memory.item_rows import MemoryItemRow, MemorySourceRow, PendingRow
from memoir.memory.item_store import memory_parts
from memoir.memory.keeping import export_lines, forget, import_lines
from memoir.memory.memories import Memories
from memoir.memory.recall import (
    CONTEXT_HEADER,
    KIND_ORDER,
    context_block,
    recall,
    standing_order,
)
from memoir.memory.runner import MemoryConfig, Runner, Task
from memoir.memory.values import Range, Trigger
from memoir.model import Author, Event, EventKind, Harness, Session, build_exchanges
from memoir.store import IngestBatch, Store
from memoir.store.values import ItemFilter

T0 = datetime(2026, 1, 5, 9, 0, tzinfo=UTC)
COUNTER = counter_for("cl100k_base")


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def opener(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Callable[[], Store]]:
    """Opens a new store on one database each call (as separate processes would)."""
    opened: list[Store] = []
    if request.param == "sqlite":
        from memoir.store.sqlite_store import SQLiteStore

        def open_sqlite() -> Store:
            opened.append(SQLiteStore(tmp_path / "memoir.db"))
            return opened[-1]

        yield open_sqlite
    else:
        from memoir.store.postgres_store import PostgresStore

        with fresh_pg_schema() as url:

            def open_pg() -> Store:
                opened.append(PostgresStore(url, max_connections=2))
                return opened[-1]

            yield open_pg
            for s in opened:
                s.close()
            return
    for s in opened:
        s.close()


def _memories(store: Store) -> Memories:
    parts = memory_parts(store)
    return Memories(
        parts, store.claims, Runner(parts, OfflineModel(), COUNTER, MemoryConfig()), wait_s=30
    )


def _say(
    store: Store, sid: str, texts: list[str], at: datetime = T0, project: str = "proj"
) -> list[int]:
    """Append user turns (each answered) to a session; their ordinals."""
    start = store.events.last_ordinal(sid) + 1
    events = []
    for n, text in enumerate(texts):
        o = start + 2 * n
        events.append(
            Event(sid, o, EventKind.USER_TEXT, Author.USER, text, at + timedelta(minutes=n))
        )
        events.append(
            Event(
                sid,
                o + 1,
                EventKind.ASSISTANT_TEXT,
                Author.ASSISTANT,
                "Noted.",
                at + timedelta(minutes=n),
            )
        )
    prior = store.events.of(sid)
    exchanges = [x for x in build_exchanges([*prior, *events]) if x.last_ordinal >= start]
    store.ingest.apply(
        IngestBatch(Session(sid, project, Harness.API), tuple(events), tuple(exchanges))
    )
    return [e.ordinal for e in events if e.kind is EventKind.USER_TEXT]


# -- merge -------------------------------------------------------------------------------
def test_the_same_fact_from_two_sessions_is_one_item_with_both_quotes(
    opener: Callable[[], Store],
) -> None:
    store = opener()
    memories = _memories(store)
    _say(store, "a", ["I prefer tabs over spaces."])
    _say(store, "b", ["I prefer tabs over spaces."], at=T0 + timedelta(days=3))
    memories.remember("a")
    outcome = memories.remember("b")
    (item,) = memory_parts(store).items.find()
    assert {(s.session_id, s.ordinal) for s in item.sources} == {("a", 1), ("b", 1)}
    assert item.first_observed_at == T0 and item.observed_at == T0 + timedelta(days=3)
    assert [i.id for i in outcome.items] == [item.id]  # b's remember answers with the merged item
    memories.close()


def test_twenty_concurrent_writers_of_one_fact_end_as_one_item(
    opener: Callable[[], Store],
) -> None:
    seed = opener()
    for n in range(20):
        _say(seed, f"w{n:02d}", ["I always write commit messages in English."])
    stores = [opener() for _ in range(20)]
    engines = [_memories(s) for s in stores]
    start = threading.Barrier(20)
    errors: list[BaseException] = []

    def write(n: int) -> None:
        try:
            start.wait()
            engines[n].remember(f"w{n:02d}")
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=write, args=(n,)) for n in range(20)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert errors == []
    items = memory_parts(seed).items.find(history=True)
    assert len(items) == 1
    assert sorted(s.session_id for s in items[0].sources) == [f"w{n:02d}" for n in range(20)]
    receipts = memory_parts(seed).memory.receipts()
    assert len(receipts) == 20 and {r.outcome for r in receipts} == {"remembered"}
    for e in engines:
        e.close()


# -- supersede ---------------------------------------------------------------------------
def test_a_chain_of_moves_supersedes_and_recall_as_of_returns_what_held_then(
    opener: Callable[[], Store],
) -> None:
    store = opener()
    memories = _memories(store)
    days = [T0, T0 + timedelta(days=30), T0 + timedelta(days=60)]
    for n, (city, at) in enumerate(zip(("Berlin", "Lisbon", "Porto"), days, strict=True)):
        verb = "live in" if n == 0 else "moved to"
        _say(store, f"s{n}", [f"I {verb} {city}."], at=at)
        memories.remember(f"s{n}")
    live = memory_parts(store).items.find()
    assert [i.content for i in live] == ["I moved to Porto."]
    chain = memory_parts(store).items.chain(live[0].id)
    assert [i.content for i in chain] == [
        "I live in Berlin.",
        "I moved to Lisbon.",
        "I moved to Porto.",
    ]
    assert chain[0].superseded_by == chain[1].id and chain[1].superseded_by == chain[2].id
    assert chain[0].valid_until == chain[1].valid_from == days[1]
    assert chain[2].valid_until is None

    def held(at: datetime) -> list[str]:
        hits = recall(memory_parts(store).items, "home", ItemFilter(as_of=at))  # a key they share
        return [h.item.content for h in hits]

    assert held(T0 + timedelta(days=10)) == ["I live in Berlin."]
    assert held(T0 + timedelta(days=45)) == ["I moved to Lisbon."]
    assert held(T0 + timedelta(days=90)) == ["I moved to Porto."]
    assert [h.item.content for h in recall(memory_parts(store).items, "home", ItemFilter())] == [
        "I moved to Porto."
    ]
    everything = recall(memory_parts(store).items, "home", ItemFilter(history=True))
    assert len(everything) == 3
    memories.close()


def test_a_tool_switch_supersedes_only_with_a_change_cue(opener: Callable[[], Store]) -> None:
    store = opener()
    memories = _memories(store)
    _say(store, "s1", ["We use npm for the frontend."])
    memories.remember("s1")
    _say(store, "s2", ["We use PostgreSQL for the billing data."], at=T0 + timedelta(days=1))
    memories.remember("s2")
    _say(store, "s3", ["We switched to pnpm last week."], at=T0 + timedelta(days=2))
    memories.remember("s3")
    live = sorted(i.content for i in memory_parts(store).items.find())
    assert live == ["We switched to pnpm last week.", "We use PostgreSQL for the billing data."]
    old = [i for i in memory_parts(store).items.find(history=True) if not i.live]
    assert [i.content for i in old] == ["We use npm for the frontend."]
    memories.close()


# -- forget --------------------------------------------------------------------------------
def test_forgotten_evidence_is_never_extracted_again(opener: Callable[[], Store]) -> None:
    store = opener()
    memories = _memories(store)
    (turn,) = _say(store, "s1", ["I prefer dark roast coffee."])
    memories.remember("s1")
    # a pending failure the session held: forgetting its memories clears it
    memory_parts(store).memory.fail(
        PendingRow("s1", "op-x", "extract", "a", 0, 2, 2, "h", "truncated", T0)
    )
    gone = forget(memory_parts(store).items, memory_parts(store).memory, session="s1")
    assert [i.content for i in gone] == ["I prefer dark roast coffee."]
    assert (
        memory_parts(store).items.find() == [] and memory_parts(store).memory.pending("s1") is None
    )
    assert memory_parts(store).items.tombstones() == 1
    # the same range extracted again (a retry of exactly it): nothing comes back
    runner = memories.runner
    work = Work("s1", Trigger.EXTRACT, "again", Range(0, 2, 2), requested_turn=turn)
    outcome = runner.run(Task(work))
    assert outcome.receipt is not None and outcome.receipt.items == 0
    assert memory_parts(store).items.find(history=True) == []
    memories.close()


def test_forget_by_query_and_project_and_export_import_round_trip(
    opener: Callable[[], Store], tmp_path: Path
) -> None:
    store = opener()
    memories = _memories(store)
    _say(store, "s1", ["I prefer tabs over spaces.", "I live in Berlin."], project="alpha")
    _say(store, "s2", ["We decided to use Rust for the parser."], project="beta")
    memories.remember("s1", 1)
    memories.remember("s1", 3)
    memories.remember("s2")
    lines = list(export_lines(memory_parts(store).items))
    assert len(lines) == 3
    gone = forget(memory_parts(store).items, memory_parts(store).memory, matching="tabs spaces")
    assert [i.content for i in gone] == ["I prefer tabs over spaces."]
    gone = forget(memory_parts(store).items, memory_parts(store).memory, project="beta")
    assert [i.content for i in gone] == ["We decided to use Rust for the parser."]
    assert [i.content for i in memory_parts(store).items.find()] == ["I live in Berlin."]
    exported = list(export_lines(memory_parts(store).items))
    assert sum('"tombstone"' in line for line in exported) == 2
    # a fresh home takes the first export whole; taking it again changes nothing
    from memoir.store.sqlite_store import SQLiteStore

    other = SQLiteStore(tmp_path / "other.db")
    first = import_lines(memory_parts(other).items, lines)
    again = import_lines(memory_parts(other).items, lines)
    assert (first.items, first.merged, again.items, again.already) == (3, 0, 0, 3)
    moved = import_lines(memory_parts(other).items, exported)  # its tombstones apply here too
    assert (moved.already, moved.tombstones, moved.forgot_here) == (1, 2, 2)
    assert len(memory_parts(other).items.find()) == 1
    assert [i.content for i in memory_parts(other).items.find()] == ["I live in Berlin."]
    with pytest.raises(Exception, match="line 1"):
        import_lines(memory_parts(other).items, ["{not json"])
    other.close()
    memories.close()


def test_recall_filters_by_kind_scope_and_project(opener: Callable[[], Store]) -> None:
    store = opener()
    memories = _memories(store)
    _say(
        store,
        "s1",
        ["I prefer tabs over spaces.", "Never push to main in this repo."],
        project="alpha",
    )
    _say(store, "s2", ["Never deploy on Fridays in this project."], project="beta")
    for sid, turn in (("s1", 1), ("s1", 3), ("s2", 1)):
        memories.remember(sid, turn)
    never = recall(memory_parts(store).items, "never", ItemFilter())
    assert len(never) == 2
    alpha = recall(memory_parts(store).items, "never", ItemFilter(projects=("alpha",)))
    assert [h.item.content for h in alpha] == ["Never push to main in this repo."]
    prefs = recall(memory_parts(store).items, "tabs never", ItemFilter(kinds=("preference",)))
    assert [h.item.kind for h in prefs] == ["preference"]
    glob = recall(memory_parts(store).items, "tabs never", ItemFilter(scope="global"))
    assert [h.item.content for h in glob] == ["I prefer tabs over spaces."]
    assert recall(memory_parts(store).items, "zebra", ItemFilter()) == []
    hostile = recall(
        memory_parts(store).items, "tabs'); DROP TABLE memory_items; -- NEAR( spa*", ItemFilter()
    )
    assert [h.item.content for h in hostile] == ["I prefer tabs over spaces."]
    assert len(memory_parts(store).items.find()) == 3
    memories.close()


# -- the context block --------------------------------------------------------------------
def _row(n: int, kind: str, words: int, sources: int) -> MemoryItemRow:
    content = " ".join(f"word{n}x{k}" for k in range(words))
    return MemoryItemRow(
        id=f"{n:016x}",
        session_id="s",
        project="p",
        scope="global",
        kind=kind,
        content=content,
        normalized=content,
        keys=("k",),
        operation_id="op",
        created_at=T0 + timedelta(minutes=n),
        sources=tuple(MemorySourceRow("s", i, "quote") for i in range(sources)),
    )


@settings(max_examples=60, deadline=None)
@given(
    st.lists(
        st.tuples(
            st.sampled_from(["fact", "preference", "decision", "plan", "constraint"]),
            st.integers(1, 60),
            st.integers(1, 4),
        ),
        max_size=40,
    ),
    st.integers(0, 1200),
)
def test_the_context_block_never_exceeds_its_budget(
    specs: list[tuple[str, int, int]], budget: int
) -> None:
    rows = [_row(n, kind, words, src) for n, (kind, words, src) in enumerate(specs)]
    ordered = standing_order(rows)
    block = context_block(ordered, budget, COUNTER)
    assert block.tokens == (COUNTER.count(block.text) if block.text else 0)
    assert block.tokens <= budget
    assert len(block.items) + block.left_out == len(rows)
    positions = [next(n for n, r in enumerate(ordered) if r.id == i) for i in block.items]
    assert positions == sorted(positions)  # the standing order kept
    if block.text:
        assert block.text.startswith(CONTEXT_HEADER)
    assert (
        standing_order(list(reversed(rows))) == ordered
    )  # the order does not depend on input order


def test_context_block_puts_constraints_first_and_is_empty_when_nothing_fits() -> None:
    rows = [_row(1, "fact", 3, 1), _row(2, "constraint", 3, 1), _row(3, "preference", 3, 5)]
    block = context_block(standing_order(rows), 1000, COUNTER)
    kinds = [line.split("]")[0] for line in block.text.splitlines()[1:]]
    assert kinds == ["- [constraint", "- [preference", "- [fact"]
    assert context_block(rows, 5, COUNTER).text == ""


# -- near-duplicates ----------------------------------------------------------------------
@pytest.mark.parametrize(
    ("a", "b", "same"),
    [
        ("I prefer tabs over spaces.", "I prefer tabs to spaces.", True),
        ("I prefer tabs over spaces.", "I prefer spaces over tabs.", False),  # order
        ("We deploy on Fridays.", "We never deploy on Fridays.", False),  # negation
        ("We use PostgreSQL for billing.", "We use Postgres for the billing service.", True),
        ("I live in Berlin.", "I own a cat.", False),  # nothing shared
    ],
)
def test_same_claim_guards(a: str, b: str, same: bool) -> None:
    from memoir.memory.decisions import same_claim

    assert same_claim(a, b) is same


def test_near_duplicates_merge_with_an_embedder_and_reversed_claims_do_not(
    opener: Callable[[], Store],
) -> None:
    from memoir.search.embedders import load_embedder

    embedder = load_embedder("auto")
    if embedder is None:
        pytest.skip("the embeddings extra is not installed")
    store = opener()
    parts = memory_parts(store)
    runner = Runner(parts, OfflineModel(), COUNTER, MemoryConfig(), embedder=lambda: embedder)
    memories = Memories(parts, store.claims, runner, wait_s=30)
    said = ["I prefer tabs over spaces.", "I prefer tabs to spaces.", "I prefer spaces over tabs."]
    for n, text in enumerate(said):
        _say(store, f"s{n}", [text], at=T0 + timedelta(days=n))
        memories.remember(f"s{n}")
    items = sorted(memory_parts(store).items.find(), key=lambda i: i.created_at)
    assert [i.content for i in items] == [
        "I prefer tabs over spaces.",
        "I prefer spaces over tabs.",
    ]
    assert [s.quote for s in items[0].sources] == said[:2]
    assert set(memory_parts(store).items.vectors(embedder.name, [i.id for i in items])) == {
        i.id for i in items
    }
    memories.close()


def test_the_stores_standing_order_is_the_pure_one(opener: Callable[[], Store]) -> None:
    store = opener()
    kinds = ["fact", "plan", "constraint", "preference", "decision", "constraint", "fact"]
    rows = [_row(n, kind, 3, 1 + n % 3) for n, kind in enumerate(kinds)]
    memory_parts(store).items.save(rows)
    got = memory_parts(store).items.select(ItemFilter(), standing=KIND_ORDER)
    assert [i.id for i in got] == [r.id for r in standing_order(rows)]
    assert [i.kind for i in got[:2]] == ["constraint", "constraint"]
