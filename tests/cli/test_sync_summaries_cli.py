"""`memoir sync`'s summary pass through the CLI: an unchanged transcript is summarized once,
whatever its format, and a summary's coverage reaches the end of its archive copy."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest
from typer.testing import CliRunner

import memoir.cli.cmd_sync  # noqa: F401  (registers the commands)
from memoir.cli.app import app
from memoir.demo import ClaudeWriter, CodexWriter, jsonl

_CHAT = [
    {"role": "system", "content": "You are a careful payments engineer."},
    {"role": "user", "content": "How do I rotate the signing key of the payments API?"},
    {"role": "assistant", "content": "Issue the new key beside the old one, then drop it."},
    {"role": "user", "content": "And the webhook secrets?"},
    {"role": "assistant", "content": "Accept both for a window, then revoke the old secret."},
]


def _claude(folder: Path) -> Path:
    writer = ClaudeWriter("5e0c1d2a-0000-4000-8000-00000000c1a0")
    writer.user("How do I rotate the signing key of the payments API?")
    writer.assistant("Issue the new key beside the old one, then drop the old key.")
    path = folder / "projects" / "-home-ann-code-pay" / "5e0c1d2a-0000-4000-8000-00000000c1a0.jsonl"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(writer.bytes())
    return path


def _codex(folder: Path) -> Path:
    writer = CodexWriter("0199aaaa-0000-7000-8000-00000000c0de")
    writer.user("Why does the coupon test fail after midnight?")
    writer.assistant("It compares a naive datetime with an aware one; make both aware.")
    path = folder / "sessions" / "2025" / "10" / "15" / "rollout-2025-10-15T14-00-00-c0de.jsonl"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(writer.bytes())
    return path


def _generic_list(folder: Path) -> Path:
    """An OpenAI-style JSON chat as people save it: indented, a newline after the list."""
    path = folder / "chats" / "chat-1.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(_CHAT, indent=2) + "\n")
    return path


def _generic_compact_list(folder: Path) -> Path:
    path = folder / "chats" / "chat-2.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(_CHAT))
    return path


def _generic_jsonl(folder: Path) -> Path:
    path = folder / "chats" / "chat-3.jsonl"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(jsonl(_CHAT))
    return path


FORMATS: dict[str, Callable[[Path], Path]] = {
    "claude-code-jsonl": _claude,
    "codex-jsonl": _codex,
    "generic-json-list": _generic_list,
    "generic-json-list-compact": _generic_compact_list,
    "generic-jsonl": _generic_jsonl,
}


@pytest.fixture
def cli(home: Path, monkeypatch: pytest.MonkeyPatch) -> CliRunner:
    monkeypatch.setenv("MEMOIR_HOME", str(home))
    monkeypatch.setenv("MEMOIR_SUMMARY_QUIESCENCE_HOURS", "0")  # a chat without times is idle
    return CliRunner()


def _sync(cli: CliRunner, source: Path) -> dict:
    result = cli.invoke(app, ["sync", "--source", str(source), "--json"])
    assert result.exit_code == 0, result.output
    summaries: dict = json.loads(result.stdout)["summaries"]
    return summaries


@pytest.mark.parametrize("make", FORMATS.values(), ids=FORMATS.keys())
def test_three_syncs_of_an_unchanged_file_summarize_it_once(
    cli: CliRunner, tmp_path: Path, home: Path, make: Callable[[Path], Path]
) -> None:
    transcript = make(tmp_path / "src")
    source = tmp_path / "src" / transcript.relative_to(tmp_path / "src").parts[0]
    outcomes = [_sync(cli, source) for _ in range(3)]
    assert [(o["summarized"], o["resummarized"]) for o in outcomes] == [(1, 0), (0, 0), (0, 0)]
    assert [o["model_calls"] for o in outcomes[1:]] == [0, 0]
    (summary,) = (home / "archive").rglob("*-summary.txt")
    archived = summary.with_name(summary.name.replace("-summary.txt", ".jsonl"))
    header = json.loads(summary.read_text().splitlines()[0].removeprefix("__COVERAGE__ "))
    assert header["bytes"] == archived.stat().st_size == transcript.stat().st_size
    check = cli.invoke(app, ["verify", "--json"])
    assert check.exit_code == 0, check.output
    assert [w for w in json.loads(check.stdout)["warnings"] if w["kind"] == "stale_summary"] == []


def test_a_json_chat_that_grows_is_summarized_again_once(cli: CliRunner, tmp_path: Path) -> None:
    transcript = _generic_list(tmp_path / "src")
    source = transcript.parent
    assert _sync(cli, source)["summarized"] == 1
    grown = [*_CHAT, {"role": "user", "content": "What about the database password?"}]
    transcript.write_text(json.dumps(grown, indent=2) + "\n")
    assert [_sync(cli, source)["resummarized"] for _ in range(2)] == [1, 0]


def test_sync_on_a_terminal_shows_the_summary_pass_bar_and_a_table_in_english(
    cli: CliRunner, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import io

    from rich.console import Console

    from memoir.cli import cmd_sync

    terminal = io.StringIO()
    monkeypatch.setattr(cmd_sync, "err_console", Console(file=terminal, force_terminal=True))
    _generic_list(tmp_path / "src")
    _generic_jsonl(tmp_path / "src")
    result = cli.invoke(app, ["sync", "--source", str(tmp_path / "src" / "chats")])
    assert result.exit_code == 0, result.output
    drawn = terminal.getvalue()
    assert "summarizing" in drawn
    assert "0/2" in drawn and "1/2" in drawn and "2/2" in drawn
    assert "chat-1 chats" in drawn and "chat-3 chats" in drawn  # the one being summarized
    table = " ".join(result.stdout.split())
    assert "conversations summarized │ 2" in table
    assert "conversations still active (summarized once idle) │ 0" in table
    assert "summaries summarized" not in table and "skipped not idle" not in table
    again = cli.invoke(app, ["sync", "--source", str(tmp_path / "src" / "chats")])
    assert again.exit_code == 0 and "summarizing" not in terminal.getvalue()[len(drawn) :]


def test_sync_json_and_pipes_draw_no_summary_bar(cli: CliRunner, tmp_path: Path) -> None:
    _generic_list(tmp_path / "src")
    result = cli.invoke(app, ["sync", "--source", str(tmp_path / "src" / "chats"), "--json"])
    assert result.exit_code == 0, result.output
    assert "summarizing" not in result.output
    assert json.loads(result.stdout)["summaries"]["summarized"] == 1
