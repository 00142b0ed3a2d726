"""The usage ledger: every call, success or failure, one record; a sink failure never
fails the call; totals by day and model; the real store keeps the records."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from memoir.config import Settings
from memoir.llm import ScriptedModel
from memoir.llm.port import (
    ChatMessage,
    MemorySink,
    Metered,
    ModelRequest,
    Purpose,
    RateLimited,
    Refused,
    RequestMeta,
    Transient,
    Truncated,
    Usage,
    UsageRecord,
    UsageTotal,
    holding_usage,
    outcome_of,
    usage_totals,
)
from memoir.llm.wiring import Retrying, RetryPolicy

META = RequestMeta(user="alice", session="s-1", purpose=Purpose.EPISODE, job_id="job-7")
REQUEST = ModelRequest(messages=(ChatMessage("user", "hi"),), max_tokens=10, meta=META)


def test_success_and_failures_are_recorded() -> None:
    sink = MemorySink()
    model = ScriptedModel(
        [
            "fine",
            Truncated("cut", partial="{", usage=Usage(100, 10), request_id="r-2"),
            Refused("no"),
        ],
        name="openai:gpt-x",
    )
    metered = Metered(model, sink)
    assert metered.name == "openai:gpt-x"
    metered.complete(REQUEST)
    with pytest.raises(Truncated):
        metered.complete(REQUEST)
    with pytest.raises(Refused):
        metered.complete(REQUEST)
    outcomes = [r.outcome for r in sink.records]
    assert outcomes == ["ok", "Truncated", "Refused"]
    ok, cut, refused = sink.records
    assert (ok.provider, ok.model, ok.purpose) == ("openai", "gpt-x", "episode")
    assert (ok.user, ok.session, ok.job_id) == ("alice", "s-1", "job-7")
    assert ok.input_tokens > 0 and ok.output_tokens > 0
    assert (cut.input_tokens, cut.output_tokens, cut.request_id) == (100, 10, "r-2")
    assert (refused.input_tokens, refused.output_tokens) == (0, 0)
    assert all(r.latency_ms >= 0 and r.at.tzinfo is not None for r in sink.records)


def test_each_retry_attempt_is_its_own_row() -> None:
    sink = MemorySink()
    model = ScriptedModel([Transient("503"), RateLimited("429"), "ok"])
    wrapped = Retrying(Metered(model, sink), RetryPolicy(attempts=3), sleep=lambda s: None)
    wrapped.complete(REQUEST)
    assert [r.outcome for r in sink.records] == ["Transient", "RateLimited", "ok"]


class _BrokenSink:
    def record(self, record: UsageRecord) -> None:
        raise OSError("disk full")


def test_sink_failure_never_fails_the_call(caplog: pytest.LogCaptureFixture) -> None:
    metered = Metered(ScriptedModel(["fine", Refused("no")]), _BrokenSink())
    assert metered.complete(REQUEST).text == "fine"
    with pytest.raises(Refused):  # the model's error, not the sink's
        metered.complete(REQUEST)
    assert "could not record" in caplog.text


@pytest.mark.parametrize(
    ("exc", "expected"),
    [(None, "ok"), (Refused("x"), "Refused"), (ValueError("x"), "error:ValueError")],
)
def test_outcome_of(exc: BaseException | None, expected: str) -> None:
    assert outcome_of(exc) == expected


def _record(day: int, model: str, outcome: str, tin: int, tout: int) -> UsageRecord:
    provider, _, name = model.partition(":")
    return UsageRecord(
        at=datetime(2026, 1, day, 23, 59, tzinfo=UTC),
        provider=provider,
        model=name or provider,
        purpose="summary",
        outcome=outcome,
        input_tokens=tin,
        output_tokens=tout,
        latency_ms=1.0,
    )


def test_usage_totals_by_day_and_model() -> None:
    records = [
        _record(2, "openai:gpt-x", "ok", 10, 1),
        _record(1, "openai:gpt-x", "ok", 5, 2),
        _record(1, "openai:gpt-x", "Refused", 7, 0),
        _record(1, "offline", "ok", 3, 3),
        _record(2, "anthropic:claude", "Truncated", 4, 4),
    ]
    assert usage_totals(records) == [
        UsageTotal("2026-01-01", "offline", 1, 1, 0, 3, 3),
        UsageTotal("2026-01-01", "openai:gpt-x", 2, 1, 1, 12, 2),
        UsageTotal("2026-01-02", "anthropic:claude", 1, 0, 1, 4, 4),
        UsageTotal("2026-01-02", "openai:gpt-x", 1, 1, 0, 10, 1),
    ]


def test_real_store_keeps_the_ledger(settings: Settings) -> None:
    from memoir.store import open_store

    store = open_store(settings)
    try:
        metered = Metered(ScriptedModel(["a", Refused("no")], name="openai:gpt-x"), store.usage)
        metered.complete(REQUEST)
        with pytest.raises(Refused):
            metered.complete(REQUEST)
        records = store.usage.records()
        assert [r.outcome for r in records] == ["ok", "Refused"]
        assert records[0].job_id == "job-7" and records[0].purpose == "episode"
        totals = usage_totals(records)
        assert [(t.model, t.calls, t.ok, t.failed) for t in totals] == [("openai:gpt-x", 2, 1, 1)]
    finally:
        store.close()


def test_a_hold_keeps_its_sinks_records_and_sends_the_rest() -> None:
    held_sink, other = MemorySink(), MemorySink()
    retried = ScriptedModel([Transient("503"), "ok", "again"])
    held = Retrying(Metered(retried, held_sink), RetryPolicy(attempts=2), sleep=lambda s: None)
    elsewhere = Metered(ScriptedModel(["fine"]), other)
    with holding_usage(held_sink) as kept:
        held.complete(REQUEST)
        elsewhere.complete(REQUEST)
        assert held_sink.records == []  # nothing sent while the call is held
    assert [r.outcome for r in kept] == ["Transient", "ok"]  # each attempt, in order
    assert [r.outcome for r in other.records] == ["ok"]  # another sink's: sent at once
    held.complete(REQUEST)  # after the block: sent again
    assert [r.outcome for r in held_sink.records] == ["ok"] and len(kept) == 2


def test_a_hold_keeps_the_record_of_a_failed_call() -> None:
    sink = MemorySink()
    metered = Metered(ScriptedModel([Refused("no")]), sink)
    with holding_usage(sink) as kept, pytest.raises(Refused):
        metered.complete(REQUEST)
    assert [r.outcome for r in kept] == ["Refused"] and sink.records == []
