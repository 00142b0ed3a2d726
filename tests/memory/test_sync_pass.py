"""The memory pass `memoir sync` runs, over a real store (both backends): the decision
table, newest first and bounded per run, the cursor (nothing new: nothing run), the
privacy barriers (denied sessions settle as durable denials, nothing sent), a run killed
half-way resumed without duplicates, and failures recorded then retried."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from memoir.llm import OfflineModel, counter_for
from memoir.llm.port import ModelRequest, Truncated
from memoir.memory import MemoryPassReport, Verdict, due_order, run_memory_pass, verdict
from memoir.memory.item_store import memory_parts
from memoir.memory.memories import Memories, sync_op
from memoir.memory.runner import Runner
from memoir.memory.values import Trigger, operation_id
from memoir.model import Author, Event, EventKind, Harness, Session, SessionFlags, build_exchanges
from memoir.store import IngestBatch, Store

T0 = datetime(2026, 3, 1, 9, 0, tzinfo=UTC)
OFF = SessionFlags()


@pytest.mark.parametrize(
    ("harness", "excluded", "last", "cursor", "flags", "quiet", "expected"),
    [
        (Harness.API, False, 9, 0, OFF, True, Verdict.API),
        (Harness.API, True, 9, 0, SessionFlags(incognito=True), True, Verdict.API),
        (Harness.CLAUDE_CODE, True, 9, 0, OFF, True, Verdict.EXCLUDED),
        (Harness.CODEX, True, 9, 0, SessionFlags(incognito=True), True, Verdict.EXCLUDED),
        (Harness.CLAUDE_CODE, False, 0, 0, OFF, True, Verdict.CURRENT),  # no event at all
        (Harness.CLAUDE_CODE, False, 9, 9, OFF, True, Verdict.CURRENT),
        (Harness.CLAUDE_CODE, False, 9, 12, OFF, True, Verdict.CURRENT),  # a shrunk session
        (Harness.CLAUDE_CODE, False, 9, 9, SessionFlags(incognito=True), True, Verdict.CURRENT),
        (Harness.CLAUDE_CODE, False, 9, 4, SessionFlags(incognito=True), True, Verdict.DENIED),
        (Harness.CLAUDE_CODE, False, 9, 4, SessionFlags(incognito=True), False, Verdict.DENIED),
        (Harness.CODEX, False, 9, 0, SessionFlags(memory_disabled=True), False, Verdict.DENIED),
        (Harness.GENERIC, False, 9, 0, SessionFlags(subagent=True), True, Verdict.DENIED),
        (Harness.CLAUDE_CODE, False, 9, 0, SessionFlags(archived=True), True, Verdict.DENIED),
        (Harness.CLAUDE_CODE, False, 9, 4, OFF, False, Verdict.ACTIVE),
        (Harness.CLAUDE_CODE, False, 9, 4, OFF, True, Verdict.DUE),
        (Harness.CODEX, False, 1, 0, OFF, True, Verdict.DUE),
        (Harness.GENERIC, False, 9, 0, OFF, True, Verdict.DUE),
    ],
)
def test_the_decision_table(
    harness: Harness,
    excluded: bool,
    last: int,
    cursor: int,
    flags: SessionFlags,
    quiet: bool,
    expected: Verdict,
) -> None:
    got = verdict(
        harness=harness,
        excluded=excluded,
        last_ordinal=last,
        cursor=cursor,
        flags=flags,
        quiet=quiet,
    )
    assert got is expected


def test_due_sessions_run_newest_first_those_without_a_time_last() -> None:
    rows = [
        ("old", T0),
        ("none-b", None),
        ("new", T0 + timedelta(days=2)),
        ("mid-b", T0 + timedelta(days=1)),
        ("mid-a", T0 + timedelta(days=1)),
        ("none-a", None),
    ]
    ordered = sorted(rows, key=lambda r: due_order(r[1], r[0]))
    assert [r[0] for r in ordered] == ["new", "mid-a", "mid-b", "old", "none-a", "none-b"]


def test_a_sync_operation_is_named_by_its_range() -> None:
    op = sync_op("s1", 4, 9, T0)
    assert (op.trigger, op.anchor, op.coverage_through, op.context_through) == ("sync", "4-9", 9, 9)
    assert op.operation_id == operation_id("s1", Trigger.SYNC, "4-9")
    assert sync_op("s1", 4, 9, T0 + timedelta(hours=1)).operation_id == op.operation_id
    assert sync_op("s1", 9, 12, T0).operation_id != op.operation_id


# --- the pass over a store -----------------------------------------------------------------
class Recording:
    """The offline extractor, recording every request; ``fail_on`` maps the n-th call
    (1-based) to the exception it raises instead."""

    def __init__(self, fail_on: dict[int, BaseException] | None = None) -> None:
        self.inner = OfflineModel()
        self.name = "offline"
        self.requests: list[ModelRequest] = []
        self.fail_on = fail_on or {}

    def complete(self, request: ModelRequest) -> Any:
        self.requests.append(request)
        failure = self.fail_on.get(len(self.requests))
        if failure is not None:
            raise failure
        return self.inner.complete(request)

    def seen(self) -> str:
        return "\n".join(m.content for r in self.requests for m in r.messages)


def _put(
    store: Store,
    sid: str,
    said: list[tuple[str, str]],
    *,
    at: datetime = T0,
    project: str = "proj",
    harness: Harness = Harness.CLAUDE_CODE,
    **flags: bool,
) -> None:
    """Append turns (user, assistant) to a synced session, a minute apart from ``at``."""
    start = store.events.last_ordinal(sid) + 1
    events = []
    for n, (who, text) in enumerate(said, start=start):
        kind = EventKind.USER_TEXT if who == "user" else EventKind.ASSISTANT_TEXT
        author = Author.USER if who == "user" else Author.ASSISTANT
        events.append(Event(sid, n, kind, author, text, at + timedelta(minutes=n)))
    prior = store.events.of(sid)
    session = Session(sid, project, harness, flags=SessionFlags(**flags))
    exchanges = [x for x in build_exchanges([*prior, *events]) if x.last_ordinal >= start]
    store.ingest.apply(IngestBatch(session, tuple(events), tuple(exchanges)))


def _said(fact: str) -> list[tuple[str, str]]:
    return [("user", fact), ("assistant", "Noted.")]


class Home:
    """A store, its memory engine around a recording model, and the pass over them."""

    def __init__(self, store: Store, model: Recording | None = None) -> None:
        self.store = store
        self.model = model or Recording()
        self.parts = memory_parts(store)
        runner = Runner(self.parts, self.model, counter_for("cl100k_base"))
        self.memories = Memories(self.parts, store.claims, runner, wait_s=5)
        self.built = 0

    def engine(self) -> Memories:
        self.built += 1
        return self.memories

    def run(
        self, limit: int = 10, *, active: tuple[str, ...] = (), excluded: tuple[str, ...] = ()
    ) -> MemoryPassReport:
        recent = {i.session.id: i.last_at for i in self.store.sessions.recent()}
        busy_at = {recent[s] for s in active}
        return run_memory_pass(
            self.parts,
            self.engine,
            limit=limit,
            quiet=lambda at: at not in busy_at,
            excluded=lambda project: project in excluded,
        )

    def contents(self) -> list[str]:
        return sorted(i.content for i in memory_parts(self.store).items.find(limit=100))


def test_the_newest_quiet_sessions_run_first_at_most_the_limit(store: Store) -> None:
    home = Home(store)
    for n, fact in enumerate(["I prefer tabs.", "I live in Porto.", "We use pnpm."]):
        _put(store, f"s{n}", _said(fact), at=T0 + timedelta(days=n))
    first = home.run(limit=2)
    assert (first.mined, first.deferred, first.items) == (2, 1, 2)
    assert [r.session_id for r in first.rows] == ["s2", "s1"]  # newest first
    assert home.contents() == ["I live in Porto.", "We use pnpm."]
    second = home.run(limit=2)
    assert (second.mined, second.deferred, [r.session_id for r in second.rows]) == (1, 0, ["s0"])
    assert home.contents() == ["I live in Porto.", "I prefer tabs.", "We use pnpm."]
    receipts = memory_parts(store).memory.receipts()
    assert sorted((r.session_id, r.trigger, r.outcome) for r in receipts) == [
        ("s0", "sync", "extracted"),
        ("s1", "sync", "extracted"),
        ("s2", "sync", "extracted"),
    ]
    assert {s: memory_parts(store).memory.cursor(s) for s in ("s0", "s1", "s2")} == {
        "s0": 2,
        "s1": 2,
        "s2": 2,
    }


def test_nothing_new_runs_nothing_and_new_turns_run_only_their_range(store: Store) -> None:
    home = Home(store)
    _put(store, "s1", _said("I prefer tabs."))
    assert home.run().mined == 1
    calls = len(home.model.requests)
    again = home.run()
    assert (again.mined, again.rows, len(home.model.requests), home.built) == (0, [], calls, 1)
    _put(store, "s1", _said("We decided to use PostgreSQL."), at=T0 + timedelta(hours=1))
    grown = home.run()
    assert (grown.mined, grown.items) == (1, 1)
    latest = home.model.requests[-1].messages[-1].content
    assert "PostgreSQL" in latest and "I prefer tabs." not in latest  # (cursor, end] only
    ranges = sorted(
        (r.range_after, r.range_through) for r in memory_parts(store).memory.receipts("s1")
    )
    assert ranges == [(0, 2), (2, 4)]
    assert home.contents() == ["I prefer tabs.", "We decided to use PostgreSQL."]


def test_active_sessions_wait_and_nothing_is_built_when_nothing_is_due(store: Store) -> None:
    home = Home(store)
    _put(store, "s1", _said("I prefer tabs."))
    report = home.run(active=("s1",))
    assert (report.active, report.mined, home.built, home.model.requests) == (1, 0, 0, [])
    assert memory_parts(store).memory.receipts() == []
    assert home.run().mined == 1


def test_denied_sessions_settle_as_denials_and_nothing_of_them_is_sent(store: Store) -> None:
    home = Home(store)
    _put(
        store,
        "inc",
        _said("I live in Lisbon, secretly."),
        at=T0 - timedelta(days=1),
        incognito=True,
    )
    _put(store, "off", _said("My password manager is Bitwarden."), memory_disabled=True)
    _put(store, "sub", _said("I prefer vim."), subagent=True)
    _put(store, "quiet-proj", _said("I prefer emacs."), project="private")
    _put(store, "ok", _said("I prefer tabs."))
    memory_parts(store).items.switch_project("private", disabled=True)
    report = home.run(limit=1, active=("inc",))  # denied whether quiet or not
    assert (report.denied, report.mined, report.deferred) == (4, 1, 0)  # denials use no limit
    assert home.contents() == ["I prefer tabs."]
    seen = home.model.seen()
    assert all(w not in seen for w in ("Lisbon", "Bitwarden", "vim", "emacs"))
    receipts = {
        r.session_id: (r.outcome, r.reason, r.model_calls)
        for r in memory_parts(store).memory.receipts()
    }
    assert receipts == {
        "inc": ("policy_denied", "incognito", 0),
        "off": ("policy_denied", "memory_disabled", 0),
        "sub": ("policy_denied", "subagent", 0),
        "quiet-proj": ("policy_denied", "memory_disabled", 0),
        "ok": ("extracted", "", 1),
    }
    # the denial is a barrier: lifting the flag later never brings those words back
    store.sessions.set_flags("inc", SessionFlags())
    assert home.run().mined == 0
    _put(store, "inc", _said("I prefer spaces."), at=T0 + timedelta(hours=2))
    assert home.run().mined == 1
    assert "Lisbon" not in home.model.seen()
    assert home.contents() == ["I prefer spaces.", "I prefer tabs."]


def test_excluded_projects_and_api_sessions_are_never_read(store: Store) -> None:
    home = Home(store)
    _put(store, "ex", _said("I prefer tabs."), project="-home-ann-secret")
    _put(store, "api", _said("I live in Porto."), harness=Harness.API)
    report = home.run(excluded=("-home-ann-secret",))
    assert (report.excluded, report.mined, home.built) == (1, 0, 0)
    assert memory_parts(store).memory.receipts() == [] and home.model.requests == []


def test_a_limit_of_zero_reads_nothing_and_builds_no_model(store: Store) -> None:
    home = Home(store)
    _put(store, "s1", _said("I prefer tabs."))
    _put(store, "inc", _said("I live in Porto."), incognito=True)
    report = home.run(limit=0)
    assert (report.deferred, report.mined, report.denied, home.built) == (1, 0, 0, 0)
    assert memory_parts(store).memory.receipts() == []


def test_a_run_killed_half_way_is_resumed_once(store: Store) -> None:
    """The second session's model call is where the process dies: its operation was made
    durable first, so the next pass (or recovery) runs it, and nothing is saved twice."""
    home = Home(store, Recording(fail_on={2: KeyboardInterrupt()}))
    _put(store, "s1", _said("I prefer tabs."), at=T0 + timedelta(days=1))
    _put(store, "s2", _said("I live in Porto."))
    with pytest.raises(KeyboardInterrupt):
        home.run()
    assert home.contents() == ["I prefer tabs."]
    (left,) = memory_parts(store).memory.queued()
    assert (left.session_id, left.trigger, left.anchor) == ("s2", "sync", "0-2")
    resumed = Home(store)  # a new process: a new engine over the same store
    report = resumed.run()
    assert (report.mined, [r.session_id for r in report.rows]) == (1, ["s2"])
    assert home.contents() == ["I live in Porto.", "I prefer tabs."]
    assert resumed.run().mined == 0 and memory_parts(store).memory.queued() == []
    ops = [r.operation_id for r in memory_parts(store).memory.receipts()]
    assert len(ops) == len(set(ops)) == 2


def test_recovery_alone_finishes_what_a_killed_pass_queued(store: Store) -> None:
    home = Home(store, Recording(fail_on={1: KeyboardInterrupt()}))
    _put(store, "s1", _said("I prefer tabs."))
    with pytest.raises(KeyboardInterrupt):
        home.run()
    assert home.contents() == []
    recovered = Home(store).memories.recover()
    assert (recovered.sessions, recovered.settled) == (1, 1)
    assert home.contents() == ["I prefer tabs."]
    assert Home(store).run().mined == 0  # the cursor moved: nothing left for the pass


def test_a_failure_is_pending_then_retried_by_the_next_pass(store: Store) -> None:
    home = Home(store, Recording(fail_on={n: Truncated("cut off") for n in (1, 2, 3)}))
    _put(store, "s1", _said("I prefer tabs."))
    failed = home.run()
    assert (failed.failed, failed.mined, failed.items) == (1, 0, 0)
    pending = memory_parts(store).memory.pending("s1")
    assert pending is not None and pending.trigger == "sync"
    retried = Home(store).run()
    assert (retried.mined, retried.items, retried.failed) == (1, 1, 0)
    assert memory_parts(store).memory.pending("s1") is None
    assert home.contents() == ["I prefer tabs."]
