"""`memoir hook install | uninstall | status`: the Claude Code SessionStart hook, or with
``--gemini`` Gemini CLI's (``~/.gemini/settings.json``: the same ``hooks.SessionStart``
shape; no matcher, as Gemini CLI matches session events by exact name and its hook should
run on ``startup``, ``resume`` and ``clear`` alike).

The hook runs ``<absolute path of memoir> sync --background >/dev/null 2>&1`` (led by
``MEMOIR_HOME=…`` / ``MEMOIR_SOURCES=…`` when those were set for the install; the path is
this memoir's, :func:`memoir_command`, so the hook needs no PATH) whenever
Claude Code starts or resumes a session (silent: a SessionStart hook's output would land in
the agent's context; the background sync logs to ``<home>/logs/``). Installing merges into
Claude Code's settings file (other hooks and settings are kept; installing twice changes
nothing; a moved executable is updated in place). Uninstalling removes only Memoir's hook.
The file is rewritten atomically.
"""

from __future__ import annotations

import json
import os
import shlex
import sys
from pathlib import Path
from typing import Any

import typer

from memoir.cli.app import app, console, print_json
from memoir.config import Settings
from memoir.errors import ConfigError
from memoir.home_files import write_text_atomic

__all__ = [
    "HOOK_ARGS",
    "add_hook",
    "default_settings_path",
    "hook_command",
    "is_memoir_hook",
    "memoir_command",
    "pinned_settings",
    "remove_hook",
]

HOOK_EVENT = "SessionStart"
HOOK_MATCHER = "startup|resume"
HOOK_ARGS = "sync --background"
# SessionStart stdout is added to the agent's context: the hook stays silent
QUIET = " >/dev/null 2>&1"

hook_app = typer.Typer(
    help="The Claude Code (or, with --gemini, Gemini CLI) hook that runs "
    "`memoir sync --background` at session start: install it, uninstall it, or see its status."
)
app.add_typer(hook_app, name="hook")


def default_settings_path(gemini: bool = False) -> Path:
    """Claude Code's user settings file, or Gemini CLI's with ``gemini``."""
    if gemini:
        return Path.home() / ".gemini" / "settings.json"
    return Path.home() / ".claude" / "settings.json"


def memoir_command() -> tuple[str, ...]:
    """How to start this very memoir from anywhere, PATH or not: the absolute path of the
    ``memoir`` script that is running (a venv's ``bin/memoir``; pipx's or uv's
    ``~/.local/bin/memoir``, a link their upgrades keep), else the ``memoir`` script beside
    this interpreter, else this interpreter with ``-m memoir.cli``. Never another memoir
    found on PATH. Links are not resolved: a venv's ``python`` is one, and resolving it
    would leave the venv."""
    argv0 = sys.argv[0] if sys.argv and sys.argv[0] else ""
    if Path(argv0).name == "memoir" and Path(argv0).is_file():
        return (os.path.abspath(argv0),)
    beside = Path(os.path.abspath(sys.executable)).with_name("memoir")
    if beside.is_file():
        return (str(beside),)
    return (os.path.abspath(sys.executable), "-m", "memoir.cli")


def hook_command(pinned: dict[str, str] | None = None) -> str:
    """The hook's command line, with this memoir's absolute path (:func:`memoir_command`),
    led by the ``pinned`` environment variables (the home and sources this install was made
    for: the hook runs in Claude Code's environment, not the shell's)."""
    env = "".join(f"{k}={shlex.quote(v)} " for k, v in sorted((pinned or {}).items()))
    exe = " ".join(shlex.quote(part) for part in memoir_command())
    return f"{env}{exe} {HOOK_ARGS}{QUIET}"


def pinned_settings(settings: Settings) -> dict[str, str]:
    """The settings a hook must carry: home and sources when they were set explicitly
    (never a database URL or key: the hook's command line sits in a plain settings file)."""
    pinned: dict[str, str] = {}
    if settings.origins.get("home", "").startswith("env"):
        pinned["MEMOIR_HOME"] = str(settings.home.resolve())
    if settings.origins.get("sources", "").startswith("env"):
        pinned["MEMOIR_SOURCES"] = os.pathsep.join(str(p.resolve()) for p in settings.sources)
    return pinned


def is_memoir_hook(entry: object) -> bool:
    if not isinstance(entry, dict) or entry.get("type", "command") != "command":
        return False
    command = str(entry.get("command", "")).strip()
    command = command.removesuffix(QUIET.strip()).strip()
    if not command.endswith(HOOK_ARGS):
        return False
    head = command[: -len(HOOK_ARGS)].strip()
    return head.endswith(("memoir", "memoir'", "-m memoir.cli"))


