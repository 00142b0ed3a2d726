"""The shared store suite, part 1: ingest, sessions, events, exchanges (both backends)."""

from __future__ import annotations

import dataclasses
import threading
from datetime import timedelta

import pytest
from store_builders import T0, batch, conversation, ingest, session, source

from memoir.errors import NotFound, StoreError
from memoir.model import Author, Event, EventKind, SessionFlags, build_exchanges
from memoir.store import IngestBatch, SearchFilters, SkippedLine, Store

TURNS = [
    ("How do I enable WAL in sqlite?", "Use PRAGMA journal_mode=WAL.", "Bash"),
    ("And the busy timeout?", "PRAGMA busy_timeout = 5000.", None),
]


def test_apply_ingest_round_trips_everything(store: Store) -> None:
    events = conversation("s1", TURNS)
    skipped = (SkippedLine("/src/proj/s1.jsonl", 7, 700, "malformed_json", "Expecting value"),)
    store.ingest.apply(batch(session("s1"), events, source=source(), skipped=skipped))

    assert store.sessions.get("s1") == session("s1")
    assert store.events.of("s1") == events
    assert store.exchanges.of("s1") == build_exchanges(events)
    assert store.events.last_ordinal("s1") == len(events)
    assert store.ingest.source("/src/proj/s1.jsonl") == source()
    assert store.ingest.sources() == {"/src/proj/s1.jsonl": source()}
    assert store.ingest.skipped() == list(skipped)
    assert store.ingest.skipped("/src/proj/s1.jsonl") == list(skipped)
    assert store.ingest.skipped("/elsewhere") == []


def test_reapplying_a_batch_is_idempotent(store: Store) -> None:
    b = batch(session("s1"), conversation("s1", TURNS), source=source())
    store.ingest.apply(b)
    before = store.stats()
    store.ingest.apply(b)
    assert store.stats() == before
    assert before["exchanges"] == 2 and before["index_rows"] == 2
    assert [h.exchange_id for h in store.index.search("wal", SearchFilters(), 10)] == ["s1:1"]


def test_grown_exchange_is_updated_never_duplicated(store: Store) -> None:
    first = conversation("s1", [("Explain the flux capacitor", None, None)])
    store.ingest.apply(batch(session("s1"), first))
    grown_tail = [
        Event(
            "s1",
            2,
            EventKind.ASSISTANT_TEXT,
            Author.ASSISTANT,
            "It needs plutonium.",
            timestamp=T0 + timedelta(minutes=1),
        ),
    ]
    exchanges = tuple(build_exchanges(first + grown_tail))
    store.ingest.apply(
        IngestBatch(session=session("s1"), events=tuple(grown_tail), exchanges=exchanges)
    )

    assert [x.id for x in store.exchanges.of("s1")] == ["s1:1"]
    assert store.exchanges.get("s1:1") == exchanges[0]
    assert store.exchanges.get("s1:1").assistant_text == "It needs plutonium."  # type: ignore[union-attr]
    assert store.stats()["index_rows"] == 1
    hits = store.index.search("plutonium", SearchFilters(), 10)
    assert [h.exchange_id for h in hits] == ["s1:1"]
    assert store.integrity_problems() == []


def test_reset_reindexes_a_rewritten_transcript_cleanly(store: Store) -> None:
    skipped = (SkippedLine("/src/proj/s1.jsonl", 3, 30, "invalid_utf8"),)
    store.ingest.apply(
        batch(session("s1"), conversation("s1", TURNS), source=source(), skipped=skipped)
    )
    rewritten = conversation(
        "s1", [("A completely different question about kubernetes", "Pods.", None)]
    )
    store.ingest.apply(batch(session("s1"), rewritten, source=source(offset=50), reset=True))

    assert store.events.of("s1") == rewritten
    assert [x.user_text for x in store.exchanges.of("s1")] == [rewritten[0].text]
    assert store.index.search("wal", SearchFilters(), 10) == []
    assert [h.exchange_id for h in store.index.search("kubernetes", SearchFilters(), 10)] == [
        "s1:1"
    ]
    assert store.ingest.skipped() == []
    assert store.ingest.source("/src/proj/s1.jsonl").offset == 50  # type: ignore[union-attr]
    assert store.integrity_problems() == []


def test_a_failing_batch_writes_nothing(store: Store) -> None:
    bad = dataclasses.replace(source(), size=None)  # NOT NULL violation, written last
    with pytest.raises(StoreError):
        store.ingest.apply(batch(session("s1"), conversation("s1", TURNS), source=bad))
    assert store.sessions.get("s1") is None
    assert store.stats()["events"] == 0
    assert store.stats()["index_rows"] == 0


def test_batch_with_rows_of_another_session_is_refused(store: Store) -> None:
    with pytest.raises(StoreError, match="other"):
        store.ingest.apply(batch(session("s1"), conversation("other", TURNS)))
    assert store.sessions.get("s1") is None


def test_events_range_and_last_ordinal(store: Store) -> None:
    events = conversation("s1", TURNS)
    store.ingest.apply(batch(session("s1"), events))
    assert [e.ordinal for e in store.events.of("s1", after=2)] == [3, 4, 5, 6]
    assert [e.ordinal for e in store.events.of("s1", after=1, upto=3)] == [2, 3]
    assert store.events.of("nope") == []
    assert store.events.last_ordinal("nope") == 0
    assert store.events.of("s1")[1].payload == {"input": {"cmd": "ls"}}


