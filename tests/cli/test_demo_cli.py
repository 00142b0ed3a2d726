"""`memoir demo` builds only in a home of its own: a temporary folder removed at the end
unless ``--keep``, or a ``--home`` that is new, empty or an earlier demo's — never a real
home (sample data merged into real conversations doubles sessions and makes id prefixes
ambiguous)."""

from __future__ import annotations

import json
import re
import shutil
import tempfile
from pathlib import Path

import pytest
from typer.testing import CliRunner

# importing the command modules registers their commands
import memoir.cli.cmd_memories
import memoir.cli.cmd_sync
from memoir.cli.app import app, main
from memoir.demo.tour import MARKER

DEMO_SESSIONS = 14


@pytest.fixture
def cli(home: Path, monkeypatch: pytest.MonkeyPatch) -> CliRunner:
    monkeypatch.setenv("MEMOIR_HOME", str(home))
    monkeypatch.setattr(memoir.cli.cmd_sync.console, "width", 10_000)  # paths whole
    return CliRunner()


@pytest.fixture
def scratch(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Where the demo's temporary folders go in this test."""
    folder = tmp_path / "tmp"
    folder.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(folder))
    return folder


@pytest.fixture
def real_source(tmp_path: Path, claude_fixtures: Path) -> Path:
    folder = tmp_path / "projects" / "-home-ann-app"
    folder.mkdir(parents=True)
    for f in claude_fixtures.glob("*.jsonl"):
        shutil.copy(f, folder / f.name)
    return tmp_path / "projects"


def _run(args: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    """Through the installed entry point, as a user's shell runs it."""
    try:
        main(args)
        code = 0
    except SystemExit as exc:
        code = int(exc.code or 0)
    out = capsys.readouterr()
    return code, out.out, out.err


def _sessions(cli: CliRunner, home: Path) -> int:
    result = cli.invoke(app, ["stats", "--json"], env={"MEMOIR_HOME": str(home)})
    assert result.exit_code == 0, result.output
    count: int = json.loads(result.stdout)["sessions"]
    return count


def test_the_temporary_home_is_removed_at_the_end(cli: CliRunner, scratch: Path) -> None:
    result = cli.invoke(app, ["demo"])
    assert result.exit_code == 0, result.output
    assert "synced 14 transcripts" in result.stdout
    assert "temporary: removed at the end; --keep keeps it" in " ".join(result.stdout.split())
    assert "memoir demo --keep" in result.stdout and "export MEMOIR_HOME" not in result.stdout
    assert list(scratch.iterdir()) == []


def test_keep_leaves_the_home_the_readme_goes_on_with(cli: CliRunner, scratch: Path) -> None:
    result = cli.invoke(app, ["demo", "--keep"])
    assert result.exit_code == 0, result.output
    (home,) = scratch.iterdir()
    assert f"export MEMOIR_HOME={home}" in result.stdout
    assert (home / MARKER).is_file()
    assert _sessions(cli, home) == DEMO_SESSIONS
    # the README's quick start goes on with this home: its first command
    kept = cli.invoke(app, ["remember", "0199f1a2"], env={"MEMOIR_HOME": str(home)})
    assert kept.exit_code == 0, kept.output
    assert "We decided to support Python 3.11 and newer only." in kept.stdout


def test_a_real_home_is_refused_in_one_line(
    cli: CliRunner, home: Path, real_source: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    synced = cli.invoke(app, ["sync", "--source", str(real_source), "--no-summaries"])
    assert synced.exit_code == 0, synced.output
    before = sorted(p.relative_to(home) for p in home.rglob("*") if "locks" not in p.parts)
    code, out, err = _run(["demo", "--home", str(home)], capsys)
    assert code == 2
    assert out == ""
    assert len(err.strip().splitlines()) == 1, err
    assert re.search(
        r"error: --home .* holds files `memoir demo` did not make", " ".join(err.split())
    )
    assert "give --home a new or empty folder, or leave it out" in " ".join(err.split())
    after = sorted(p.relative_to(home) for p in home.rglob("*") if "locks" not in p.parts)
    assert after == before  # not even a marker written
    assert _sessions(cli, home) == 3  # nothing of the demo merged in


def test_a_demo_home_synced_with_real_transcripts_since_is_refused(
    cli: CliRunner, tmp_path: Path, real_source: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    demo_home = tmp_path / "demo"
    assert cli.invoke(app, ["demo", "--home", str(demo_home)]).exit_code == 0
    env = {"MEMOIR_HOME": str(demo_home)}
    synced = cli.invoke(app, ["sync", "--source", str(real_source), "--no-summaries"], env=env)
    assert synced.exit_code == 0, synced.output
    assert _sessions(cli, demo_home) == DEMO_SESSIONS + 3
    code, out, err = _run(["demo", "--home", str(demo_home)], capsys)
    assert (code, out) == (2, "")
    assert "holds transcripts (such as" in err and "`memoir demo` did not make" in err
    assert _sessions(cli, demo_home) == DEMO_SESSIONS + 3


def test_a_home_the_demo_made_is_reused_not_doubled(cli: CliRunner, tmp_path: Path) -> None:
    demo_home = tmp_path / "new" / "demo"  # a folder that does not exist yet
    for _ in range(2):
        result = cli.invoke(app, ["demo", "--home", str(demo_home)])
        assert result.exit_code == 0, result.output
        assert "(kept)" in result.stdout and f"export MEMOIR_HOME={demo_home}" in result.stdout
    assert _sessions(cli, demo_home) == DEMO_SESSIONS


def test_an_empty_folder_is_taken_and_a_file_is_refused(
    cli: CliRunner, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    empty = tmp_path / "empty"
    empty.mkdir()
    assert cli.invoke(app, ["demo", "--home", str(empty)]).exit_code == 0
    assert (empty / MARKER).is_file() and (empty / "memoir.db").is_file()
    a_file = tmp_path / "notes.txt"
    a_file.write_text("mine")
    code, _, err = _run(["demo", "--home", str(a_file)], capsys)
    assert code == 2 and "is not a folder" in err and len(err.strip().splitlines()) == 1
    assert a_file.read_text() == "mine"
