"""End to end: real store, real ingest sync, then the summary pass (issue point 10).

The transcripts live in a temp "~/.claude/projects"; sync archives and indexes them; the
pass summarizes with a scripted model. When the ``memoir sync`` command exists the same
scenario also runs through the CLI (test_cli_sync_runs_the_pass).
"""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pytest

from memoir import service
from memoir.app import Memoir
from memoir.config import Settings
from memoir.llm import ScriptedModel
from memoir.llm.port import Transient
from memoir.summaries.persist import read_summary_state
from memoir.summaries.state import SummaryKind, parse_summary_file

from .helpers import HOUR_MS, NOW_MS, TINY_ID, conversation, run_pass

ingest_sync = pytest.importorskip("memoir.ingest.sync")

PROJECT = "-Users-testuser-example-project"


@pytest.fixture
def setup(tmp_path: Path, claude_fixtures: Path):
    source = tmp_path / "projects"
    (source / PROJECT).mkdir(parents=True)
    home = tmp_path / "home"
    settings = Settings.from_env({"MEMOIR_HOME": str(home)}, sources=(source,))
    memoir = Memoir.open(settings)
    yield memoir, source / PROJECT, claude_fixtures
    memoir.close()


def _sync(memoir: Memoir, model: ScriptedModel, now_ms: int, limit: int = 10):
    ingest_sync.sync(memoir.settings, memoir.store, observer=service.sync_observer(memoir))
    return run_pass(memoir, limit=limit, now_ms=now_ms, model=model)


def _summary(memoir: Memoir, sid: str) -> Path:
    return memoir.settings.archive_dir / PROJECT / f"{sid}-summary.txt"


def test_seed_scenario(setup) -> None:
    memoir, folder, fixtures = setup
    transcript = folder / f"{TINY_ID}.jsonl"
    transcript.write_bytes((fixtures / "tiny-conversation.jsonl").read_bytes())
    model = ScriptedModel(["Tentativeness, and a decision to act directly."])

    report = _sync(memoir, model, NOW_MS)
    assert (report.summarized, model.calls) == (1, 1)
    text = _summary(memoir, TINY_ID).read_text()
    assert text.startswith('__COVERAGE__ {"bytes":8237,"lastExchange":"2025-09-19T17:36:33.487Z"')
    assert (memoir.settings.archive_dir / PROJECT / f"{TINY_ID}.jsonl").stat().st_size == 8237

    with open(transcript, "ab") as handle:  # the conversation goes on
        handle.write((fixtures / "medium-conversation.jsonl").read_bytes())
    model.queue("Refreshed.")
    report = _sync(memoir, model, NOW_MS + 1)
    assert (report.resummarized, model.calls) == (1, 2)
    state = parse_summary_file(_summary(memoir, TINY_ID).read_text())
    assert state.coverage is not None and state.coverage.amount == 41069
    assert state.body == "Refreshed."

    report = _sync(memoir, model, NOW_MS + 2)
    assert model.calls == 2 and report.resummarized == 0


def test_always_failing_model_gives_up_and_keeps_the_body(setup) -> None:
    memoir, folder, fixtures = setup
    transcript = folder / f"{TINY_ID}.jsonl"
    transcript.write_bytes((fixtures / "tiny-conversation.jsonl").read_bytes())
    _sync(memoir, ScriptedModel(["Good."]), NOW_MS)
    with open(transcript, "ab") as handle:
        handle.write((fixtures / "medium-conversation.jsonl").read_bytes())
    failing = ScriptedModel(default=Transient("down"))
    for attempt in range(1, 8):
        _sync(memoir, failing, NOW_MS + attempt * HOUR_MS)
        state = parse_summary_file(_summary(memoir, TINY_ID).read_text())
        assert state.kind is SummaryKind.REAL and state.body == "Good."
        assert state.failure is not None and state.failure.attempts == min(attempt, 5)
    assert failing.calls == 5


def test_twelve_failing_then_fresh_first(setup) -> None:
    memoir, folder, _ = setup
    for i in range(12):
        sid = f"conv-{i:02d}"
        (folder / f"{sid}.jsonl").write_bytes(conversation(sid, 3))
    failing = ScriptedModel(default=Transient("down"))
    first = _sync(memoir, failing, NOW_MS)
    second = _sync(memoir, failing, NOW_MS + 1)
    assert (first.failed, second.failed, failing.calls) == (10, 2, 12)
    (folder / "zz-new.jsonl").write_bytes(conversation("zz-new", 3))
    ok = ScriptedModel(default="Fine.")
    third = _sync(memoir, ok, NOW_MS + 2 * HOUR_MS, limit=1)
    assert [r.session_id for r in third.rows] == ["zz-new"]


