"""`memoir summarize` and summarize_session end to end on a real store, with the offline
model (and a long history built from the real Claude Code fixtures)."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Any

import pytest

from memoir import service
from memoir.app import Memoir
from memoir.config import Settings
from memoir.errors import OversizedHistory, SummaryError
from memoir.llm import ScriptedModel
from memoir.llm.port import MemorySink, Metered, Purpose, Refused, Transient, Truncated
from memoir.model import Event, Harness, Session
from memoir.store.values import IngestBatch
from memoir.summaries.episodic import EpisodicSummarizer
from memoir.summaries.session import TRACE_KIND, Previous, find_previous, summarize_session

from .episode_helpers import Oracle, marked_history, transcript_of


@pytest.fixture
def memoir(settings: Settings, monkeypatch: pytest.MonkeyPatch) -> Any:
    monkeypatch.setenv("MEMOIR_HOME", str(settings.home))
    monkeypatch.setenv("MEMOIR_USER", "alice")  # the CLI acts for the sessions' owner
    m = Memoir.open(settings, user="alice")
    yield m
    m.close()


def previous_of(memoir: Any, sid: str = "s1") -> Previous | None:
    return find_previous(
        service.summary_store(memoir), memoir.store, sid, memoir.store.events.of(sid)
    )


def add_session(memoir: Any, events: list[Event], sid: str = "s1") -> None:
    events = [dataclasses.replace(e, session_id=sid) for e in events]
    session = Session(id=sid, project="p", harness=Harness.API, user="alice")
    memoir.store.ingest.apply(IngestBatch(session=session, events=tuple(events)))


def run_cli(args: list[str]) -> int:
    from memoir.cli.app import main

    try:
        main(args)
    except SystemExit as exc:
        return int(exc.code or 0)
    return 0


def fixture_history(claude_fixtures: Path, repeat: int) -> list[Event]:
    from memoir.ingest.discover import Format
    from memoir.ingest.reader import read_bytes

    base: list[Event] = []
    for name in ("tiny-conversation.jsonl", "short-conversation.jsonl"):
        base.extend(read_bytes((claude_fixtures / name).read_bytes(), Format.CLAUDE).events)
    out: list[Event] = []
    for rep in range(repeat):
        for e in base:
            call = f"{e.call_id}-{rep}" if e.call_id else None
            out.append(dataclasses.replace(e, ordinal=len(out) + 1, call_id=call))
    return out


@pytest.mark.slow
def test_cli_summarizes_a_long_real_transcript_with_the_offline_model(
    memoir: Any, claude_fixtures: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    history = fixture_history(claude_fixtures, 6)
    add_session(memoir, history, "67a8478e-long")
    assert run_cli(["summarize", "67a8478e", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["saved"] is True and out["mode"] == "full"
    summary = out["summary"]
    # repeated fixture text makes identical episodes: those are cache hits within the run
    assert summary["episodes"] >= 4
    assert out["calls"] + summary["cache_hits"] == summary["episodes"] + 1
    assert summary["model"] == "offline" and summary["last_ordinal"] == len(history)
    assert "tentative" in summary["text"] or "tentative" in json.dumps(summary["data"])
    from memoir.summaries.persist import read_summary_body

    assert (
        read_summary_body(service.summary_store(memoir), memoir.store, "67a8478e-long")
        == summary["text"].strip()
    )
    purposes = {r.purpose for r in memoir.store.usage.records()}
    assert {"episode", "merge"} <= purposes
    # a second run has nothing new; --full rebuilds from the cache at the cost of one merge
    assert run_cli(["summarize", "67a8478e-long", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["summary"] is None
    assert run_cli(["summarize", "67a8478e-long", "--full", "--json"]) == 0
    again = json.loads(capsys.readouterr().out)
    assert again["calls"] == 1 and again["summary"]["cache_hits"] == summary["episodes"]
    assert run_cli(["summarize", "67a8478e-long", "--full", "--no-cache", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["calls"] == summary["episodes"] + 1


def test_incremental_merges_only_the_new_events(memoir: Any) -> None:
    add_session(memoir, marked_history(4))
    model = ScriptedModel(default=Oracle())
    summarizer = EpisodicSummarizer(model, episode_tokens=300)
    summaries = service.summary_store(memoir)
    first = summarize_session(memoir.store, summaries, "s1", summarizer=summarizer)
    assert first.mode == "full" and first.saved and first.calls == 5
    add_session(memoir, marked_history(6)[8:])
    before = model.calls
    second = summarize_session(memoir.store, summaries, "s1", summarizer=summarizer)
    assert second.mode == "incremental" and second.calls == 3
    sent = [r for r in model.requests[before:] if r.meta.purpose is Purpose.EPISODE]
    assert sorted(transcript_of(r)[:11] for r in sent) == ["User: MARK4", "User: MARK5"]
    merge = model.requests[-1].messages[-1].content
    assert "<previous_summary>" in merge and "summary of merge of 4" in merge
    assert model.requests[-1].meta.user == "alice"
    traces = memoir.store.traces.find("s1", TRACE_KIND)
    assert [t.data["last_ordinal"] for t in traces] == [8, 12]


def test_auto_mode_does_an_oversized_history_in_rounds(memoir: Any) -> None:
    add_session(memoir, marked_history(6))
    model = ScriptedModel(default=Oracle())
    summarizer = EpisodicSummarizer(model, episode_tokens=300, max_full_tokens=600)
    summaries = service.summary_store(memoir)
    with pytest.raises(OversizedHistory):
        summarize_session(memoir.store, summaries, "s1", mode="full", summarizer=summarizer)
    run = summarize_session(memoir.store, summaries, "s1", summarizer=summarizer)
    assert run.mode == "incremental" and run.rounds == 3 and run.calls == 9
    assert run.summary is not None and run.summary.last_ordinal == 12
    assert previous_of(memoir) is not None


@pytest.mark.parametrize("meanwhile", ["marked stale", "deleted", "replaced"])
def test_an_episodic_trace_is_history_once_its_summary_is_not_the_saved_one(
    memoir: Any, meanwhile: str
) -> None:
    """A rewritten transcript (summary marked stale), a summary deleted by hand, or one the
    summary pass wrote since: the next run must not merge into the old trace's data."""
    from memoir.summaries.persist import mark_summary_stale, save_summary

    add_session(memoir, marked_history(4))
    summarizer = EpisodicSummarizer(ScriptedModel(default=Oracle()), episode_tokens=300)
    summaries = service.summary_store(memoir)
    assert summarize_session(memoir.store, summaries, "s1", summarizer=summarizer).mode == "full"
    assert previous_of(memoir).source == "trace"
    if meanwhile == "marked stale":
        assert mark_summary_stale(summaries, memoir.store, "s1")
    elif meanwhile == "deleted":
        from memoir.summaries.persist import forget_summary

        forget_summary(memoir.settings.archive_dir, memoir.store.summaries, "s1", "p")
    else:
        save_summary(summaries, memoir.store, "s1", "what the summary pass wrote since", model="m")
    previous = previous_of(memoir)
    if meanwhile == "replaced":
        assert previous is not None and previous.source == "summary"
        assert previous.summary == "what the summary pass wrote since"
    else:
        assert previous is None
        again = summarize_session(memoir.store, summaries, "s1", summarizer=summarizer)
        assert again.mode == "full" and again.saved


