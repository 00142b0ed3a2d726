"""The agents start the memoir that installed them, wherever it lives: `memoir mcp install
--claude` (the plugin), `--codex` and `memoir hook install` record its absolute path, and
with the venv's bin off PATH the installed hook syncs and the installed MCP server lists its
tools to the official SDK client — started exactly as each written config says."""

from __future__ import annotations

import json
import os
import shlex
import shutil
import subprocess
import sys
import time
import tomllib
from pathlib import Path
from typing import Any

import anyio
import pytest

from memoir.demo.make_corpus import corpus_sources
from memoir.errors import ConfigError
from memoir.mcp import (
    HOOKS_FILE,
    MANIFEST,
    MCP_FILE,
    hook_command,
    installed_files,
    is_memoir_hook,
    memoir_command,
    plugin_dir,
)

BIN = Path(sys.executable).parent
MEMOIR = str(BIN / "memoir")  # `.venv/bin/memoir`, as the README runs it
TOOLS = {"search", "read", "summary", "remember", "memories", "forget"}
PLUGIN = Path(__file__).resolve().parents[2] / "integrations" / "claude-code"


# --- which memoir an install records -----------------------------------------------------
def _file(path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("#!/bin/sh\n")
    return path


@pytest.mark.parametrize(
    ("argv0", "beside", "expected"),
    [
        # the running memoir script, by its absolute path (a link kept as the link)
        ("venv/bin/memoir", True, ("{tmp}/venv/bin/memoir",)),
        ("{tmp}/local/bin/memoir", False, ("{tmp}/local/bin/memoir",)),
        # run another way (python -m memoir.cli, a test runner): the script beside python
        ("{tmp}/venv/lib/memoir/cli/__main__.py", True, ("{tmp}/py/memoir",)),
        ("pytest", True, ("{tmp}/py/memoir",)),
        # no script anywhere: this interpreter with -m
        ("pytest", False, ("{tmp}/py/python", "-m", "memoir.cli")),
        ("{tmp}/missing/memoir", False, ("{tmp}/py/python", "-m", "memoir.cli")),
    ],
)
def test_the_command_an_install_records(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    argv0: str,
    beside: bool,
    expected: tuple[str, ...],
) -> None:
    monkeypatch.chdir(tmp_path)
    _file(tmp_path / "venv" / "bin" / "memoir")
    _file(tmp_path / "real" / "memoir")
    (tmp_path / "local" / "bin").mkdir(parents=True)
    (tmp_path / "local" / "bin" / "memoir").symlink_to(tmp_path / "real" / "memoir")
    if beside:
        _file(tmp_path / "py" / "memoir")
    monkeypatch.setattr(sys, "argv", [argv0.format(tmp=tmp_path), "mcp", "install"])
    monkeypatch.setattr(sys, "executable", str(tmp_path / "py" / "python"))
    assert memoir_command() == tuple(e.format(tmp=tmp_path) for e in expected)


def test_the_hook_command_quotes_the_interpreter_form(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(sys, "argv", ["pytest"])
    monkeypatch.setattr(sys, "executable", str(tmp_path / "a b" / "python"))
    command = hook_command({"MEMOIR_HOME": "/srv/m"})
    assert command == (
        f"MEMOIR_HOME=/srv/m '{tmp_path}/a b/python' -m memoir.cli sync --background "
        ">/dev/null 2>&1"
    )
    assert is_memoir_hook({"type": "command", "command": command})


# --- the plugin's files, rewritten ----------------------------------------------------------
def _template() -> dict[str, str]:
    return {
        p.relative_to(PLUGIN).as_posix(): p.read_text(encoding="utf-8")
        for p in PLUGIN.rglob("*")
        if p.is_file()
    }


def test_the_installed_plugin_differs_only_in_how_memoir_starts() -> None:
    template = _template()
    assert plugin_dir() == PLUGIN
    hook = "MEMOIR_HOME=/srv/m /opt/memoir/bin/memoir sync --background >/dev/null 2>&1"
    files = installed_files(
        template,
        mcp_argv=("/opt/memoir/bin/memoir", "mcp"),
        hook=hook,
        env={"MEMOIR_HOME": "/srv/m"},
        is_memoir_hook=is_memoir_hook,
    )
    assert set(files) == set(template)
    assert {k for k in files if files[k] != template[k]} == {MCP_FILE, HOOKS_FILE}
    assert json.loads(files[MCP_FILE]) == {
        "mcpServers": {
            "memoir": {
                "command": "/opt/memoir/bin/memoir",
                "args": ["mcp"],
                "env": {"MEMOIR_HOME": "/srv/m"},
            }
        }
    }
    hooks = json.loads(files[HOOKS_FILE])
    (group,) = hooks["hooks"]["SessionStart"]
    assert group["hooks"] == [{"type": "command", "command": hook, "timeout": 30}]
    assert hooks["description"] == json.loads(template[HOOKS_FILE])["description"]
    plain = installed_files(
        template, mcp_argv=("/usr/bin/python3", "-m", "memoir.cli", "mcp"), hook=hook, env={},
        is_memoir_hook=is_memoir_hook,
    )  # fmt: skip
    assert json.loads(plain[MCP_FILE])["mcpServers"]["memoir"] == {
        "command": "/usr/bin/python3",
        "args": ["-m", "memoir.cli", "mcp"],
    }


@pytest.mark.parametrize(
    ("broken", "says"),
    [
        ({MANIFEST: '{"name": "other"}'}, "not Memoir's Claude Code plugin"),
        ({MCP_FILE: '{"mcpServers": {}}'}, "no mcpServers.memoir"),
        ({HOOKS_FILE: '{"hooks": {}}'}, "no Memoir hook"),
        ({HOOKS_FILE: "{ not json"}, "not valid JSON"),
    ],
)
def test_a_plugin_folder_it_cannot_point_at_memoir_is_refused(
    broken: dict[str, str], says: str
) -> None:
    with pytest.raises(ConfigError, match=says):
        installed_files(
            {**_template(), **broken}, mcp_argv=("/x/memoir", "mcp"), hook="/x/memoir sync "
            "--background", env={}, is_memoir_hook=is_memoir_hook,
        )  # fmt: skip


# --- installed as the README says, started with the venv's bin off PATH -------------------
def _env(user_home: Path, **more: str) -> dict[str, str]:
    """An agent's environment: no venv on PATH, no Memoir settings of the developer's."""
    env = {
        "HOME": str(user_home),
        "PATH": os.defpath,
        "LANG": "C.UTF-8",
        "MEMOIR_EMBEDDER": "none",  # the background sync: no model to load here
    }
    if os.environ.get("PYTHONPATH"):  # the source tree under test (a worktree's src)
        env["PYTHONPATH"] = os.pathsep.join(
            os.path.abspath(p) for p in os.environ["PYTHONPATH"].split(os.pathsep)
        )
    env.update(more)
    return env


def _memoir(env: dict[str, str], *args: str) -> str:
    done = subprocess.run(
        [MEMOIR, *args], env=env, capture_output=True, text=True, timeout=120, check=False
    )
    assert done.returncode == 0, done.stdout + done.stderr
    return done.stdout


def _run_hook(command: str, env: dict[str, str], home: Path) -> None:
    """The hook as Claude Code runs it (a shell command line), then its detached sync."""
    assert shutil.which("memoir", path=env["PATH"]) is None  # no memoir on this PATH
    done = subprocess.run(["sh", "-c", command], env=env, timeout=60, check=False)
    assert done.returncode == 0
    for _ in range(900):
        logs = sorted((home / "logs").glob("sync-*.log")) if (home / "logs").is_dir() else []
        if logs and "seconds" in logs[-1].read_text(encoding="utf-8", errors="replace"):
            return
        time.sleep(0.1)
    raise AssertionError(f"the hook's background sync did not finish: {command}")


def _tools_and_search(command: str, args: list[str], env: dict[str, str], log: Path) -> Any:
    """Start the server as a config says and ask it through the SDK's stdio client."""
    from mcp.client.session import ClientSession
    from mcp.client.stdio import StdioServerParameters, stdio_client

    async def main() -> Any:
        params = StdioServerParameters(command=command, args=args, env=env)
        with log.open("a", encoding="utf-8") as errlog:
            async with (
                stdio_client(params, errlog=errlog) as (read, write),
                ClientSession(read, write) as session,
            ):
                await session.initialize()
                tools = {t.name for t in (await session.list_tools()).tools}
                found = await session.call_tool("search", {"query": "PgBouncer", "mode": "text"})
                return tools, json.loads(found.content[0].text)  # type: ignore[union-attr]

    return anyio.run(main)


@pytest.mark.slow
def test_the_plugin_and_the_hook_start_this_memoir_without_path(tmp_path: Path) -> None:
    """docs/mcp.md: `.venv/bin/memoir mcp install --claude`, or `memoir hook install`; the default
    home (~/.memoir) and sources (~/.claude/projects) of a fresh HOME."""
    user_home = tmp_path / "user-home"
    projects = user_home / ".claude" / "projects"
    shutil.copytree(corpus_sources()[0], projects)  # a user's own Claude Code transcripts
    env = _env(user_home)
    out = json.loads(_memoir(env, "mcp", "install", "--claude", "--json"))["claude"]
    plugin = user_home / ".memoir" / "claude-code-plugin"
    assert out["plugin"] == str(plugin) and out["changed"] is True
    assert out["steps"][0] == f"claude plugin marketplace add {plugin}"
    again = json.loads(_memoir(env, "mcp", "install", "--claude", "--json"))["claude"]
    assert again["changed"] is False
    _memoir(env, "hook", "install")

    # the hooks, read from what was written: the plugin's and the settings file's
    (group,) = json.loads((plugin / HOOKS_FILE).read_text())["hooks"]["SessionStart"]
    (plugin_hook,) = group["hooks"]
    settings = json.loads((user_home / ".claude" / "settings.json").read_text())
    (settings_hook,) = [h for g in settings["hooks"]["SessionStart"] for h in g["hooks"]]
    assert plugin_hook["command"] == settings_hook["command"]
    assert shlex.split(plugin_hook["command"])[0] == MEMOIR
    _run_hook(plugin_hook["command"], env, user_home / ".memoir")
    stats = json.loads(_memoir(env, "stats", "--json"))
    assert stats["sessions"] == 10  # the Claude Code part of the demo corpus, synced

    entry = json.loads((plugin / MCP_FILE).read_text())["mcpServers"]["memoir"]
    assert entry == {"command": MEMOIR, "args": ["mcp"]}  # nothing pinned: the default home
    tools, hits = _tools_and_search(
        entry["command"], entry["args"], {**env, **entry.get("env", {})}, tmp_path / "mcp.log"
    )
    assert tools == TOOLS
    assert hits["hits"][0]["project"] == "-home-ann-code-infra"


@pytest.mark.slow
def test_codex_and_the_plugin_carry_a_pinned_home_to_a_server_without_path(
    tmp_path: Path,
) -> None:
    """Installed with MEMOIR_HOME set: the configs pin it, so the agent's environment need
    hold neither the home nor the venv."""
    user_home = tmp_path / "user-home"  # made by the suite's conftest
    home = tmp_path / "my memoir"
    sources = os.pathsep.join(str(p) for p in corpus_sources())
    install_env = _env(user_home, MEMOIR_HOME=str(home), MEMOIR_SOURCES=sources)
    _memoir(install_env, "sync", "--no-summaries")
    _memoir(install_env, "mcp", "install", "--codex", "--claude")
    agent_env = _env(user_home)  # Codex's / Claude Code's: no MEMOIR_HOME, no venv
    codex = tomllib.loads((user_home / ".codex" / "config.toml").read_text())
    entry = codex["mcp_servers"]["memoir"]
    assert entry["command"] == MEMOIR and entry["env"]["MEMOIR_HOME"] == str(home.resolve())
    plugin = json.loads((home / "claude-code-plugin" / MCP_FILE).read_text())
    assert plugin["mcpServers"]["memoir"]["env"] == entry["env"]
    for command, args, pinned in (
        (entry["command"], entry["args"], entry["env"]),
        (
            plugin["mcpServers"]["memoir"]["command"],
            plugin["mcpServers"]["memoir"]["args"],
            plugin["mcpServers"]["memoir"]["env"],
        ),
    ):
        tools, hits = _tools_and_search(
            command, args, {**agent_env, **pinned}, tmp_path / "mcp.log"
        )
        assert tools == TOOLS
        assert hits["hits"][0]["project"] == "-home-ann-code-infra"
