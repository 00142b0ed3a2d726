"""The summary pass over an archive laid out as ``memoir sync`` lays it out (the seed's
scenario of issue point 10, plus the gate, the order and the limit)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

from memoir.llm import ScriptedModel
from memoir.llm.port import Transient
from memoir.summaries.state import Failure, SummaryKind, parse_summary_file

from .helpers import (
    HOUR_MS,
    NOW_MS,
    PROJECT,
    TINY_ID,
    FakeMemoir,
    append,
    archive,
    conversation,
    make_memoir,
    run_pass,
    summary_file,
)

HEADER_8237 = '__COVERAGE__ {"bytes":8237,"lastExchange":"2025-09-19T17:36:33.487Z","schema":1}\n'


def _tiny(memoir: FakeMemoir, claude_fixtures: Path) -> Path:
    data = (claude_fixtures / "tiny-conversation.jsonl").read_bytes()
    path = archive(memoir.settings.home, TINY_ID, data)
    memoir.store.index_file(path)
    return path


def _grow_to_medium(memoir: FakeMemoir, path: Path, claude_fixtures: Path) -> None:
    append(path, (claude_fixtures / "medium-conversation.jsonl").read_bytes())
    memoir.store.index_file(path)


def test_first_summary_grow_restamp_then_nothing(home, claude_fixtures) -> None:
    memoir = make_memoir(home)
    path = _tiny(memoir, claude_fixtures)
    model = ScriptedModel(["First summary."])
    report = run_pass(memoir, limit=10, now_ms=NOW_MS, model=model)
    assert (report.summarized, model.calls) == (1, 1)
    assert summary_file(path).read_text() == HEADER_8237 + "First summary."

    _grow_to_medium(memoir, path, claude_fixtures)
    assert path.stat().st_size == 41069
    model.queue("Refreshed summary.")
    report = run_pass(memoir, limit=10, now_ms=NOW_MS, model=model)
    assert (report.resummarized, model.calls) == (1, 2)
    assert summary_file(path).read_text() == HEADER_8237.replace("8237", "41069") + (
        "Refreshed summary."
    )

    report = run_pass(memoir, limit=10, now_ms=NOW_MS + HOUR_MS, model=model)
    assert model.calls == 2  # no growth: no model call
    assert (report.summarized, report.resummarized, report.failed) == (0, 0, 0)


def test_failing_resummary_backs_off_gives_up_and_keeps_the_body(home, claude_fixtures) -> None:
    memoir = make_memoir(home)  # floor 1 h, max 5 attempts
    path = _tiny(memoir, claude_fixtures)
    run_pass(memoir, limit=10, now_ms=NOW_MS, model=ScriptedModel(["Good summary."]))
    _grow_to_medium(memoir, path, claude_fixtures)
    failing = ScriptedModel(default=Transient("provider down"))

    t = NOW_MS
    for attempt in range(1, 6):
        report = run_pass(memoir, limit=10, now_ms=t, model=failing)
        assert (report.failed, failing.calls) == (1, attempt)
        state = parse_summary_file(summary_file(path).read_text())
        assert state.kind is SummaryKind.REAL and state.body == "Good summary."
        assert state.failure == Failure(attempt, t)
        assert state.coverage is not None and state.coverage.amount == 8237
        assert report.gave_up == (1 if attempt == 5 else 0)
        held = run_pass(memoir, limit=10, now_ms=t + HOUR_MS // 2, model=failing)
        assert (held.backing_off, failing.calls) == ((0, 5) if attempt == 5 else (1, attempt))
        t += HOUR_MS

    later = run_pass(memoir, limit=10, now_ms=t + 1000 * HOUR_MS, model=failing)
    append(path, b'{"type":"summary","summary":"x"}\n')  # growth after giving up changes nothing
    grown = run_pass(memoir, limit=10, now_ms=t + 1001 * HOUR_MS, model=failing)
    assert (later.given_up_total, grown.given_up_total, failing.calls) == (1, 1, 5)
    assert parse_summary_file(summary_file(path).read_text()).body == "Good summary."


def test_first_failures_use_the_sentinel_and_success_clears_it(home, claude_fixtures) -> None:
    memoir = make_memoir(home)
    path = _tiny(memoir, claude_fixtures)
    run_pass(memoir, limit=10, now_ms=NOW_MS, model=ScriptedModel([Transient("down")]))
    text = summary_file(path).read_text()
    assert text == f'__ERRORED__\n{{"attempts":1,"lastAttempt":{NOW_MS}}}\nTransient: down\n'
    ok = ScriptedModel(["Now it works."])
    assert run_pass(memoir, limit=10, now_ms=NOW_MS + 10, model=ok).backing_off == 1
    assert ok.calls == 0
    report = run_pass(memoir, limit=10, now_ms=NOW_MS + HOUR_MS, model=ok)
    assert report.summarized == 1
    assert summary_file(path).read_text() == HEADER_8237 + "Now it works."


def test_legacy_sentinel_backs_off_from_its_timestamp(home, claude_fixtures) -> None:
    memoir = make_memoir(home)
    path = _tiny(memoir, claude_fixtures)
    summary_file(path).write_text("__ERRORED__\n2025-12-31T23:30:00.000Z\nold failure\n")
    model = ScriptedModel(["Recovered."])
    assert run_pass(memoir, limit=10, now_ms=NOW_MS, model=model).backing_off == 1
    report = run_pass(memoir, limit=10, now_ms=NOW_MS + HOUR_MS, model=model)
    assert report.summarized == 1 and model.calls == 1


def _failing_fleet(memoir: FakeMemoir, count: int) -> list[str]:
    ids = [f"conv-{i:02d}" for i in range(count)]
    for sid in ids:
        memoir.store.index_file(archive(memoir.settings.home, sid, conversation(sid, 3)))
    return ids


def test_twelve_failing_with_limit_ten(home) -> None:
    memoir = make_memoir(home)
    _failing_fleet(memoir, 12)
    failing = ScriptedModel(default=Transient("down"))
    first = run_pass(memoir, limit=10, now_ms=NOW_MS, model=failing)
    assert (first.failed, first.deferred, failing.calls) == (10, 2, 10)
    second = run_pass(memoir, limit=10, now_ms=NOW_MS + 1, model=failing)
    assert (second.failed, second.backing_off, failing.calls) == (2, 10, 12)
    handled = {r.session_id for r in first.rows} | {r.session_id for r in second.rows}
    assert len(handled) == 12


def test_fresh_conversations_go_before_retries(home) -> None:
    memoir = make_memoir(home)
    failing_ids = _failing_fleet(memoir, 4)
    run_pass(memoir, limit=10, now_ms=NOW_MS, model=ScriptedModel(default=Transient("x")))
    memoir.store.index_file(archive(home, "zz-fresh", conversation("zz-fresh", 3)))
    model = ScriptedModel(default="Fine.")
    report = run_pass(memoir, limit=1, now_ms=NOW_MS + 2 * HOUR_MS, model=model)
    assert [r.session_id for r in report.rows] == ["zz-fresh"]
    assert report.deferred == len(failing_ids)


def test_conversations_in_progress_do_not_use_the_limit(home) -> None:
    memoir = make_memoir(home)
    now = datetime.fromtimestamp(NOW_MS / 1000, tz=UTC)
    for i in range(3):  # active: last exchange minutes ago
        sid = f"active-{i}"
        data = conversation(sid, 3, start=now - timedelta(minutes=20))
        memoir.store.index_file(archive(home, sid, data))
    for i in range(2):
        sid = f"idle-{i}"
        memoir.store.index_file(archive(home, sid, conversation(sid, 3)))
    model = ScriptedModel(default="Done.")
    report = run_pass(memoir, limit=2, now_ms=NOW_MS, model=model)
    assert (report.summarized, report.skipped_not_idle, report.deferred) == (2, 3, 0)
    assert sorted(r.session_id for r in report.rows) == ["idle-0", "idle-1"]
    later = run_pass(memoir, limit=10, now_ms=NOW_MS + 2 * HOUR_MS, model=model)
    assert later.summarized == 3


def test_legacy_summary_gets_a_baseline_without_a_call(home, claude_fixtures) -> None:
    memoir = make_memoir(home)
    path = _tiny(memoir, claude_fixtures)
    summary_file(path).write_text("An old episodic-memory summary.")
    model = ScriptedModel()
    report = run_pass(memoir, limit=10, now_ms=NOW_MS, model=model)
    assert (report.stamped, model.calls) == (1, 0)
    assert summary_file(path).read_text() == (
        '__COVERAGE__ {"bytes":8237,"schema":1}\nAn old episodic-memory summary.'
    )
    assert run_pass(memoir, limit=10, now_ms=NOW_MS, model=model).stamped == 0


def test_zero_exchanges_write_an_empty_file_and_skip_forever(home) -> None:
    memoir = make_memoir(home)
    snapshot = b'{"type":"file-history-snapshot","messageId":"m","snapshot":{}}\n'
    path = archive(home, "meta-only", snapshot)
    memoir.store.index_file(path)
    model = ScriptedModel()
    assert run_pass(memoir, limit=10, now_ms=NOW_MS, model=model).empty == 1
    assert summary_file(path).read_text() == ""
    append(path, conversation("meta-only", 2))
    memoir.store.index_file(path)
    run_pass(memoir, limit=10, now_ms=NOW_MS, model=model)
    assert model.calls == 0 and summary_file(path).read_text() == ""


def test_unindexed_conversation_is_left_for_later(home) -> None:
    memoir = make_memoir(home)
    path = archive(home, "not-yet", conversation("not-yet", 3))
    report = run_pass(memoir, limit=10, now_ms=NOW_MS, model=ScriptedModel())
    assert report.unindexed == 1 and not summary_file(path).exists()


def test_database_adapter_counts_events(home) -> None:
    memoir = make_memoir(home, summary_store="database")
    path = archive(home, "api-1", conversation("api-1", 3))
    events = memoir.store.index_file(path)
    model = ScriptedModel(["One.", Transient("down"), "Two."])
    assert run_pass(memoir, limit=10, now_ms=NOW_MS, model=model).summarized == 1
    row = memoir.store.rows["api-1"]
    assert (row.kind, row.covered, row.body) == ("real", len(events), "One.")
    assert not summary_file(path).exists()

    append(path, conversation("api-1", 2, start=datetime(2025, 9, 20, tzinfo=UTC)))
    grown = memoir.store.index_file(path)
    failed = run_pass(memoir, limit=10, now_ms=NOW_MS, model=model)
    row = memoir.store.rows["api-1"]
    assert failed.failed == 1 and (row.body, row.resummary_attempts) == ("One.", 1)
    done = run_pass(memoir, limit=10, now_ms=NOW_MS + HOUR_MS, model=model)
    row = memoir.store.rows["api-1"]
    assert done.resummarized == 1
    assert (row.covered, row.body, row.resummary_attempts) == (len(grown), "Two.", None)
    assert row.model == "scripted:test"


def test_an_unexpected_error_is_recorded_and_does_not_starve_the_queue(home) -> None:
    memoir = make_memoir(home)
    for sid in ("a-broken", "b-fine"):
        memoir.store.index_file(archive(home, sid, conversation(sid, 3)))

    def reply(request) -> str:
        if "Question 0" in request.messages[-1].content and "broken" not in str(request.meta):
            return "Fine."
        raise KeyError("bug in a provider adapter")

    report = run_pass(memoir, limit=10, now_ms=NOW_MS, model=ScriptedModel(default=reply))
    assert (report.failed, report.summarized) == (1, 1)
    broken = parse_summary_file(next((home / "archive").glob("*/a-broken-summary.txt")).read_text())
    assert broken.kind is SummaryKind.ERRORED and broken.failure.attempts == 1
    assert "KeyError" in (broken.message or "")


def test_empty_and_unindexed_conversations_do_not_use_the_limit(home) -> None:
    memoir = make_memoir(home)
    snapshot = b'{"type":"file-history-snapshot","messageId":"m","snapshot":{}}\n'
    for i in range(3):
        memoir.store.index_file(archive(home, f"a-empty-{i}", snapshot))
    archive(home, "b-unindexed", conversation("b-unindexed", 2))
    memoir.store.index_file(archive(home, "c-real", conversation("c-real", 2)))
    model = ScriptedModel(default="Real.")
    report = run_pass(memoir, limit=1, now_ms=NOW_MS, model=model)
    assert (report.empty, report.unindexed, report.summarized, report.deferred) == (3, 1, 1, 0)


def test_api_session_without_events_is_not_empty_forever(home) -> None:
    from memoir.model import Harness, Session

    memoir = make_memoir(home, summary_store="database")
    memoir.store.session_rows["api"] = Session("api", "p", Harness.API)
    model = ScriptedModel(default="Later.")
    report = run_pass(memoir, limit=10, now_ms=NOW_MS, model=model)
    assert report.unindexed == 1 and "api" not in memoir.store.rows
    path = archive(home, "api", conversation("api", 2))
    memoir.store.index_file(path, project="p")
    assert run_pass(memoir, limit=10, now_ms=NOW_MS, model=model).summarized == 1
    assert memoir.store.rows["api"].body == "Later."


def test_database_adapter_gates_on_the_last_event(home) -> None:
    memoir = make_memoir(home, summary_store="database")
    now = datetime.fromtimestamp(NOW_MS / 1000, tz=UTC)
    data = conversation("live", 3, start=now - timedelta(minutes=30))
    memoir.store.index_file(archive(home, "live", data))
    model = ScriptedModel(default="Done.")
    assert run_pass(memoir, limit=10, now_ms=NOW_MS, model=model).skipped_not_idle == 1
    assert model.calls == 0
    later = run_pass(memoir, limit=10, now_ms=NOW_MS + HOUR_MS, model=model)
    assert later.summarized == 1


def test_an_account_problem_stops_the_pass_and_charges_no_conversation(home) -> None:
    from memoir.llm.port import OutOfCredit, RateLimited, Unauthorized, UnknownModel

    memoir = make_memoir(home)
    _failing_fleet(memoir, 4)
    for error, setting in (
        (Unauthorized("HTTP 401"), True),
        (OutOfCredit("no credit"), True),
        (UnknownModel("HTTP 404: The model `gpt-typo` does not exist"), True),
    ):
        model = ScriptedModel(default=error)
        report = run_pass(memoir, limit=10, now_ms=NOW_MS, model=model)
        assert model.calls == 1  # the first one says it; the other three are not tried
        assert (report.failed, report.gave_up, report.deferred) == (0, 0, 4)
        assert report.stopped.startswith(type(error).__name__)
        assert report.stopped_by_setting is setting
    limited = ScriptedModel(default=RateLimited("quota", retry_after=3600))
    report = run_pass(memoir, limit=10, now_ms=NOW_MS, model=limited)
    assert report.stopped.startswith("RateLimited") and not report.stopped_by_setting
    fixed = ScriptedModel(default="A fine summary of the conversation.")
    after = run_pass(memoir, limit=10, now_ms=NOW_MS, model=fixed)
    assert after.summarized == 4 and after.given_up_total == 0  # nothing was held against them


def test_a_failure_is_stamped_when_it_happened_not_when_the_pass_began(home, monkeypatch) -> None:
    import memoir.summaries.summary_pass as summary_pass

    memoir = make_memoir(home)
    ids = _failing_fleet(memoir, 2)
    clock = iter(range(10_000, 10_000_000, 1_000))  # seconds: each reading 1,000 s later
    monkeypatch.setattr(summary_pass.time, "time", lambda: float(next(clock)))
    run_pass(memoir, limit=10, model=ScriptedModel(default=Transient("down")))
    stamps = []
    for sid in ids:
        path = summary_file(home / "archive" / PROJECT / f"{sid}.jsonl")
        state = parse_summary_file(path.read_text(encoding="utf-8"))
        assert state.failure is not None
        stamps.append(state.failure.last_attempt_ms)
    assert min(stamps) > 10_000 * 1000  # later than the pass's start
    assert len(set(stamps)) == 2  # each at its own time


def test_progress_names_each_conversation_before_it_is_summarized(home) -> None:
    """The pass tells its caller which conversation it is on and how many of how many;
    the total shrinks by one that needs no summary (not indexed yet), so both meet."""
    from memoir.summaries.summary_pass import PassProgress

    memoir = make_memoir(home)
    archive(home, "a-unindexed", conversation("a-unindexed", 3))  # archived, not indexed
    for sid in ("b-idle", "c-idle"):
        memoir.store.index_file(archive(home, sid, conversation(sid, 3)))
    seen: list[PassProgress] = []
    model = ScriptedModel(default="Done.")
    report = run_pass(memoir, limit=10, now_ms=NOW_MS, model=model, progress=seen.append)
    assert (report.summarized, report.unindexed) == (2, 1)
    assert [(p.done, p.total, p.session_id) for p in seen] == [
        (0, 3, "a-unindexed"),
        (0, 2, "b-idle"),
        (1, 2, "c-idle"),
        (2, 2, ""),
    ]
    assert {p.project for p in seen[:-1]} == {PROJECT}
    again: list[PassProgress] = []  # only the unindexed one is due again: none to summarize
    run_pass(memoir, limit=10, now_ms=NOW_MS, model=model, progress=again.append)
    assert [(p.done, p.total, p.session_id) for p in again] == [(0, 1, "a-unindexed"), (0, 0, "")]
    quiet: list[PassProgress] = []  # nothing due at all: nothing told
    run_pass(
        make_memoir(home / "other"), limit=10, now_ms=NOW_MS, model=model, progress=quiet.append
    )
    assert quiet == []