def test_previous_coverage_falls_back_to_the_saved_summary(memoir: Any) -> None:
    from memoir.summaries.persist import save_summary

    add_session(memoir, marked_history(2))
    save_summary(service.summary_store(memoir), memoir.store, "s1", "an older summary", model="m")
    previous = previous_of(memoir)
    assert previous is not None and previous.source == "summary"
    assert previous.summary == "an older summary" and previous.last_ordinal == 4


def test_cli_failure_is_one_line_and_nonzero(
    memoir: Any, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    add_session(memoir, marked_history(2))
    refusing = ScriptedModel(default=Oracle({(Purpose.EPISODE, None): [Refused("ToS")] * 9}))
    monkeypatch.setattr(Memoir, "_model", lambda self: refusing)
    monkeypatch.setattr(Memoir, "_fallback_model", lambda self: None)
    assert run_cli(["summarize", "s1"]) == 1
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and "no fallback attempted" in err and "Traceback" not in err


def test_the_facade_retry_wrapper_is_peeled_so_the_budget_sees_every_attempt(
    memoir: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    from memoir.llm.wiring import Retrying, RetryPolicy

    add_session(memoir, marked_history(1))
    flaky = ScriptedModel(default=Oracle({(Purpose.EPISODE, None): [Transient("503")] * 20}))
    wrapped = Retrying(flaky, RetryPolicy(attempts=3), sleep=lambda s: None)
    monkeypatch.setattr(Memoir, "_model", lambda self: wrapped)
    monkeypatch.setattr(Memoir, "_fallback_model", lambda self: None)
    monkeypatch.setattr("memoir.summaries.calls.time.sleep", lambda s: None)
    with pytest.raises(SummaryError, match="failed 3 times"):
        memoir.summarize("s1")
    assert flaky.calls == 3  # the summarizer's own retries, each counted in the budget


def test_cli_unknown_session_and_conflicting_flags(
    memoir: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    assert run_cli(["summarize", "nope"]) == 1
    assert "no session 'nope'" in capsys.readouterr().err
    add_session(memoir, marked_history(1))
    assert run_cli(["summarize", "s1", "--full", "--incremental"]) == 2


def test_every_call_of_a_failed_run_is_in_the_ledger_with_its_caller() -> None:
    sink = MemorySink()
    oracle = Oracle(
        {
            (Purpose.EPISODE, "MARK1"): [Truncated("cut", partial="{")],
            (Purpose.HALF, "answer about MARK1"): [Refused("no")],
        }
    )
    model = Metered(ScriptedModel(default=oracle), sink)
    fallback = Metered(ScriptedModel([Refused("no")], name="fb:x"), sink)
    summarizer = EpisodicSummarizer(model, fallback=fallback, episode_tokens=300, concurrency=1)
    with pytest.raises(SummaryError, match="refused it too"):
        summarizer.summarize(marked_history(2), session="s9", job_id="j9")
    assert [(r.purpose, r.model, r.outcome) for r in sink.records] == [
        ("episode", "test", "ok"),  # partial successful work is recorded (and billed)
        ("episode", "test", "Truncated"),
        ("half", "test", "ok"),
        ("half", "test", "Refused"),
        ("half", "x", "Refused"),  # the same request on the fallback: its model tells
    ]
    assert all(r.session == "s9" and r.job_id == "j9" for r in sink.records)


def test_cli_full_beyond_the_configured_guard_points_to_incremental(
    memoir: Any, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    add_session(memoir, marked_history(6))
    monkeypatch.setenv("MEMOIR_EPISODE_TOKENS", "300")
    monkeypatch.setenv("MEMOIR_EPISODE_MAX_FULL_TOKENS", "600")
    assert run_cli(["summarize", "s1", "--full"]) == 1
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and "--incremental" in err and "600 tokens" in err
    assert run_cli(["summarize", "s1", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["mode"] == "incremental" and out["rounds"] == 3 and out["saved"]
    assert out["summary"]["last_ordinal"] == 12


def test_one_summary_writer_per_session(
    memoir: Any, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """A second `memoir summarize` (or the summary pass) of a session another process is
    summarizing stands aside instead of paying for the same calls again."""
    from memoir.store.db import summary_claim

    from ..helpers import run_pass

    add_session(memoir, marked_history(1))
    model = ScriptedModel(default=Oracle({}))
    monkeypatch.setattr(Memoir, "_model", lambda self: model)
    with memoir.store.claims.hold(*summary_claim("s1")):  # as another process would hold it
        assert run_cli(["summarize", "s1", "--json"]) == 0
        out = json.loads(capsys.readouterr().out)
        assert out["busy"] is True and "being summarized by another process" in out["message"]
        rows = dataclasses.replace(memoir.settings, summary_store="database")
        with Memoir.open(rows) as other:  # a second process's view of the same home
            report = run_pass(other, limit=5, model=model, now_ms=2**45)
        assert (report.busy, report.summarized, model.calls) == (1, 0, 0)
        assert [r.outcome for r in report.rows] == ["busy"]
    assert run_cli(["summarize", "s1", "--json"]) == 0  # free again: it runs
    assert json.loads(capsys.readouterr().out)["saved"] is True and model.calls > 0


def test_events_a_sync_adds_during_a_run_stay_uncovered(memoir: Any) -> None:
    """Coverage is measured before the events are read: what arrives while the model runs
    was not summarized and must leave the conversation due again."""
    from memoir.summaries.persist import read_summary_state

    add_session(memoir, marked_history(2))
    before = len(memoir.store.events.of("s1"))
    inner = ScriptedModel(default=Oracle())
    grown: list[int] = []

    class SyncMeanwhile:
        name = inner.name

        def complete(self, request: Any) -> Any:
            if not grown:
                later = marked_history(3)[before:]
                add_session(memoir, later)
                grown.append(len(later))
            return inner.complete(request)

    summarizer = EpisodicSummarizer(SyncMeanwhile(), episode_tokens=300)  # type: ignore[arg-type]
    run = summarize_session(
        memoir.store, service.summary_store(memoir), "s1", summarizer=summarizer
    )
    assert run.saved and grown and grown[0] > 0
    state = read_summary_state(service.summary_store(memoir), memoir.store, "s1")
    assert state.coverage is not None and state.coverage.amount == before
    assert len(memoir.store.events.of("s1")) > before


def test_each_round_reads_a_window_not_all_that_is_left(memoir: Any) -> None:
    """Rounds of a long history: each is handed the start of what is left (enough for
    one round), not all of it again — quadratic at thousands of exchanges."""
    from memoir.summaries.session import _round_window

    add_session(memoir, marked_history(6))
    model = ScriptedModel(default=Oracle())
    summarizer = EpisodicSummarizer(model, episode_tokens=300, max_full_tokens=600)
    handed: list[int] = []
    real = summarizer.summarize

    def spy(history: Any, **kw: Any) -> Any:
        handed.append(len(list(history)))
        return real(history, **kw)

    summarizer.summarize = spy  # type: ignore[method-assign]
    events = memoir.store.events.of("s1")
    window = _round_window(events, 10)  # 120 characters: a few events
    assert 0 < len(window) < len(events)
    assert _round_window(events, 10**6) == events
    run = summarize_session(
        memoir.store, service.summary_store(memoir), "s1", summarizer=summarizer
    )
    assert run.summary is not None and run.summary.last_ordinal == events[-1].ordinal
    assert handed[0] == len(events) and run.rounds >= 2  # the full try, then rounds
