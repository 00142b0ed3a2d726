"""``MEMOIR_LLM=claude-code`` / ``codex`` through the real entry points with the fake CLIs
on PATH (:mod:`tests.llm.agent_fakes`): sync's summary pass and ``memoir summarize``
answer through the CLI, the ledger (``memoir usage``) has their tokens, and the sessions
those calls leave in the user's own transcript folders are never synced as the user's —
while the user's own sessions next to them are."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest

from cli_run import run_cli
from memoir import service
from memoir.app import Memoir
from memoir.config import Settings
from memoir.demo import ClaudeWriter, CodexWriter
from memoir.ingest.discover import FoundFile
from memoir.ingest.plan import Plan, Skip, plan_file
from memoir.ingest.sync import ignored_path
from memoir.llm.agent_providers import RUNS_FOLDER
from memoir.model.harness import claude_folder

from .agent_fakes import calls, install

CLAUDE_SID = "5ec7e7a1-0000-4000-8000-00000000c1a0"
CODEX_SID = "0199a213-81c0-7800-8aa1-bbab2a035a53"
NARRATIVE = "Found and fixed the flaky checkout test: the coupon window compared local time."
ANSWER = json.dumps({"narrative": NARRATIVE, "facts": ["the coupon window used local time"]})


def _user_claude_session(projects: Path) -> None:
    writer = ClaudeWriter(CLAUDE_SID, cwd="/home/ann/code/shop")
    writer.user("The checkout test fails at midnight, please find out why.")
    writer.assistant("The coupon window compares local time with UTC; I changed it to UTC.")
    writer.user("Great, the test passes now.")
    writer.assistant("Done: tests/test_checkout.py is green.")
    path = projects / claude_folder("/home/ann/code/shop") / f"{CLAUDE_SID}.jsonl"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(writer.bytes())


def _user_codex_session(sessions: Path) -> None:
    writer = CodexWriter(CODEX_SID, cwd="/home/ann/code/shop")
    writer.user("The checkout test fails at midnight, please find out why.")
    writer.assistant("The coupon window compares local time with UTC; I changed it to UTC.")
    path = sessions / "2025" / "10" / "15" / f"rollout-2025-10-15T14-00-00-{CODEX_SID}.jsonl"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(writer.bytes())


def _run(args: list[str], capsys: pytest.CaptureFixture[str]) -> str:
    code, out, err = run_cli(args, capsys)
    assert code == 0, out + err
    return out


@pytest.fixture
def agent_env(
    home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> tuple[Path, Path, Path]:
    """Fakes on PATH that leave their transcripts where the user's are; returns
    (call log, the ~/.claude/projects stand-in, the ~/.codex/sessions stand-in)."""
    bin_dir = tmp_path / "bin"
    install(bin_dir, "claude")
    install(bin_dir, "codex")
    monkeypatch.setenv("PATH", f"{bin_dir}:/usr/bin:/bin")
    log = tmp_path / "calls"
    monkeypatch.setenv("FAKE_AGENT_LOG", str(log))
    monkeypatch.setenv("FAKE_AGENT_MODE", "ok")
    monkeypatch.setenv("FAKE_AGENT_ANSWER", ANSWER)
    monkeypatch.setenv("MEMOIR_HOME", str(home))
    projects, sessions = tmp_path / "claude" / "projects", tmp_path / "codex" / "sessions"
    _user_claude_session(projects)
    _user_codex_session(sessions)
    return log, projects, sessions


@pytest.mark.parametrize("spec", ["claude-code:sonnet", "codex:gpt-5-codex"])
def test_summaries_through_the_agent_and_its_sessions_never_synced(
    agent_env: tuple[Path, Path, Path],
    home: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    spec: str,
) -> None:
    log, projects, sessions = agent_env
    monkeypatch.setenv("MEMOIR_LLM", spec)
    tool_sessions = projects if spec.startswith("claude-code") else sessions
    monkeypatch.setenv("FAKE_AGENT_TRANSCRIPTS", str(tool_sessions))
    sources = ["--source", str(projects), "--source", str(sessions)]

    first = json.loads(_run(["sync", *sources, "--no-summaries", "--json"], capsys))
    assert first["files_indexed"] == 2 and not calls(log)

    out = json.loads(_run(["summarize", CLAUDE_SID[:8], "--json", "--no-cache"], capsys))
    assert NARRATIVE in json.dumps(out)
    asked = calls(log)
    assert asked, "the agent CLI was not asked"
    assert all(c["cwd"] == str(home / RUNS_FOLDER) for c in asked)
    assert any("checkout test fails at midnight" in str(c["stdin"]) for c in asked)

    # the ledger has the agent's tokens, under its own name
    usage = json.loads(_run(["usage", "--json"], capsys))
    rows = [r for r in usage["totals"] if str(r["model"]).startswith(spec.split(":")[0])]
    assert rows and sum(r["calls"] for r in rows) == len(asked)
    per_call = (1312, 42) if spec.startswith("claude-code") else (2400, 88)
    assert sum(r["input_tokens"] for r in rows) == per_call[0] * len(asked)
    assert sum(r["output_tokens"] for r in rows) == per_call[1] * len(asked)

    # the CLI left a session transcript per call among the user's (the fake ignores the
    # flag that asks it not to): sync leaves every one of them out, the user's stay
    left = [p for p in tool_sessions.rglob("*.jsonl") if CLAUDE_SID not in p.name]
    left = [p for p in left if CODEX_SID not in p.name]
    assert len(left) == len(asked)
    second = json.loads(_run(["sync", *sources, "--no-summaries", "--json"], capsys))
    assert second["files_indexed"] == 0 and second["files_ignored"] == len(asked)
    ignored = json.loads(ignored_path(Settings.from_env()).read_text(encoding="utf-8"))
    assert sorted(ignored) == sorted(str(p) for p in left)
    assert {v["reason"] for v in ignored.values()} == {"memoir_agent"}
    with Memoir.open(Settings.from_env()) as memoir:
        stored = {i.session.id for i in memoir.store.sessions.recent()}
    assert stored == {CLAUDE_SID, CODEX_SID}
    # and the next sync passes them over on stat alone
    third = json.loads(_run(["sync", *sources, "--no-summaries", "--json"], capsys))
    assert third["files_ignored"] == len(asked) and third["files_indexed"] == 0


def test_the_summary_pass_of_sync_answers_through_claude_code(
    agent_env: tuple[Path, Path, Path],
    home: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    log, projects, _sessions = agent_env
    monkeypatch.setenv("MEMOIR_LLM", "claude-code")
    monkeypatch.setenv("FAKE_AGENT_TRANSCRIPTS", str(projects))
    report = json.loads(_run(["sync", "--source", str(projects), "--json"], capsys))
    asked = calls(log)
    assert asked and report["files_indexed"] == 1, report
    assert report["summaries"]["summarized"] == 1
    assert report["summaries"]["rows"][0]["detail"] == "claude-code:claude-sonnet-4-5-20250929"
    argv = asked[0]["argv"]
    assert isinstance(argv, list) and "--model" not in argv  # the CLI's default model
    assert "checkout test fails at midnight" in str(asked[0]["stdin"])
    with Memoir.open(Settings.from_env()) as memoir:
        stored = [i.session.id for i in memoir.store.sessions.recent()]
        summary = service.summary_body(memoir, CLAUDE_SID)
    assert stored == [CLAUDE_SID]
    assert summary is not None and NARRATIVE in summary
    # the next sync finds the session the call left, and leaves it out
    again = json.loads(_run(["sync", "--source", str(projects), "--json"], capsys))
    assert again["files_ignored"] == len(asked) and again["files_indexed"] == 0
    with Memoir.open(Settings.from_env()) as memoir:
        assert [i.session.id for i in memoir.store.sessions.recent()] == [CLAUDE_SID]


@pytest.mark.parametrize(
    ("cwd_of", "skipped"),
    [
        (lambda runs: str(runs), True),
        (lambda runs: str(runs / "nested"), True),
        (lambda runs: str(runs.resolve()), True),  # the physical path, home behind a link
        (lambda runs: str(runs) + "-mine", False),  # a name that only starts the same
        (lambda runs: "/home/ann/code/shop", False),
    ],
)
def test_plan_leaves_out_only_memoir_agent_runs(
    tmp_path: Path, cwd_of: Callable[[Path], str], skipped: bool
) -> None:
    real = tmp_path / "real-home"
    (real / RUNS_FOLDER).mkdir(parents=True)
    (tmp_path / "home").symlink_to(real)
    runs = tmp_path / "home" / RUNS_FOLDER
    for writer, name in (
        (ClaudeWriter(CLAUDE_SID, cwd=cwd_of(runs)), f"{CLAUDE_SID}.jsonl"),
        (CodexWriter(CODEX_SID, cwd=cwd_of(runs)), f"rollout-x-{CODEX_SID}.jsonl"),
    ):
        writer.user("Summarize: hello")
        path = tmp_path / "src" / "proj" / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(writer.bytes())
        with open(path, "rb") as fp:
            cand = FoundFile(path, tmp_path / "src", path.stat().st_size, 0)
            plan = plan_file(
                fp.fileno(),
                cand,
                None,
                archive_dir=tmp_path / "archive",
                exclude=(),
                owners={},
                agent_runs=runs,
            )
        if skipped:
            assert isinstance(plan, Skip) and plan.reason == "memoir_agent", plan
        else:
            assert isinstance(plan, Plan), plan