def test_database_adapter_end_to_end(tmp_path: Path, claude_fixtures: Path) -> None:
    source = tmp_path / "projects"
    (source / PROJECT).mkdir(parents=True)
    (source / PROJECT / f"{TINY_ID}.jsonl").write_bytes(
        (claude_fixtures / "tiny-conversation.jsonl").read_bytes()
    )
    settings = Settings.from_env(
        {"MEMOIR_HOME": str(tmp_path / "h"), "MEMOIR_SUMMARY_STORE": "database"},
        sources=(source,),
    )
    with Memoir.open(settings) as memoir:
        model = ScriptedModel(["From the database."])
        assert _sync(memoir, model, NOW_MS).summarized == 1
        row = memoir.store.summaries.get(TINY_ID)
        assert row is not None and row.body == "From the database."
        assert row.covered == len(memoir.store.events.of(TINY_ID)) > 0
        assert not _summary(memoir, TINY_ID).exists()
        assert _sync(memoir, model, NOW_MS + 1).summarized == 0 and model.calls == 1


@pytest.mark.skipif(
    importlib.util.find_spec("memoir.cli.cmd_sync") is None, reason="memoir sync not built yet"
)
def test_cli_sync_runs_the_pass(tmp_path: Path, claude_fixtures: Path, monkeypatch, capsys) -> None:
    """`memoir sync` with the offline model: the tiny fixture gets a summary stamped 8237."""
    from memoir.cli.app import main

    source = tmp_path / "projects" / PROJECT
    source.mkdir(parents=True)
    (source / f"{TINY_ID}.jsonl").write_bytes(
        (claude_fixtures / "tiny-conversation.jsonl").read_bytes()
    )
    home = tmp_path / "home"
    monkeypatch.setenv("MEMOIR_HOME", str(home))
    monkeypatch.setenv("MEMOIR_SOURCES", str(tmp_path / "projects"))
    main(["sync", "--json"])
    out = capsys.readouterr().out
    assert json.loads(out)  # a JSON report
    text = (home / "archive" / PROJECT / f"{TINY_ID}-summary.txt").read_text()
    assert text.startswith('__COVERAGE__ {"bytes":8237,')
    main(["sync", "--no-summaries", "--json"])
    capsys.readouterr()


def test_long_conversation_merges_incrementally(setup, monkeypatch) -> None:
    import memoir.summaries.summarizer as summarizer_mod

    monkeypatch.setattr(summarizer_mod, "SHORT_TOKEN_BUDGET", 300)
    memoir, folder, fixtures = setup
    transcript = folder / "long-1.jsonl"
    transcript.write_bytes(conversation("long-1", 8, words=60))

    def reply(request) -> str:
        return json.dumps({"narrative": f"Part {len(request.messages[-1].content)}."})

    model = ScriptedModel(default=reply)
    first = _sync(memoir, model, NOW_MS)
    assert first.summarized == 1 and model.calls >= 2
    calls = model.calls
    body = parse_summary_file(_summary(memoir, "long-1").read_text()).body
    assert body.startswith("Part")

    with open(transcript, "ab") as handle:  # bookkeeping only: no new event
        handle.write((fixtures / "medium-conversation.jsonl").read_bytes())
    second = _sync(memoir, model, NOW_MS + 1)
    state = parse_summary_file(_summary(memoir, "long-1").read_text())
    assert second.resummarized == 1 and model.calls == calls  # restamped, no call
    assert state.body == body and state.coverage.amount == transcript.stat().st_size

    with open(transcript, "ab") as handle:
        handle.write(conversation("long-1", 3, words=60).replace(b"Question", b"Later question"))
    third = _sync(memoir, model, NOW_MS + 2)
    assert third.resummarized == 1 and model.calls > calls
    merged = [r for r in model.requests[calls:] if "<previous_summary>" in r.messages[-1].content]
    assert merged, "the refresh merges into the previous summary"


@pytest.mark.parametrize("summary_store", ["files", "database"])
def test_a_rewritten_transcript_is_summarized_again(
    tmp_path: Path, claude_fixtures: Path, summary_store: str
) -> None:
    """A transcript rewritten with other, shorter content: its summary told of what is
    gone, so it no longer counts as current (it is kept until the new one is written)."""
    source = tmp_path / "projects"
    (source / PROJECT).mkdir(parents=True)
    transcript = source / PROJECT / f"{TINY_ID}.jsonl"
    transcript.write_bytes((claude_fixtures / "tiny-conversation.jsonl").read_bytes())
    settings = Settings.from_env(
        {"MEMOIR_HOME": str(tmp_path / "h"), "MEMOIR_SUMMARY_STORE": summary_store},
        sources=(source,),
    )
    with Memoir.open(settings) as memoir:
        model = ScriptedModel(["About the old content."])
        assert _sync(memoir, model, NOW_MS).summarized == 1
        transcript.write_bytes(conversation(TINY_ID, 2, words=3))  # smaller, other words
        model.queue("About the new content.")
        ingest_sync.sync(memoir.settings, memoir.store, observer=service.sync_observer(memoir))
        state = read_summary_state(service.summary_store(memoir), memoir.store, TINY_ID)
        assert state.body == "About the old content."
        assert state.coverage is not None and state.coverage.amount == 0
        report = run_pass(memoir, limit=10, now_ms=NOW_MS + 3 * HOUR_MS, model=model)
        assert (report.resummarized, model.calls) == (1, 2)
        state = read_summary_state(service.summary_store(memoir), memoir.store, TINY_ID)
        assert state.body == "About the new content."
