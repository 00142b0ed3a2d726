"""The shared store suite, part 3: embeddings, usage, cache, summaries, checkpoints,
traces (both backends)."""

from __future__ import annotations

import struct
from datetime import timedelta

import pytest
from store_builders import T0, batch, conversation, ingest, session

from memoir.errors import StoreError
from memoir.llm.port import UsageRecord
from memoir.model import Author, Event, EventKind, build_exchanges
from memoir.store import CheckpointRow, IngestBatch, Store, SummaryRow, TraceRow
from memoir.store.parts import index as embeddings_part
from memoir.store.parts import summaries as cache_part

TURNS = [("first question", "first answer", None), ("second question", "second answer", None)]


def vec(*values: float) -> bytes:
    return struct.pack(f"<{len(values)}f", *values)


def test_embedding_backlog_put_and_load(store: Store) -> None:
    ingest(store, "s1", TURNS)
    backlog = store.embeddings.backlog("m", 10)
    assert backlog == [
        ("s1:1", "first question\n\nfirst answer"),
        ("s1:3", "second question\n\nsecond answer"),
    ]
    assert store.embeddings.backlog("m", 1) == backlog[:1]
    store.embeddings.put("m", [("s1:1", vec(1, 0))], 2)
    assert [x for x, _ in store.embeddings.backlog("m", 10)] == ["s1:3"]
    assert [x for x, _ in store.embeddings.backlog("other", 10)] == ["s1:1", "s1:3"]
    store.embeddings.put("m", [("s1:3", vec(0, 1)), ("gone", vec(1, 1))], 2)
    assert store.embeddings.backlog("m", 10) == []

    ids, blob, dim = store.embeddings.load("m")
    assert dim == 2 and sorted(ids) == ["s1:1", "s1:3"]  # "gone" has no exchange
    by_id = {x: blob[i * 8 : (i + 1) * 8] for i, x in enumerate(ids)}
    assert by_id == {"s1:1": vec(1, 0), "s1:3": vec(0, 1)}
    assert store.embeddings.load("none") == ([], b"", 0)


def test_put_embeddings_overwrites_and_validates(store: Store) -> None:
    ingest(store, "s1", TURNS)
    store.embeddings.put("m", [("s1:1", vec(1, 0))], 2)
    store.embeddings.put("m", [("s1:1", vec(0, 1))], 2)
    assert store.embeddings.load("m") == (["s1:1"], vec(0, 1), 2)
    with pytest.raises(StoreError, match="expected 8"):
        store.embeddings.put("m", [("s1:1", vec(1, 2, 3))], 2)
    with pytest.raises(StoreError):
        store.embeddings.put("m", [], 0)
    # a model that changes its dimension drops its old vectors
    store.embeddings.put("m", [("s1:3", vec(1, 2, 3))], 3)
    assert store.embeddings.load("m") == (["s1:3"], vec(1, 2, 3), 3)
    assert [x for x, _ in store.embeddings.backlog("m", 10)] == ["s1:1"]


