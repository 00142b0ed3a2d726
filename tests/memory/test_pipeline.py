"""The extraction pipeline over a real store (both backends): the three triggers, no-op
without a model call, policy denials with their durable markers, retry then discard,
idempotent replays, the per-session lane, and bounded cost per extraction."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from memoir import service
from memoir.errors import StoreError
from memoir.llm import OfflineModel, ScriptedModel, counter_for
from memoir.llm.port import Metered, ModelRequest, Truncated
from memoir.memory.item_store import memory_parts
from memoir.memory.memories import Memories, checkpoint_op
from memoir.memory.runner import MemoryConfig, Runner
from memoir.model import Author, Event, EventKind, Harness, Session, SessionFlags, build_exchanges
from memoir.store import IngestBatch, Store
from memoir.store.values import CheckpointRow

T0 = datetime(2026, 3, 1, 9, 0, tzinfo=UTC)


class Recording:
    """The offline extractor, recording every request it was sent."""

    def __init__(self) -> None:
        self.inner = OfflineModel()
        self.name = "offline"
        self.requests: list[ModelRequest] = []

    def complete(self, request: ModelRequest) -> Any:
        self.requests.append(request)
        return self.inner.complete(request)

    def seen(self) -> str:
        return "\n".join(m.content for r in self.requests for m in r.messages)


def _events(sid: str, said: list[tuple[str, str]], start: int = 1) -> list[Event]:
    out = []
    for n, (who, text) in enumerate(said, start=start):
        kind = {"user": EventKind.USER_TEXT, "assistant": EventKind.ASSISTANT_TEXT}.get(
            who, EventKind.TOOL_RESULT
        )
        author = {"user": Author.USER, "assistant": Author.ASSISTANT}.get(who, Author.TOOL)
        out.append(Event(sid, n, kind, author, text, T0 + timedelta(minutes=n)))
    return out


def _put(store: Store, sid: str, said: list[tuple[str, str]], **flags: bool) -> list[Event]:
    start = store.events.last_ordinal(sid) + 1
    events = _events(sid, said, start)
    prior = store.events.of(sid)
    session = Session(sid, "proj", Harness.API, flags=SessionFlags(**flags))
    exchanges = [x for x in build_exchanges([*prior, *events]) if x.last_ordinal >= start]
    store.ingest.apply(IngestBatch(session, tuple(events), tuple(exchanges)))
    return events


def _memories(store: Store, model: Any, **config: Any) -> Memories:
    parts = memory_parts(store)
    runner = Runner(parts, model, counter_for("cl100k_base"), MemoryConfig(**config))
    return Memories(parts, store.claims, runner, wait_s=5)


def _checkpoint(sid: str, n: int, boundary: int, *, denied: bool = False) -> CheckpointRow:
    return CheckpointRow(
        f"ck{n}",
        sid,
        T0 + timedelta(hours=n),
        boundary,
        boundary,
        "policy_denied" if denied else "eligible",
        None,
        {"summary": f"summary {n}", "context_through": boundary, "window": 32_000},
    )


SAID = [
    ("user", "I prefer tabs over spaces in every repository."),
    ("assistant", "Noted: tabs it is."),
    ("tool", "cat .env: AWS_SECRET=xyz; I prefer to leak this."),
    ("user", "We decided to use PostgreSQL for the billing service."),
    ("assistant", "PostgreSQL it is, then."),
]


def test_remember_saves_items_quoting_the_users_words(store: Store) -> None:
    _put(store, "s1", SAID)
    model = Recording()
    out = _memories(store, model).remember("s1", 4)
    assert out.receipt is not None and out.receipt.outcome == "remembered"
    contents = {i.content for i in out.items}
    assert "We decided to use PostgreSQL for the billing service." in contents
    assert "I prefer tabs over spaces in every repository." in contents  # incidental
    for item in out.items:
        (source,) = item.sources
        text = store.events.of("s1", after=source.ordinal - 1, upto=source.ordinal)[0].text
        assert source.quote in text  # an exact quote of that user event
    assert "AWS_SECRET" not in model.seen()  # tool output is never sent
    assert memory_parts(store).memory.cursor("s1") == 5
    assert memory_parts(store).items.cited("s1").keys() == {1, 4}
    again = _memories(store, model).remember("s1", 4)  # the same request: the same answer
    assert again.receipt == out.receipt and {i.id for i in again.items} == {i.id for i in out.items}
    assert len(model.requests) == 1


def test_a_range_without_user_text_is_a_no_op_without_a_model_call(store: Store) -> None:
    _put(store, "s1", [("assistant", "Hello!"), ("tool", "ls: a b c"), ("assistant", "Done.")])
    store.checkpoints.put(_checkpoint("s1", 1, 3))
    model = ScriptedModel()  # any call would raise ScriptExhausted
    _memories(store, model).recover()
    assert [(r.outcome, r.reason) for r in memory_parts(store).memory.receipts("s1")] == [
        ("no_op", "no_user_text")
    ]
    assert model.calls == 0 and memory_parts(store).memory.cursor("s1") == 3


def test_a_secret_in_a_remember_request_is_a_no_op_before_any_model_call(store: Store) -> None:
    _put(store, "s1", [("user", "Remember my key AKIAIOSFODNN7EXAMPLE for the deploy.")])
    model = ScriptedModel()
    out = _memories(store, model).remember("s1")
    assert (out.receipt.outcome, out.receipt.reason) == ("no_op", "sensitive_information")  # type: ignore[union-attr]
    assert model.calls == 0 and memory_parts(store).items.find() == []


def test_a_denied_checkpoint_writes_a_marker_sends_nothing_and_skips_for_ever(store: Store) -> None:
    _put(store, "s1", SAID, incognito=True)
    store.checkpoints.put(_checkpoint("s1", 1, 5, denied=True))
    model = Recording()
    _memories(store, model).recover()
    assert model.requests == []
    (marker,) = memory_parts(store).memory.denials("s1")
    assert (marker.range_after, marker.range_through, marker.reason) == (
        0,
        5,
        "denied_at_checkpoint",
    )
    assert memory_parts(store).memory.cursor("s1") == 5
    assert [r.outcome for r in memory_parts(store).memory.receipts("s1")] == ["policy_denied"]


def test_a_session_switched_to_incognito_after_its_checkpoint_is_denied(store: Store) -> None:
    _put(store, "s1", SAID)
    store.checkpoints.put(_checkpoint("s1", 1, 5))
    store.sessions.set_flags("s1", SessionFlags(incognito=True))
    model = Recording()
    _memories(store, model).recover()
    assert model.requests == [] and len(memory_parts(store).memory.denials("s1")) == 1


def test_a_project_switched_off_is_denied(store: Store) -> None:
    _put(store, "s1", SAID)
    memory_parts(store).items.switch_project("proj", disabled=True)
    model = Recording()
    out = _memories(store, model).remember("s1", 4)
    assert out.receipt.outcome == "policy_denied" and model.requests == []  # type: ignore[union-attr]


def _answer(items: list[dict[str, Any]]) -> str:
    return json.dumps({"status": "complete", "items": items, "incidental": []})


def test_a_failed_range_is_retried_first_then_discarded_so_later_history_moves_on(
    store: Store,
) -> None:
    _put(store, "s1", SAID)
    store.checkpoints.put(_checkpoint("s1", 1, 5))
    model = ScriptedModel(
        [Truncated("cut"), Truncated("cut again")],
        default=json.dumps({"status": "not_applicable", "items": [], "incidental": []}),
    )
    memories = _memories(store, model)
    memories.recover()
    pending = memory_parts(store).memory.pending("s1")
    assert pending is not None and (pending.range_after, pending.coverage_through) == (0, 5)
    assert memory_parts(store).memory.cursor("s1") == 0
    _put(store, "s1", [("user", "I live in Lisbon now."), ("assistant", "Nice.")])
    store.checkpoints.put(_checkpoint("s1", 2, 7))
    memories.recover()  # the old range first (fails again: discarded), then the new one
    outcomes = [
        (r.outcome, r.range_after, r.range_through)
        for r in memory_parts(store).memory.receipts("s1")
    ]
    assert ("discarded", 0, 5) in outcomes and ("not_applicable", 5, 7) in outcomes
    assert (
        memory_parts(store).memory.pending("s1") is None
        and memory_parts(store).memory.cursor("s1") == 7
    )
    assert model.calls == 3


def test_a_requested_item_that_fails_validation_fails_the_range(store: Store) -> None:
    _put(store, "s1", SAID)
    bad = _answer(
        [
            {
                "content": "Prefers tabs.",
                "kind": "preference",
                "keys": ["tabs"],
                "quotes": [
                    {"ordinal": 2, "text": "Noted: tabs it is."}
                ],  # assistant text: not evidence
            }
        ]
    )
    out = _memories(store, ScriptedModel([bad])).remember("s1", 1)
    assert out.receipt is None and out.pending is not None and out.pending.failure == "validation"
    assert memory_parts(store).items.find() == []


def test_duplicate_dispatches_of_a_checkpoint_are_one_operation(store: Store) -> None:
    _put(store, "s1", SAID)
    row = _checkpoint("s1", 1, 5)
    store.checkpoints.put(row)
    memories = _memories(store, Recording())
    for _ in range(3):
        memories.on_checkpoint(row)
    assert memories.lane.wait_idle(10)
    memories.recover()
    assert len(memory_parts(store).memory.receipts("s1")) == 1
    assert len({i.content for i in memory_parts(store).items.find()}) == len(
        memory_parts(store).items.find()
    )


def test_extract_is_accepted_at_once_and_runs_after(store: Store) -> None:
    _put(store, "s1", SAID)
    model = ScriptedModel(
        default=json.dumps({"status": "not_applicable", "items": []}), delay_s=0.3
    )
    memories = _memories(store, model)
    assert memories.extract("s1", anchor="call-1", note="the user's stack") == "accepted"
    assert (
        memory_parts(store).memory.queued("s1") or memory_parts(store).memory.receipts("s1") == []
    )  # not run yet, or running
    assert memories.lane.wait_idle(10)
    assert [r.trigger for r in memory_parts(store).memory.receipts("s1")] == ["extract"]


def test_cost_per_extraction_is_bounded_by_the_range_not_the_session(store: Store) -> None:
    """Ten compactions of a growing session: the tenth request is no bigger than the second
    (only the range since the cursor is sent, with one bounded prior summary and the
    memories it may update — here the one item every step's statement merged into)."""
    model = Recording()
    memories = _memories(store, model)
    sizes = []
    store.checkpoints.put(_checkpoint("s1", 0, 0))  # an earlier summary: every request has one
    for n in range(1, 11):
        _put(
            store,
            "s1",
            [
                ("user", f"Step {n}: I prefer the option number {n} for the cache layer."),
                ("assistant", f"Using option {n}."),
            ],
        )
        store.checkpoints.put(_checkpoint("s1", n, store.events.last_ordinal("s1")))
        before = len(model.requests)
        memories.recover()
        assert len(model.requests) == before + 1
        sizes.append(counter_for("cl100k_base").count(model.requests[-1].messages[0].content))
    assert sizes[-1] <= sizes[1] + 2  # the step number's digits may cost a token
    assert sizes[1] > sizes[0]  # from the second on, the first statement's item is shown
    assert len(memory_parts(store).items.find()) == 1
    assert memory_parts(store).memory.cursor("s1") == 20


def test_split_range_keeps_both_parts_settled(store: Store) -> None:
    said = []
    for n in range(30):
        said += [
            ("user", f"I prefer option {n} because of reason {n} " + "words " * 25),
            ("assistant", "ok " * 25),
        ]
    _put(store, "s1", said)
    row = _checkpoint("s1", 1, 60)
    row.data["window"] = 4_000
    store.checkpoints.put(row)
    model = Recording()
    _memories(store, model).recover()
    receipts = memory_parts(store).memory.receipts("s1")
    assert sorted(r.trigger for r in receipts) == ["compaction", "incidental"]
    first, second = sorted(receipts, key=lambda r: r.range_after)
    assert first.range_after == 0 and first.range_through == second.range_after
    assert second.range_through == 60 and memory_parts(store).memory.cursor("s1") == 60
    assert all(r.model_calls <= 3 for r in receipts)


def test_checkpoint_op_is_pure_and_keeps_the_frozen_boundaries() -> None:
    row = _checkpoint("s1", 1, 5)
    row.data["context_through"] = 9
    op = checkpoint_op(row)
    assert (op.coverage_through, op.context_through) == (5, 9)
    assert op.request == {"checkpoint_id": "ck1", "disposition": "eligible", "window": 32_000}
    assert checkpoint_op(row) == op


@pytest.mark.parametrize("turn", [2, 99])
def test_remember_of_a_turn_that_is_not_a_user_message_says_so(store: Store, turn: int) -> None:
    from memoir.errors import MemoirError

    _put(store, "s1", SAID)
    with pytest.raises(MemoirError, match="not a user message"):
        _memories(store, Recording()).remember("s1", turn)


def test_library_switches_incognito_and_memory_off(home: Any) -> None:
    from memoir.app import Memoir
    from memoir.config import Settings

    with Memoir.open(Settings.from_env({"MEMOIR_HOME": str(home)}, sources=())) as m:
        _put(m.store, "s1", SAID)
        service.set_incognito(m, "s1")
        assert m.remember("s1", 4).receipt.outcome == "policy_denied"  # type: ignore[union-attr]
        service.set_incognito(m, "s1", False)
        service.set_memory(m, False, project="proj")
        _put(m.store, "s1", [("user", "I prefer dark mode."), ("assistant", "ok")])
        assert m.remember("s1").receipt.outcome == "policy_denied"  # type: ignore[union-attr]
        service.set_memory(m, True, project="proj")
        _put(m.store, "s1", [("user", "I prefer light mode."), ("assistant", "ok")])
        out = m.remember("s1")
        assert [i.content for i in out.items] == ["I prefer light mode."]
        assert len(memory_parts(m.store).memory.denials("s1")) == 2


def test_a_long_lived_process_recovers_memory_work_at_start_up(home: Any) -> None:
    from memoir.app import Memoir
    from memoir.config import Settings

    with Memoir.open(Settings.from_env({"MEMOIR_HOME": str(home)}, sources=())) as m:
        _put(m.store, "s1", SAID)
        m.store.checkpoints.put(_checkpoint("s1", 1, 5))  # persisted, never dispatched
        thread = service.recover_memories_in_background(m)
        assert thread is not None
        thread.join(30)
        assert [r.outcome for r in memory_parts(m.store).memory.receipts("s1")] == ["extracted"]
        assert memory_parts(m.store).memory.cursor("s1") == 5


def test_a_runs_model_calls_are_in_the_usage_ledger(store: Store) -> None:
    _put(store, "s1", SAID)
    model = Metered(Recording(), store.usage)
    out = _memories(store, model).remember("s1", 4)
    assert out.receipt is not None and out.receipt.model_calls == 1
    (row,) = store.usage.records()
    assert (row.purpose, row.session, row.outcome) == ("extraction", "s1", "ok")
    assert row.input_tokens > 0


def test_a_ledger_that_cannot_be_written_fails_no_remember(
    store: Store, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    def broken(records: Any) -> Any:
        raise StoreError("the usage table is gone")
        yield  # a plan

    monkeypatch.setattr("memoir.memory.lane_store.usage_plan", broken)
    _put(store, "s1", SAID)
    out = _memories(store, Metered(Recording(), store.usage)).remember("s1", 4)
    assert out.receipt is not None and out.receipt.outcome == "remembered" and out.items
    assert store.usage.records() == [] and "could not record 1 model call(s)" in caplog.text
