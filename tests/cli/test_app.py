from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest


def run(args: list[str], env_home: Path, **env: str) -> subprocess.CompletedProcess[str]:
    import os

    full_env = {k: v for k, v in os.environ.items() if not k.startswith("MEMOIR_")}
    full_env.update({"MEMOIR_HOME": str(env_home), **env})
    return subprocess.run(
        [sys.executable, "-m", "memoir.cli", *args],
        capture_output=True,
        text=True,
        env=full_env,
        timeout=60,
    )


def test_config_json_reports_sources(home: Path) -> None:
    out = run(["config", "--json"], home, MEMOIR_SUMMARY_MAX_ATTEMPTS="9")
    assert out.returncode == 0, out.stderr
    data = json.loads(out.stdout)
    assert data["home"] == {"env": "MEMOIR_HOME", "value": str(home), "source": "env MEMOIR_HOME"}
    assert data["summary_max_attempts"]["value"] == 9
    assert data["database_url"]["value"] is None  # JSON null, not the table's "(unset)"
    assert isinstance(data["sources"]["value"], list)
    assert data["llm"]["source"] == "default"


def test_config_error_is_one_line_without_traceback(home: Path) -> None:
    out = run(["config"], home, MEMOIR_SUMMARY_STORE="cloud")
    assert out.returncode == 2
    assert "Traceback" not in out.stderr
    assert out.stderr.strip().count("\n") == 0
    assert "MEMOIR_SUMMARY_STORE" in out.stderr


def test_unknown_command_is_a_usage_error(home: Path) -> None:
    out = run(["no-such-command"], home)
    assert out.returncode == 2
    assert "Traceback" not in out.stderr


def test_piped_output_keeps_long_values_whole(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("COLUMNS", raising=False)  # a test runner may set one
    home = tmp_path / ("a-rather-long-folder-name-" * 4) / "memoir-home"
    out = run(["config"], home)
    assert out.returncode == 0, out.stderr
    assert any(str(home) in line for line in out.stdout.splitlines())
    narrow = run(["config"], home, COLUMNS="60")  # a width asked for is still honoured
    assert not any(str(home) in line for line in narrow.stdout.splitlines())


def test_version(home: Path) -> None:
    from importlib.metadata import version

    from memoir.errors import DISTRIBUTION

    out = run(["--version"], home)
    assert (out.returncode, out.stdout) == (0, f"memoir {version(DISTRIBUTION)}\n")


@pytest.mark.parametrize(
    ("env", "setting", "says"),
    [
        ({"MEMOIR_LLM": "gpt-4o"}, "llm", "is not a model"),
        ({"MEMOIR_LLM": "openai:gpt-4o"}, "llm", "needs an API key"),
        ({"MEMOIR_LLM_FALLBACK": "bogus"}, "llm_fallback", "MEMOIR_LLM_FALLBACK='bogus'"),
        ({"MEMOIR_EMBEDDER": "bogus"}, "embedder", "must be one of"),
        ({"MEMOIR_DATABASE_URL": "mysql://x"}, "database_url", "must start with postgresql://"),
    ],
)
def test_config_flags_what_other_commands_would_refuse(
    home: Path, env: dict[str, str], setting: str, says: str
) -> None:
    out = run(["config", "--json"], home, **env)
    assert out.returncode == 2
    data = json.loads(out.stdout)
    assert says in data[setting]["problem"]
    assert [name for name, row in data.items() if "problem" in row] == [setting]
    table = run(["config"], home, **env)
    assert table.returncode == 2 and says in table.stderr and "Traceback" not in table.stderr


def test_config_with_good_settings_has_no_problems(home: Path) -> None:
    out = run(["config", "--json"], home, MEMOIR_EMBEDDER="hash", MEMOIR_LLM="offline")
    assert out.returncode == 0, out.stderr
    assert not [name for name, row in json.loads(out.stdout).items() if "problem" in row]


def _to_a_reader_gone(home: Path, args: list[str]) -> tuple[int, str]:
    """Run the CLI with its stdout a pipe nobody reads (closed before the program writes:
    its first write meets EPIPE); its exit status and stderr."""
    import os

    env = {k: v for k, v in os.environ.items() if not k.startswith("MEMOIR_")}
    env["MEMOIR_HOME"] = str(home)
    proc = subprocess.Popen(
        [sys.executable, "-m", "memoir.cli", *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=env,
    )
    assert proc.stdout is not None and proc.stderr is not None
    proc.stdout.close()
    err = proc.stderr.read().decode()
    proc.stderr.close()
    return proc.wait(timeout=60), err


@pytest.mark.parametrize("args", [["config"], ["config", "--json"]])
def test_a_reader_that_went_away_ends_the_output_quietly(home: Path, args: list[str]) -> None:
    assert _to_a_reader_gone(home, args) == (141, "")  # SIGPIPE's status, as ls or git give


@pytest.mark.parametrize("args", [["--help"], ["search", "--help"], ["hook", "install", "--help"]])
def test_help_to_a_reader_that_went_away_ends_quietly(home: Path, args: list[str]) -> None:
    """typer prints help through consoles of its own: they stop as the others do."""
    assert _to_a_reader_gone(home, args) == (141, "")
    shown = run(args, home)  # read to the end, the same help is whole and exits 0
    assert (shown.returncode, shown.stderr) == (0, "")
    assert shown.stdout.count("Usage:") == 1 and "--help" in shown.stdout


def test_show_in_context_draws_short_rules_into_a_pipe(home: Path, claude_fixtures: Path) -> None:
    synced = run(["sync", "--source", str(claude_fixtures), "--no-summaries"], home)
    assert synced.returncode == 0, synced.stderr
    out = run(["show", "67a8478e-78dc-44ab-82ea-f65c8ead85f6:1"], home)
    assert out.returncode == 0, out.stderr
    rules = [line for line in out.stdout.splitlines() if line.startswith("────")]
    assert len(rules) == 2 and max(len(line) for line in rules) <= 120


def test_a_mistyped_database_url_is_not_created_by_a_search(home: Path, tmp_path: Path) -> None:
    (home / "archive").mkdir(parents=True)  # a real home: its archive is there
    typo = tmp_path / "typo.db"
    out = run(["search", "parser"], home, MEMOIR_DATABASE_URL=f"sqlite:///{typo}")
    assert out.returncode == 1 and f"no Memoir archive at {typo}" in out.stderr
    assert not typo.exists()
    lost = run(["search", "parser"], home)  # the home's own database is gone: said so too
    assert lost.returncode == 1 and "no Memoir archive at MEMOIR_HOME" in lost.stderr