def add_hook(
    settings: dict[str, Any], command: str, matcher: str | None = HOOK_MATCHER
) -> tuple[dict[str, Any], bool]:
    """Settings with Memoir's hook present exactly once (pure); True when changed. A new
    group gets ``matcher`` (none when None: Gemini CLI's)."""
    hooks = settings.setdefault("hooks", {})
    if not isinstance(hooks, dict):
        raise ConfigError("Claude Code settings: 'hooks' is not an object; fix the file first")
    groups = hooks.setdefault(HOOK_EVENT, [])
    if not isinstance(groups, list):
        raise ConfigError(f"Claude Code settings: 'hooks.{HOOK_EVENT}' is not a list")
    ours = [
        entry
        for group in groups
        if isinstance(group, dict)
        for entry in group.get("hooks", [])
        if is_memoir_hook(entry)
    ]
    if ours:
        changed = any(entry.get("command") != command for entry in ours)
        for entry in ours:
            entry["command"] = command
        return settings, changed
    entry = {"type": "command", "command": command}
    group: dict[str, Any] = {"hooks": [entry]}
    if matcher is not None:
        group = {"matcher": matcher, **group}
    else:  # Gemini CLI names its hooks (``/hooks disable memoir-sync``)
        entry["name"] = "memoir-sync"
    groups.append(group)
    return settings, True


def remove_hook(settings: dict[str, Any]) -> tuple[dict[str, Any], int]:
    """Settings without Memoir's hook (pure); how many entries were removed."""
    hooks = settings.get("hooks")
    if not isinstance(hooks, dict) or not isinstance(hooks.get(HOOK_EVENT), list):
        return settings, 0
    removed = 0
    kept_groups = []
    for group in hooks[HOOK_EVENT]:
        if not isinstance(group, dict) or not isinstance(group.get("hooks"), list):
            kept_groups.append(group)
            continue
        entries = [e for e in group["hooks"] if not is_memoir_hook(e)]
        removed += len(group["hooks"]) - len(entries)
        if entries or not group["hooks"]:
            kept_groups.append({**group, "hooks": entries})
    if kept_groups:
        hooks[HOOK_EVENT] = kept_groups
    else:
        del hooks[HOOK_EVENT]
    if not hooks:
        del settings["hooks"]
    return settings, removed


def _load(path: Path) -> dict[str, Any]:
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return {}
    except OSError as exc:
        raise ConfigError(f"cannot read {path}: {exc.strerror}") from exc
    if not text.strip():
        return {}
    try:
        data = json.loads(text)
    except ValueError as exc:
        raise ConfigError(f"{path} is not valid JSON ({exc}); fix it, then run again") from exc
    if not isinstance(data, dict):
        raise ConfigError(f"{path} does not hold a JSON object; fix it, then run again")
    return data


def _save(path: Path, data: dict[str, Any]) -> None:
    """Write the settings in one rename — through a symlink to the file it names (a
    dotfiles checkout), keeping that file's permissions (it may hold keys)."""
    path = path.resolve()
    path.parent.mkdir(parents=True, exist_ok=True)
    text = json.dumps(data, indent=2, ensure_ascii=False) + "\n"
    write_text_atomic(path, text, tag="memoir", keep_mode=True)


_SETTINGS_OPT = typer.Option(
    None,
    "--settings",
    help="The agent's settings file (default ~/.claude/settings.json, with --gemini "
    "~/.gemini/settings.json).",
)
_GEMINI_OPT = typer.Option(False, "--gemini", help="Gemini CLI's hook, not Claude Code's.")


@hook_app.command("install")
def install(
    settings: Path | None = _SETTINGS_OPT,
    gemini: bool = _GEMINI_OPT,
    as_json: bool = typer.Option(False, "--json", help="Print JSON."),
) -> None:
    """Add the SessionStart hook that runs `memoir sync --background`."""
    path = settings or default_settings_path(gemini)
    command = hook_command(pinned_settings(Settings.from_env()))
    data, changed = add_hook(_load(path), command, None if gemini else HOOK_MATCHER)
    if changed:
        _save(path, data)
    if as_json:
        print_json({"settings": str(path), "command": command, "changed": changed})
    elif changed:
        console.print(f"Installed the SessionStart hook in {path}:\n  {command}")
    else:
        console.print(f"The hook is already installed in {path}.")


@hook_app.command("uninstall")
def uninstall(
    settings: Path | None = _SETTINGS_OPT,
    gemini: bool = _GEMINI_OPT,
    as_json: bool = typer.Option(False, "--json", help="Print JSON."),
) -> None:
    """Remove Memoir's SessionStart hook (other hooks are kept)."""
    path = settings or default_settings_path(gemini)
    removed = 0
    if path.exists():
        data, removed = remove_hook(_load(path))
        if removed:
            _save(path, data)
    if as_json:
        print_json({"settings": str(path), "removed": removed})
    else:
        console.print(
            f"Removed {removed} Memoir hook(s) from {path}." if removed else "No Memoir hook found."
        )


@hook_app.command("status")
def status(
    settings: Path | None = _SETTINGS_OPT,
    gemini: bool = _GEMINI_OPT,
    as_json: bool = typer.Option(False, "--json", help="Print JSON."),
) -> None:
    """Show whether the hook is installed and the command it runs."""
    path = settings or default_settings_path(gemini)
    hooks = _load(path).get("hooks") if path.exists() else None
    groups = hooks.get(HOOK_EVENT) if isinstance(hooks, dict) else None
    groups = groups if isinstance(groups, list) else []
    commands = [
        str(entry.get("command"))
        for group in groups
        if isinstance(group, dict)
        for entry in group.get("hooks", [])
        if is_memoir_hook(entry)
    ]
    if as_json:
        print_json({"settings": str(path), "installed": bool(commands), "commands": commands})
    else:
        console.print(f"installed: {commands[0]}" if commands else f"not installed in {path}")