def test_vectors_of_an_older_recipe_are_redone_after_the_missing_ones(
    store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    ingest(store, "s1", TURNS)
    store.embeddings.put("m", [("s1:1", vec(1, 0)), ("s1:3", vec(0, 1))], 2)
    assert store.embeddings.backlog("m", 10) == [] and store.embeddings.backlog_count("m") == 0
    monkeypatch.setattr(embeddings_part, "EMBED_RECIPE", embeddings_part.EMBED_RECIPE + 1)
    ingest(store, "s2", [("third question", "third answer", None)])
    # the exchange with no vector first, then the two embedded from the older recipe
    backlog = [x for x, _ in store.embeddings.backlog("m", 10)]
    assert backlog[0] == "s2:1" and sorted(backlog[1:]) == ["s1:1", "s1:3"]
    assert store.embeddings.backlog_count("m") == 3
    assert [x for x, _ in store.embeddings.backlog("m", 2)][:1] == ["s2:1"]
    assert dict(store.embeddings.backlog("m", 10))["s1:1"] == "first question\n\nfirst answer"
    # the old vectors are still what meaning search reads until they are redone
    ids, blob, _ = store.embeddings.load("m")
    assert sorted(ids) == ["s1:1", "s1:3"] and len(blob) == 16
    store.embeddings.put("m", [("s2:1", vec(1, 1)), ("s1:1", vec(0.5, 0))], 2)
    assert [x for x, _ in store.embeddings.backlog("m", 10)] == ["s1:3"]
    assert store.embeddings.backlog_count("m") == 1
    # with token states asked for: a stale vector without them is counted once
    assert [x for x, _ in store.embeddings.backlog("m", 10, with_tokens=True)] == [
        "s1:1",
        "s1:3",
        "s2:1",
    ]
    assert store.embeddings.backlog_count("m", with_tokens=True) == 3
    store.embeddings.put("m", [("s1:3", vec(0, 1))], 2, [b"\x02\x00\x7f\x00"])
    assert store.embeddings.backlog("m", 10) == []
    assert store.embeddings.backlog_count("m") == 0


def test_grown_exchange_returns_to_the_backlog(store: Store) -> None:
    events = conversation("s1", [("question", None, None)])
    store.ingest.apply(batch(session("s1"), events))
    store.embeddings.put("m", [("s1:1", vec(1.0))], 1)
    assert store.embeddings.backlog("m", 10) == []
    tail = (Event("s1", 2, EventKind.ASSISTANT_TEXT, Author.ASSISTANT, "late answer"),)
    store.ingest.apply(
        IngestBatch(
            session=session("s1"), events=tail, exchanges=tuple(build_exchanges([*events, *tail]))
        )
    )
    assert store.embeddings.backlog("m", 10) == [("s1:1", "question\n\nlate answer")]
    assert store.embeddings.load("m") == ([], b"", 0)


def test_every_write_to_a_models_vectors_raises_its_generation(store: Store) -> None:
    ingest(store, "s1", TURNS)
    ingest(store, "s2", TURNS)
    seen = [store.embeddings.generation("m")]

    def changed() -> bool:
        seen.append(store.embeddings.generation("m"))
        return seen[-1] > seen[-2]

    assert seen == [0]
    store.embeddings.put("m", [("s1:1", vec(1, 0)), ("s1:3", vec(0, 1))], 2)
    assert changed()
    store.embeddings.load("m")
    store.embeddings.backlog("m", 10)
    assert not changed()  # reads leave it
    store.embeddings.put("m", [("s1:1", vec(1, 1))], 2)  # the same key, a new vector
    assert changed()
    with store._tx() as tx:  # type: ignore[attr-defined]  # token states alone: same vectors
        tx.run("UPDATE embeddings SET tokens = ? WHERE model = ?", (b"\x01", "m"))
    assert not changed()
    store.embeddings.put("other", [("s2:1", vec(1, 0))], 2)
    assert not changed()  # another model's write is that model's
    assert store.embeddings.generation("other") > 0
    events = conversation("s1", TURNS)
    tail = (Event("s1", len(events) + 1, EventKind.ASSISTANT_TEXT, Author.ASSISTANT, "more"),)
    store.ingest.apply(  # the last exchange grows: its stale vector is dropped
        IngestBatch(session("s1"), tail, tuple(build_exchanges([*events, *tail])))
    )
    assert changed()
    assert store.embeddings.load("m")[0] == ["s1:1"]
    store.embeddings.put("m", [("s2:1", vec(1, 0))], 2)
    assert changed()
    store.sessions.delete("s2")  # its vector goes with it
    assert changed()
    assert store.embeddings.load("m")[0] == ["s1:1"]


def usage(at_minutes: int, outcome: str = "ok") -> UsageRecord:
    return UsageRecord(
        at=T0 + timedelta(minutes=at_minutes),
        provider="openai",
        model="gpt",
        purpose="summary",
        outcome=outcome,
        input_tokens=100,
        output_tokens=20,
        latency_ms=12.5,
        user="u",
        session="s1",
        job_id="j",
        request_id="r",
    )


def test_usage_ledger(store: Store) -> None:
    records = [usage(2), usage(0, "Truncated"), usage(1)]
    for r in records:
        store.usage.record(r)
    assert store.usage.records() == [records[1], records[2], records[0]]
    assert store.usage.records(since=T0 + timedelta(minutes=1)) == [records[2], records[0]]
    assert store.stats()["usage_records"] == 3


def test_cache_ttl(store: Store, monkeypatch: pytest.MonkeyPatch) -> None:
    now = [1_000_000.0]
    monkeypatch.setattr(cache_part.time, "time", lambda: now[0])
    assert store.cache.get("k") is None
    store.cache.put("k", "v1", 10)
    store.cache.put("k", "v2", 10)
    assert store.cache.get("k") == "v2"
    now[0] += 9.9
    assert store.cache.get("k") == "v2"
    now[0] += 0.2
    assert store.cache.get("k") is None
    store.cache.put("k", "v3", 0)
    assert store.cache.get("k") is None
    store.cache.put("forever", "x", float("inf"))
    now[0] += 1e9
    assert store.cache.get("forever") == "x"


def test_summary_rows(store: Store) -> None:
    assert store.summaries.get("s1") is None
    row = SummaryRow(
        session_id="s1",
        kind="real",
        body="Fixed the lock.",
        covered=12,
        last_exchange="s1:9",
        attempts=1,
        last_attempt_ms=5,
        resummary_attempts=2,
        resummary_last_attempt_ms=7,
        model="offline",
        message=None,
        updated_at=T0,
    )
    store.summaries.put(row)
    assert store.summaries.get("s1") == row
    errored = SummaryRow(session_id="s1", kind="errored", message="Truncated", attempts=2)
    store.summaries.put(errored)
    got = store.summaries.get("s1")
    assert got is not None and got.kind == "errored" and got.resummary_attempts is None
    assert got.updated_at is not None  # stamped when the caller left it empty
    store.summaries.put(SummaryRow(session_id="a0", kind="empty"))
    assert [r.session_id for r in store.summaries.all()] == ["a0", "s1"]


def test_checkpoints_and_traces(store: Store) -> None:
    c1 = CheckpointRow(
        id="c1",
        session_id="s1",
        created_at=T0,
        watermark=10,
        memory_boundary=8,
        disposition="compacted",
        previous_id=None,
        data={"kept": [1, 2], "note": "ünï"},
    )
    c2 = CheckpointRow(
        id="c2",
        session_id="s1",
        created_at=T0 + timedelta(seconds=1),
        watermark=20,
        memory_boundary=18,
        disposition="compacted",
        previous_id="c1",
        data={},
    )
    store.checkpoints.put(c2)
    store.checkpoints.put(c1)
    store.checkpoints.put(c1)
    assert store.checkpoints.of("s1") == [c1, c2]
    assert store.checkpoints.of("s2") == []

    t1 = TraceRow(session_id="s1", kind="compaction", at=T0, data={"tokens": 5})
    t2 = TraceRow(session_id=None, kind="sync", at=T0 + timedelta(seconds=1), data={})
    t3 = TraceRow(session_id="s1", kind="sync", at=T0 + timedelta(seconds=2), data={})
    for t in (t3, t1, t2):
        store.traces.record(t)
    assert store.traces.find() == [t1, t2, t3]
    assert store.traces.find(session_id="s1") == [t1, t3]
    assert store.traces.find(kind="sync") == [t2, t3]
    assert store.traces.find(session_id="s1", kind="sync") == [t3]


def test_the_change_log_names_every_exchange_whose_vector_changed(store: Store) -> None:
    """Both backends log which exchanges' vectors were written or removed (migrations v7,
    v23), so a matrix in memory or in a file is patched instead of read whole."""
    ingest(store, "s1", TURNS)
    ingest(store, "s2", TURNS)
    store.embeddings.put("m", [("s1:1", vec(1, 0)), ("s1:3", vec(0, 1))], 2)
    assert store.embeddings.vectors("m", ["s1:3", "nope", "s1:3"]) == {"s1:3": vec(0, 1)}
    start = store.embeddings.log_end("m")
    assert start is not None and start > 0
    store.embeddings.put("m", [("s1:1", vec(1, 1))], 2)  # a new vector for a known key
    with store._tx() as tx:  # type: ignore[attr-defined]  # token states alone: not logged
        tx.run("UPDATE embeddings SET tokens = ? WHERE model = ?", (b"\x01", "m"))
    store.embeddings.put("other", [("s2:1", vec(1, 0))], 2)  # another model's log
    store.embeddings.put("m", [("s2:1", vec(0, 1))], 2)
    store.sessions.delete("s2")  # its vector goes with it
    found = store.embeddings.changes("m", start)
    assert found is not None
    end, ids = found
    assert ids == ["s1:1", "s2:1"] and end == store.embeddings.log_end("m") > start
    assert store.embeddings.changes("m", end) == (end, [])
    assert store.embeddings.pruned("m") == 0
    store.embeddings.forget_changes("m", end)
    assert store.embeddings.changes("m", 0) == (0, [])
    assert store.embeddings.pruned("m") == end == store.embeddings.log_end("m")  # the mark
    assert store.embeddings.changes("other", 0)[1] == ["s2:1"]  # another model's: kept
