"""End to end through the CLI: a Claude Code transcript whose last line was cut off (a
crashed session leaves half a line, no newline, not valid JSON) is summarized once, not
on every sync; when the line is finished later, it is indexed and the summary refreshed."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

# the commands used, registered as they are imported
from memoir.cli.app import app

from .helpers import conversation

PROJECT = "-tmp-t"
SID = "S"
HALF = b'{"type":"user","uuid":"x","message":{"role":"user","content":"half'
REST = b' a question about the parser"}}\n'


@pytest.fixture
def cli(home: Path, monkeypatch: pytest.MonkeyPatch) -> CliRunner:
    monkeypatch.setenv("MEMOIR_HOME", str(home))
    monkeypatch.setenv("MEMOIR_SUMMARY_QUIESCENCE_HOURS", "0")
    return CliRunner()


def _run(cli: CliRunner, *args: str) -> dict:
    result = cli.invoke(app, [*args, "--json"])
    assert result.exit_code == 0, result.output
    parsed: dict = json.loads(result.stdout)
    return parsed


def _header(home: Path) -> dict:
    summary = home / "archive" / PROJECT / f"{SID}-summary.txt"
    first = summary.read_text().splitlines()[0]
    header: dict = json.loads(first.removeprefix("__COVERAGE__ "))
    return header


def test_a_cut_off_last_line_is_summarized_once_and_again_when_it_ends(
    cli: CliRunner, tmp_path: Path, home: Path
) -> None:
    sources = tmp_path / "m"
    transcript = sources / PROJECT / f"{SID}.jsonl"
    transcript.parent.mkdir(parents=True)
    transcript.write_bytes(conversation(SID, 3) + HALF)
    sync = ("sync", "--source", str(sources))

    reports = [_run(cli, *sync) for _ in range(3)]
    outcomes = [r["summaries"] for r in reports]
    assert [(o["summarized"], o["resummarized"]) for o in outcomes] == [(1, 0), (0, 0), (0, 0)]
    assert [o["model_calls"] for o in outcomes[1:]] == [0, 0]
    remembering = [r["memory_pass"]["model_calls"] for r in reports]  # sync's memory pass
    assert remembering[1:] == [0, 0]
    assert _run(cli, "usage")["calls"] == outcomes[0]["model_calls"] + remembering[0]
    assert outcomes[0]["model_calls"] > 0
    archived = home / "archive" / PROJECT / f"{SID}.jsonl"
    assert _header(home)["bytes"] == archived.stat().st_size == transcript.stat().st_size
    warnings = _run(cli, "verify")["warnings"]
    assert [w for w in warnings if w["kind"] == "stale_summary"] == []

    with open(transcript, "ab") as handle:  # the session is resumed: the line is finished
        handle.write(REST)
    grown = _run(cli, *sync)
    assert grown["summaries"]["resummarized"] == 1
    assert _header(home)["bytes"] == archived.stat().st_size == transcript.stat().st_size
    shown = cli.invoke(app, ["search", "half a question about the parser", "--json"])
    assert shown.exit_code == 0, shown.output
    hits = json.loads(shown.stdout)
    assert any("half a question" in json.dumps(h) for h in hits)  # the finished line, indexed
    assert _run(cli, *sync)["summaries"]["resummarized"] == 0
