"""Codex CLI's config.toml entry: parsed by tomllib, merged, installed twice = once."""

from __future__ import annotations

import json
import os
import tomllib
from pathlib import Path

import pytest

from memoir.errors import ConfigError
from memoir.mcp import FORWARDED, CodexEntry, render, with_entry

from .mcp_client import MEMOIR, base_env, run_cli

THEIRS = """# my Codex settings
model = "o3"
approval_policy = "on-request"

[mcp_servers.docs]
command = "npx"
args = ["-y", "docs-mcp"]

[mcp_servers.docs.env]
DOCS_TOKEN = "secret"

[profiles.fast]
model = "o4-mini"
"""

ENTRY = CodexEntry.make("/opt/memoir/bin/memoir", {"MEMOIR_HOME": '/home/ann/my "memoir"'})


def _documented(entry: dict[str, object]) -> None:
    """A stdio server as Codex's MCP docs describe it: command (string), args (strings),
    env (string to string), env_vars (names), the two timeouts (positive whole seconds)."""
    assert set(entry) <= {
        "command",
        "args",
        "env",
        "env_vars",
        "cwd",
        "startup_timeout_sec",
        "tool_timeout_sec",
        "enabled",
    }
    assert isinstance(entry["command"], str) and os.path.isabs(entry["command"])
    assert isinstance(entry["args"], list) and all(isinstance(a, str) for a in entry["args"])
    env = entry.get("env", {})
    assert isinstance(env, dict) and all(isinstance(v, str) for v in env.values())
    assert isinstance(entry["env_vars"], list) and all(
        isinstance(v, str) for v in entry["env_vars"]
    )
    for key in ("startup_timeout_sec", "tool_timeout_sec"):
        assert isinstance(entry[key], int) and entry[key] > 0


def test_the_entry_parses_as_codex_reads_it() -> None:
    data = tomllib.loads(render(ENTRY))
    entry = data["mcp_servers"]["memoir"]
    _documented(entry)
    assert entry == ENTRY.as_toml_value()
    assert entry["args"] == ["mcp"]
    assert entry["env"] == {"MEMOIR_HOME": '/home/ann/my "memoir"'}
    assert "MEMOIR_HOME" not in entry["env_vars"]  # pinned, so not forwarded as well
    assert set(entry["env_vars"]) == set(FORWARDED) - {"MEMOIR_HOME"}


def test_merging_keeps_every_other_setting_and_is_idempotent() -> None:
    merged, changed = with_entry(THEIRS, ENTRY)
    assert changed and merged.startswith(THEIRS)
    data = tomllib.loads(merged)
    assert data["mcp_servers"]["docs"] == {
        "command": "npx",
        "args": ["-y", "docs-mcp"],
        "env": {"DOCS_TOKEN": "secret"},
    }
    assert data["profiles"] == {"fast": {"model": "o4-mini"}} and data["model"] == "o3"
    again, changed_again = with_entry(merged, ENTRY)
    assert (again, changed_again) == (merged, False)


def test_a_stale_entry_is_replaced_where_it_stands() -> None:
    old = CodexEntry.make("/old/place/memoir")
    middle = THEIRS.replace("[profiles.fast]", render(old) + "\n[profiles.fast]")
    updated, changed = with_entry(middle, ENTRY)
    assert changed
    assert updated.count("[mcp_servers.memoir]") == 1 and "/old/place" not in updated
    assert updated.index("[mcp_servers.memoir]") < updated.index("[profiles.fast]")
    data = tomllib.loads(updated)
    assert data["mcp_servers"]["memoir"] == ENTRY.as_toml_value()
    assert data["profiles"] == {"fast": {"model": "o4-mini"}}


@pytest.mark.parametrize(
    ("text", "says"),
    [
        ("model = \n", "is not valid TOML"),
        ('mcp_servers = { docs = { command = "npx" } }\n', "cannot add Memoir's entry"),
        ('[mcp_servers]\nmemoir.command = "x"\n', "cannot add Memoir's entry"),
    ],
)
def test_a_config_it_cannot_merge_safely_is_left_alone(text: str, says: str) -> None:
    with pytest.raises(ConfigError, match=says):
        with_entry(text, ENTRY)


def test_install_twice_is_install_once_with_a_backup(tmp_path: Path) -> None:
    codex_home = tmp_path / "codex"
    codex_home.mkdir()
    config = codex_home / "config.toml"
    config.write_text(THEIRS, encoding="utf-8")
    config.chmod(0o600)
    env = base_env(tmp_path / "user-home", CODEX_HOME=str(codex_home))
    first = json.loads(run_cli(env, "mcp", "install", "--codex", "--json").stdout)["codex"]
    backup = codex_home / "config.toml.memoir.bak"
    assert first == {
        "config": str(config),
        "changed": True,
        "backup": str(backup),
        "command": MEMOIR,
        "args": ["mcp"],
    }
    assert backup.read_text(encoding="utf-8") == THEIRS
    assert (backup.stat().st_mode & 0o777) == (config.stat().st_mode & 0o777) == 0o600
    installed = config.read_bytes()
    entry = tomllib.loads(installed.decode())["mcp_servers"]["memoir"]
    _documented(entry)
    assert entry["command"] == MEMOIR and "env" not in entry  # nothing pinned here
    second = json.loads(run_cli(env, "mcp", "install", "--codex", "--json").stdout)["codex"]
    assert second["changed"] is False and second["backup"] is None
    assert config.read_bytes() == installed
    assert backup.read_text(encoding="utf-8") == THEIRS
    assert sorted(p.name for p in codex_home.iterdir()) == ["config.toml", "config.toml.memoir.bak"]


def test_install_into_no_config_creates_one_without_a_backup(tmp_path: Path) -> None:
    codex_home = tmp_path / "fresh-codex"
    home = tmp_path / "memoir-home"
    env = base_env(tmp_path / "user-home", CODEX_HOME=str(codex_home), MEMOIR_HOME=str(home))
    run_cli(env, "mcp", "install", "--codex")
    entry = tomllib.loads((codex_home / "config.toml").read_text())["mcp_servers"]["memoir"]
    assert entry["env"] == {"MEMOIR_HOME": str(home.resolve())}  # pinned, as the hook does
    assert [p.name for p in codex_home.iterdir()] == ["config.toml"]


@pytest.mark.parametrize(
    ("args", "env"),
    [
        (("mcp", "install", "--codex", "--user", "bob"), {}),
        (("mcp", "--user", "bob", "install", "--codex"), {}),
        (("--user", "bob", "mcp", "install", "--codex"), {}),
        (("mcp", "install", "--codex"), {"MEMOIR_USER": "bob"}),
    ],
)
def test_install_records_the_user_the_server_acts_for(
    tmp_path: Path, args: tuple[str, ...], env: dict[str, str]
) -> None:
    codex_home = tmp_path / "codex"
    made = base_env(tmp_path / "user-home", CODEX_HOME=str(codex_home), **env)
    run_cli(made, *args)
    entry = tomllib.loads((codex_home / "config.toml").read_text())["mcp_servers"]["memoir"]
    assert entry["args"] == ["mcp", "--user", "bob"]
    # installed again for local (no user named): the entry says so, no --user left behind
    plain = base_env(tmp_path / "user-home", CODEX_HOME=str(codex_home))
    again = json.loads(run_cli(plain, "mcp", "install", "--codex", "--json").stdout)["codex"]
    assert again["changed"] is True and again["args"] == ["mcp"]