def test_nul_and_unencodable_text_never_lose_a_batch(store: Store) -> None:
    events = [
        Event(
            "s1",
            1,
            EventKind.USER_TEXT,
            Author.USER,
            "nul\x00here",
            timestamp=T0,
            payload={"raw": "a\x00b"},
        ),
        Event("s1", 2, EventKind.ASSISTANT_TEXT, Author.ASSISTANT, "bad \udcff byte"),
    ]
    store.ingest.apply(batch(session("s1"), events))
    stored = store.events.of("s1")
    assert stored[0].text == "nul\ufffdhere"
    assert stored[0].payload == {"raw": "a\x00b"}
    assert stored[1].text == "bad ? byte"
    assert store.exchanges.get("s1:1").assistant_text == "bad ? byte"  # type: ignore[union-attr]


def test_ingest_merges_flags_and_times_but_set_flags_replaces(store: Store) -> None:
    store.ingest.apply(batch(session("s1", subagent=True), conversation("s1", TURNS)))
    later = dataclasses.replace(
        session("s1"), updated_at=T0 + timedelta(days=1), created_at=T0 + timedelta(hours=1)
    )
    store.ingest.apply(batch(later, []))
    got = store.sessions.get("s1")
    assert got is not None and got.flags.subagent  # a reader's flag is never cleared
    assert got.created_at == T0 and got.updated_at == T0 + timedelta(days=1)

    store.sessions.set_flags("s1", SessionFlags(archived=True))
    got = store.sessions.get("s1")
    assert got is not None and got.flags == SessionFlags(archived=True)
    with pytest.raises(NotFound):
        store.sessions.set_flags("nope", SessionFlags())


def test_list_sessions_counts_orders_and_filters(store: Store) -> None:
    ingest(store, "old", TURNS, start=T0)
    ingest(store, "new", TURNS[:1], start=T0 + timedelta(days=2), project="other")
    infos = store.sessions.recent()
    assert [i.session.id for i in infos] == ["new", "old"]
    old = infos[1]
    assert (old.exchanges, old.events) == (2, 6)
    assert old.first_at == T0
    assert old.last_at == T0 + timedelta(minutes=1, seconds=30)
    assert [i.session.id for i in store.sessions.recent(project="other")] == ["new"]
    assert [i.session.id for i in store.sessions.recent(limit=1)] == ["new"]


def test_get_exchanges_many_and_missing(store: Store) -> None:
    ingest(store, "s1", TURNS)
    got = store.exchanges.many(["s1:1", "s1:5", "missing", "s1:1"])
    assert sorted(got) == ["s1:1", "s1:5"]
    assert store.exchanges.get("missing") is None
    assert store.exchanges.many([]) == {}


def test_delete_session_removes_everything_derived(store: Store) -> None:
    ingest(store, "s1", TURNS)
    ingest(store, "s2", [("keep this wal note", None, None)])
    store.ingest.apply(
        batch(
            session("s1"),
            [],
            source=source(),
            skipped=(SkippedLine("/src/proj/s1.jsonl", 9, 9, "binary"),),
        )
    )
    store.embeddings.put("m", [("s1:1", b"\x00" * 8)], 2, [b"\x02\x00\x7f\x00"])
    assert store.embeddings.token_states("m", ["s1:1"]) == {"s1:1": b"\x02\x00\x7f\x00"}
    with pytest.raises(StoreError, match="2 token-state blobs for 1 vectors"):
        store.embeddings.put("m", [("s1:1", b"\x00" * 8)], 2, [None, None])
    store.sessions.delete("s1")

    assert store.sessions.get("s1") is None
    assert store.events.of("s1") == [] and store.exchanges.of("s1") == []
    assert store.ingest.sources() == {} and store.ingest.skipped() == []
    assert store.embeddings.load("m") == ([], b"", 0)
    assert store.embeddings.token_states("m", ["s1:1"]) == {}  # the tokens went with the vector
    assert [h.exchange_id for h in store.index.search("wal", SearchFilters(), 10)] == ["s2:1"]
    assert store.integrity_problems() == []
    with pytest.raises(NotFound):
        store.sessions.delete("s1")


def test_concurrent_writers_and_readers(store: Store) -> None:
    errors: list[BaseException] = []

    def work(n: int) -> None:
        try:
            for k in range(5):
                ingest(store, f"t{n}-{k}", [(f"thread {n} round {k} zebra", "ok", None)])
                store.index.search("zebra", SearchFilters(), 5)
        except BaseException as exc:  # pragma: no cover - reported below
            errors.append(exc)

    threads = [threading.Thread(target=work, args=(n,)) for n in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    assert store.stats()["sessions"] == 20
    assert len(store.index.search("zebra", SearchFilters(), 50)) == 20


def test_a_batch_read_before_another_process_indexed_the_file_is_refused(store: Store) -> None:
    """Two replicas sharing the database read the same grown transcript from the same
    offset: the second to write must not append the same events again."""
    from memoir.errors import ConcurrentWrite

    first = conversation("s1", [("Explain the flux capacitor", "It needs plutonium.", None)])
    store.ingest.apply(batch(session("s1"), first, source=source(offset=100), expected_offset=0))
    more = conversation("s1", [("And the DeLorean?", "Stainless steel.", None)], first_ordinal=3)
    grown = batch(session("s1"), more, source=source(offset=200), expected_offset=100)
    store.ingest.apply(grown)  # replica A: read from 100, the row still says 100
    before = store.stats()
    with pytest.raises(ConcurrentWrite, match="indexed to byte 200 by another process"):
        store.ingest.apply(dataclasses.replace(grown, source=source(offset=200)))  # replica B
    assert store.stats() == before
    assert [e.ordinal for e in store.events.of("s1")] == [1, 2, 3, 4]
    with pytest.raises(ConcurrentWrite, match=r"byte 200 .* from byte 0"):  # "new" to a replica
        store.ingest.apply(
            batch(session("s1"), first, source=source(offset=100), expected_offset=0)
        )
    store.ingest.apply(batch(session("s1"), [], source=source(offset=200)))  # unchecked: None
