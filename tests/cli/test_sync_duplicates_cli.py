"""The same transcripts synced from two folders are one session; a true id clash keeps
both and says so (issue #25, item 12) — through the CLI."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from typer.testing import CliRunner

import memoir.cli.cmd_read
import memoir.cli.cmd_sync  # noqa: F401
from memoir.cli.app import app

SID = "67a8478e-78dc-44ab-82ea-f65c8ead85f6"


def _chat(path: Path, *turns: tuple[str, str]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "a", encoding="utf-8") as fp:
        for user, reply in turns:
            fp.write(json.dumps({"role": "user", "content": user}) + "\n")
            fp.write(json.dumps({"role": "assistant", "content": reply}) + "\n")


@pytest.fixture
def cli(home: Path, monkeypatch: pytest.MonkeyPatch) -> CliRunner:
    monkeypatch.setenv("MEMOIR_HOME", str(home))
    return CliRunner()


def _run(cli: CliRunner, *args: str) -> dict:
    result = cli.invoke(app, list(args))
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


def _sync(cli: CliRunner, *sources: Path) -> dict:
    args = [a for s in sources for a in ("--source", str(s))]
    return _run(cli, "sync", *args, "--json", "--no-summaries")


def _hits(cli: CliRunner, words: str) -> list[str]:
    result = cli.invoke(app, ["search", words, "--mode", "text", "--json"])
    assert result.exit_code == 0, result.output
    return [h["session_id"] for h in json.loads(result.stdout)]


def test_the_same_transcripts_in_two_folders_are_one_session(
    cli: CliRunner, tmp_path: Path
) -> None:
    live, backup = tmp_path / "live", tmp_path / "backup"
    _chat(live / "proj" / f"{SID}.jsonl", ("how do I rotate the keys", "with the vault"))
    shutil.copytree(live, backup)
    report = _sync(cli, live, backup)
    assert (report["files_indexed"], report["files_ignored"]) == (1, 1)
    assert report["duplicates"] == [
        f"{backup / 'proj' / f'{SID}.jsonl'}: same as {live / 'proj' / f'{SID}.jsonl'}"
    ]
    assert report["id_clashes"] == []
    assert _run(cli, "stats", "--json")["sessions"] == 1
    assert _hits(cli, "rotate keys") == [SID]  # one hit, not two
    # nothing changed: the duplicate is not read again
    again = _sync(cli, live, backup)
    assert (again["files_indexed"], again["files_ignored"], again["duplicates"]) == (0, 1, [])

    # the copy that goes on (the backup folder became the live one) takes the session over
    _chat(backup / "proj" / f"{SID}.jsonl", ("and the certificates", "renew them yearly"))
    grown = _sync(cli, live, backup)
    assert grown["files_indexed"] == 1 and grown["sessions_touched"] == [SID]
    assert _hits(cli, "certificates") == [SID]
    assert _run(cli, "stats", "--json")["sessions"] == 1
    # the old copy is now the one left out, as a start of the live one
    later = _sync(cli, live, backup)
    assert later["files_indexed"] == 0 and len(later["duplicates"]) == 1
    assert later["duplicates"][0].startswith(str(live))
    assert _run(cli, "stats", "--json")["sessions"] == 1
    assert _run(cli, "verify", "--json")["ok"]


def test_a_true_id_clash_keeps_both_and_says_so(cli: CliRunner, tmp_path: Path) -> None:
    one, two = tmp_path / "one", tmp_path / "two"
    _chat(one / "proj" / f"{SID}.jsonl", ("the first conversation", "about turnips"))
    _chat(two / "proj" / f"{SID}.jsonl", ("a different conversation", "about parsnips"))
    report = _sync(cli, one, two)
    assert report["files_indexed"] == 2 and report["duplicates"] == []
    [clash] = report["id_clashes"]
    assert clash.startswith(f"{two / 'proj' / f'{SID}.jsonl'}: its session id is ")
    assert _run(cli, "stats", "--json")["sessions"] == 2
    assert len(_hits(cli, "turnips")) == len(_hits(cli, "parsnips")) == 1
    human = cli.invoke(app, ["sync", "--source", str(one), "--source", str(two)])
    assert human.exit_code == 0  # nothing new: no clash to tell again
    assert "clash" not in human.output


def test_the_table_names_what_was_not_stored_twice(cli: CliRunner, tmp_path: Path) -> None:
    live, backup = tmp_path / "live", tmp_path / "backup"
    _chat(live / "proj" / f"{SID}.jsonl", ("hello", "hi"))
    shutil.copytree(live, backup)
    result = cli.invoke(app, ["sync", "--source", str(live), "--source", str(backup)])
    assert result.exit_code == 0, result.output
    assert "already stored from another folder" in result.output
    assert "same as" in result.output
