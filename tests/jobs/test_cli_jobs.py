"""`memoir jobs list|show|cancel` and `memoir worker --help`."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from memoir import service

from .helpers import add_session, open_memoir


def run_cli(args: list[str]) -> int:
    from memoir.cli.app import main

    try:
        main(args)
    except SystemExit as exc:
        return int(exc.code or 0)
    return 0


def test_jobs_list_show_cancel(
    home: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("MEMOIR_HOME", str(home))
    with open_memoir(home) as m:
        add_session(m)
        job = service.regenerate_summary(m, "alice", "s1")
    assert run_cli(["jobs", "list", "--json"]) == 0  # the CLI acts for local: none of hers
    assert json.loads(capsys.readouterr().out)["jobs"] == []
    assert run_cli(["jobs", "show", job.id]) == 1
    assert f"no job {job.id!r}" in capsys.readouterr().err
    monkeypatch.setenv("MEMOIR_USER", "alice")
    assert run_cli(["jobs", "list", "--json"]) == 0
    listed = json.loads(capsys.readouterr().out)["jobs"]
    assert [j["id"] for j in listed] == [job.id] and listed[0]["state"] == "queued"
    assert run_cli(["jobs", "show", job.id, "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["user"] == "alice"
    assert run_cli(["jobs", "cancel", job.id, "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["state"] == "failed"
    assert run_cli(["jobs", "list", "--state", "queued", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["jobs"] == []
    assert run_cli(["jobs", "show", "nope"]) == 1
    assert "no job 'nope'" in capsys.readouterr().err
    assert run_cli(["worker", "--help"]) == 0
    assert "SIGTERM" in capsys.readouterr().out
