"""A symlinked transcript is followed only inside its source folder, or with
``--follow-symlinks``; one left out is named in the sync report (issue #24, item 5)."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from typer.testing import CliRunner

import memoir.cli.cmd_read
import memoir.cli.cmd_sync  # noqa: F401
from memoir.cli.app import app
from memoir.ingest.discover import scan


def _chat(path: Path, user: str, reply: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(
        json.dumps({"role": "user", "content": user})
        + "\n"
        + json.dumps({"role": "assistant", "content": reply})
        + "\n"
    )


@pytest.fixture
def cli(home: Path, monkeypatch: pytest.MonkeyPatch) -> CliRunner:
    monkeypatch.setenv("MEMOIR_HOME", str(home))
    return CliRunner()


@pytest.fixture
def source(tmp_path: Path) -> Path:
    root = tmp_path / "chats"
    _chat(root / "proj" / "real.jsonl", "an ordinary question", "an ordinary answer")
    _chat(tmp_path / "private" / "secret.jsonl", "the password is swordfish", "noted")
    os.symlink(tmp_path / "private" / "secret.jsonl", root / "proj" / "outside.jsonl")
    os.symlink(root / "proj" / "real.jsonl", root / "proj" / "inside.jsonl")
    return root


def _hits(cli: CliRunner, words: str) -> list[str]:
    result = cli.invoke(app, ["search", words, "--mode", "text", "--json"])
    assert result.exit_code == 0, result.output
    return [h["session_id"] for h in json.loads(result.stdout)]


def test_scan_follows_links_inside_the_source_only(source: Path) -> None:
    left_out: list[str] = []
    found = sorted(Path(p).name for p, *_ in scan([source], left_out=left_out))
    assert found == ["real.jsonl"]  # the link inside is a second name for it: read once
    [line] = left_out
    assert line.startswith(f"{source / 'proj' / 'outside.jsonl'} -> ")
    assert "secret.jsonl" in line
    every = sorted(Path(p).name for p, *_ in scan([source], follow_symlinks=True))
    assert every == ["outside.jsonl", "real.jsonl"]
    # a link inside the source to a transcript the walk cannot reach is read
    hidden = source / ".hidden" / "kept.jsonl"
    _chat(hidden, "a chat in a hidden folder", "yes")
    os.symlink(hidden, source / "proj" / "to-hidden.jsonl")
    found = sorted(Path(p).name for p, *_ in scan([source]))
    assert found == ["real.jsonl", "to-hidden.jsonl"]


def test_sync_leaves_out_a_link_out_of_the_source_and_says_so(
    cli: CliRunner, source: Path, home: Path
) -> None:
    result = cli.invoke(app, ["sync", "--source", str(source), "--json", "--no-summaries"])
    assert result.exit_code == 0, result.output
    report = json.loads(result.stdout)
    assert len(report["symlinks_left_out"]) == 1
    assert "outside.jsonl" in report["symlinks_left_out"][0]
    # the link inside the source is a second name for real.jsonl: one session
    assert report["files_indexed"] == 1 and report["duplicates"] == []
    assert _hits(cli, "swordfish") == []
    archived = [p.read_text() for p in (home / "archive").rglob("*.jsonl")]
    assert archived and not any("swordfish" in text for text in archived)

    human = cli.invoke(app, ["sync", "--source", str(source), "--no-summaries"])
    assert human.exit_code == 0, human.output
    assert "left out" in human.output and "outside.jsonl" in human.output

    followed = cli.invoke(
        app, ["sync", "--source", str(source), "--follow-symlinks", "--json", "--no-summaries"]
    )
    assert followed.exit_code == 0, followed.output
    again = json.loads(followed.stdout)
    assert again["symlinks_left_out"] == [] and again["files_indexed"] == 1
    assert _hits(cli, "swordfish") == ["outside"]
