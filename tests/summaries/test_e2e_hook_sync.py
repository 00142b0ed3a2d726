"""The hook's side of sync: the single-instance lock, the off switch, a background run
started exactly as Claude Code starts it (the installed hook's command)."""

from __future__ import annotations

import json
import os
import subprocess
import time
from pathlib import Path

import pytest

from memoir.cli.app import main

from .helpers import TINY_ID

cmd_sync = pytest.importorskip("memoir.cli.cmd_sync")
lock = pytest.importorskip("memoir.ingest.archive")

PROJECT = "-Users-testuser-example-project"


@pytest.fixture
def env(tmp_path: Path, claude_fixtures: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    source = tmp_path / "projects" / PROJECT
    source.mkdir(parents=True)
    (source / f"{TINY_ID}.jsonl").write_bytes(
        (claude_fixtures / "tiny-conversation.jsonl").read_bytes()
    )
    home = tmp_path / "home"
    monkeypatch.setenv("MEMOIR_HOME", str(home))
    monkeypatch.setenv("MEMOIR_SOURCES", str(tmp_path / "projects"))
    return home


def _summary(home: Path) -> Path:
    return home / "archive" / PROJECT / f"{TINY_ID}-summary.txt"


def test_a_second_sync_leaves_the_running_one_alone(env: Path, capsys) -> None:
    env.mkdir()
    with lock.sync_lock(env):
        main(["sync"])
    assert "another memoir sync is running" in capsys.readouterr().out
    assert not (env / "archive").exists()
    main(["sync", "--json"])  # lock released: this one runs
    capsys.readouterr()
    assert _summary(env).read_text().startswith('__COVERAGE__ {"bytes":8237,')


def test_off_switch_does_no_work(env: Path, capsys, monkeypatch) -> None:
    monkeypatch.setenv("MEMOIR_SYNC_DISABLED", "1")
    main(["sync"])
    assert "disabled" in capsys.readouterr().out
    assert not (env / "archive").exists()


@pytest.mark.slow
def test_installed_hook_command_syncs_in_the_background(env: Path, tmp_path: Path, capsys) -> None:
    settings = tmp_path / "claude-settings.json"
    main(["hook", "install", "--settings", str(settings), "--json"])
    capsys.readouterr()
    (group,) = json.loads(settings.read_text())["hooks"]["SessionStart"]
    command = group["hooks"][0]["command"]
    started = subprocess.run(  # as Claude Code runs it: through a shell
        command, shell=True, env=dict(os.environ), capture_output=True, text=True, timeout=60
    )
    assert started.returncode == 0, started.stderr
    assert started.stdout == ""  # nothing lands in the agent's context
    deadline = time.monotonic() + 90
    while not _summary(env).exists() and time.monotonic() < deadline:
        time.sleep(0.2)
    assert _summary(env).read_text().startswith('__COVERAGE__ {"bytes":8237,')
    logs = list((env / "logs").glob("sync-*.log"))
    assert len(logs) == 1


def test_stats_and_verify_show_summaries(env: Path, capsys) -> None:
    main(["sync", "--json"])
    capsys.readouterr()
    main(["stats", "--json"])
    stats = json.loads(capsys.readouterr().out)
    assert stats["summaries_summarized"] == 1 and stats["summaries_pending"] == 0
    summary = _summary(env)
    summary.write_text('__ERRORED__\n{"attempts":2,"lastAttempt":1}\nrate limited\n')
    main(["stats", "--json"])
    assert json.loads(capsys.readouterr().out)["summaries_errored"] == 1
    main(["verify", "--json"])
    warnings = json.loads(capsys.readouterr().out)["warnings"]
    assert any(w["kind"] == "errored_summary" and "rate limited" in w["detail"] for w in warnings)
