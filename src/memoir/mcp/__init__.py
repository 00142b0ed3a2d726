"""The MCP server: Memoir's search, read, summaries and memories as tools an agent calls,
and what ``memoir mcp install`` writes for the hosts that start it.

``memoir mcp`` serves the tools over stdio with the official ``mcp`` SDK (the ``mcp``
extra). Importing this package does not import the SDK: :func:`serve` loads it when it
starts, so every other command stays as quick as it was. Modules: ``tools`` (names,
descriptions for a model, schemas, argument checks, result bounds), ``reading`` (read,
paged; the Memoir opened on first use), ``server`` (the SDK wiring and the handlers).

The hosts (pure text in, text out; the CLI reads and writes the files). Codex reads MCP
servers from ``[mcp_servers.<name>]`` tables in ``$CODEX_HOME/config.toml`` (``~/.codex``
by default): ``command``, ``args``, ``env`` (variables set for the server), ``env_vars``
(variables forwarded from Codex's own environment, which otherwise passes only a short
default list), ``startup_timeout_sec`` and ``tool_timeout_sec``. :func:`with_entry` puts
Memoir's table in a config text: where it was if there was one, else at the end;
everything else is kept byte for byte. The result is parsed again and must say exactly
what the old text said plus Memoir's entry — anything else (a line that only looks like a
table header, an entry written as an inline table) stops with a
:class:`~memoir.errors.ConfigError` before anything is written. Giving the same entry
twice changes nothing the second time.

The Claude Code plugin (``memoir mcp install --claude``): the repository's
``integrations/claude-code`` with the commands that start Memoir made absolute. The
shipped folder's ``.mcp.json`` and ``hooks/hooks.json`` run a bare ``memoir``, which Claude
Code finds only when it is on the PATH it starts commands with (a venv's ``bin/memoir``
rarely is). :func:`installed_files` takes the folder's files (path → text) and returns
them with the MCP server's command and every Memoir hook's command replaced by the ones
given — the absolute path of the memoir that installs, with the settings it pins — and
everything else (the manifest, the marketplace, the skill) as it was.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import sys
import tomllib
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from memoir.config import Settings
from memoir.errors import ConfigError
from memoir.mcp.reading import Home
from memoir.mcp.tools import MAX_RESULT_CHARS, TOOLS, ToolSpec
from memoir.model.event import LOCAL_USER

__all__ = [
    "FORWARDED",
    "HOOKS_FILE",
    "HOOK_ARGS",
    "HOOK_EVENT",
    "HOOK_MATCHER",
    "MANIFEST",
    "MAX_RESULT_CHARS",
    "MCP_FILE",
    "NAME",
    "TOOLS",
    "CodexEntry",
    "Home",
    "ToolSpec",
    "add_hook",
    "codex_config_path",
    "default_settings_path",
    "hook_command",
    "installed_files",
    "is_memoir_hook",
    "is_plugin",
    "memoir_command",
    "memoir_hooks",
    "pinned_settings",
    "plugin_dir",
    "plugin_mcp_command",
    "read_config",
    "remove_hook",
    "render",
    "serve",
    "with_entry",
]


def serve(settings: Settings, workdir: Path | None = None, user: str = LOCAL_USER) -> None:
    """Serve Memoir's tools over stdio until the client closes stdin (needs the ``mcp``
    extra; ``workdir`` is where the agent works: ``remember``'s current conversation).
    Every tool acts for ``user`` only: it reads, lists, changes and forgets that user's
    conversations and memories, and no tool takes a user argument."""
    from memoir.mcp.server import serve as run

    run(settings, workdir, user)


# the hosts -----------------------------------------------------------------------------

NAME = "memoir"

# what the server may need from Codex's environment (forwarded when set there)
FORWARDED = (
    "MEMOIR_HOME",
    "MEMOIR_USER",  # whom the server acts for, when the entry names no --user
    "MEMOIR_SOURCES",
    "MEMOIR_DATABASE_URL",
    "MEMOIR_LLM",
    "MEMOIR_LLM_BASE_URL",
    "MEMOIR_LLM_API_KEY",
    "MEMOIR_LLM_FALLBACK",
    "MEMOIR_EMBEDDER",
    "MEMOIR_SUMMARY_STORE",
    "MEMOIR_EXCLUDE_PROJECTS",
    "OPENAI_API_KEY",
    "OPENAI_BASE_URL",
    "ANTHROPIC_API_KEY",
    "ANTHROPIC_BASE_URL",
)

_HEADER = re.compile(r"^\s*\[")

_OURS = re.compile(
    r"""^\s*\[\s*mcp_servers\s*\.\s*(?:memoir|"memoir"|'memoir')\s*(?:\.[^\]]*)?\]"""
)


@dataclass(frozen=True, slots=True)
class CodexEntry:
    command: str
    args: tuple[str, ...] = ("mcp",)
    env: tuple[tuple[str, str], ...] = ()
    startup_timeout_sec: int = 20
    tool_timeout_sec: int = 120

    @classmethod
    def make(
        cls,
        command: str | Sequence[str],
        pinned: Mapping[str, str] | None = None,
        user: str | None = None,
    ) -> CodexEntry:
        """The entry running ``command mcp`` — ``command`` a program, or a program and its
        first arguments (``python -m memoir.cli``); ``mcp --user USER`` when ``user`` is
        given (the server acts for that user only) — with ``pinned`` variables set (the
        home and sources this install was made for)."""
        argv = (command,) if isinstance(command, str) else tuple(command)
        mcp = ("mcp",) if user is None else ("mcp", "--user", user)
        return cls(
            command=argv[0], args=(*argv[1:], *mcp), env=tuple(sorted((pinned or {}).items()))
        )

    @property
    def env_vars(self) -> tuple[str, ...]:
        pinned = {k for k, _ in self.env}
        return tuple(v for v in FORWARDED if v not in pinned)

    def as_toml_value(self) -> dict[str, Any]:
        """What tomllib reads back from :func:`render`."""
        out: dict[str, Any] = {"command": self.command, "args": list(self.args)}
        if self.env:
            out["env"] = dict(self.env)
        out["env_vars"] = list(self.env_vars)
        out["startup_timeout_sec"] = self.startup_timeout_sec
        out["tool_timeout_sec"] = self.tool_timeout_sec
        return out


def _string(value: str) -> str:
    """A TOML basic string."""
    out = ['"']
    for char in value:
        if char in ('"', "\\"):
            out.append("\\" + char)
        elif ord(char) < 0x20 or ord(char) == 0x7F:
            out.append(f"\\u{ord(char):04x}")
        else:
            out.append(char)
    out.append('"')
    return "".join(out)


def _strings(values: Sequence[str]) -> str:
    return "[" + ", ".join(_string(v) for v in values) + "]"


def render(entry: CodexEntry) -> str:
    lines = [
        "# Memoir: search, read and remember past conversations (`memoir mcp install --codex`)",
        f"[mcp_servers.{NAME}]",
        f"command = {_string(entry.command)}",
        f"args = {_strings(entry.args)}",
    ]
    if entry.env:
        pairs = ", ".join(f"{k} = {_string(v)}" for k, v in entry.env)
        lines.append(f"env = {{ {pairs} }}")
    lines.append(f"env_vars = {_strings(entry.env_vars)}")
    lines.append(f"startup_timeout_sec = {entry.startup_timeout_sec}")
    lines.append(f"tool_timeout_sec = {entry.tool_timeout_sec}")
    return "\n".join(lines) + "\n"


def read_config(text: str, where: str = "config.toml") -> dict[str, Any]:
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{where} is not valid TOML ({exc}); fix it, then run again") from exc


def _without_ours(data: dict[str, Any]) -> dict[str, Any]:
    servers = data.get("mcp_servers")
    if not isinstance(servers, dict) or NAME not in servers:
        return data
    rest = {k: v for k, v in servers.items() if k != NAME}
    out = {k: v for k, v in data.items() if k != "mcp_servers"}
    if rest:
        out["mcp_servers"] = rest
    return out


def _drop_blocks(lines: list[str]) -> tuple[list[str], int | None]:
    """The lines without Memoir's tables (and the comment line ``render`` puts above
    them), and where the first one began."""
    kept: list[str] = []
    at: int | None = None
    inside = False
    for line in lines:
        if _HEADER.match(line):
            inside = bool(_OURS.match(line))
            if inside and at is None:
                if kept and kept[-1].startswith("# Memoir:"):
                    kept.pop()
                at = len(kept)
        if not inside:
            kept.append(line)
    return kept, at


def with_entry(text: str, entry: CodexEntry, where: str = "config.toml") -> tuple[str, bool]:
    """``text`` with Memoir's entry in it, and whether that changed anything."""
    old = read_config(text, where)
    servers = old.get("mcp_servers")
    if isinstance(servers, dict) and servers.get(NAME) == entry.as_toml_value():
        return text, False
    lines, at = _drop_blocks(text.splitlines(keepends=True))
    block = render(entry)
    if at is None:
        body = "".join(lines)
        if body and not body.endswith("\n"):
            body += "\n"
        new = body + ("\n" if body.strip() else "") + block
    else:
        before, after = "".join(lines[:at]), "".join(lines[at:])
        if before and not before.endswith("\n"):
            before += "\n"
        new = before + block + ("\n" + after.lstrip("\n") if after.strip() else "")
    try:
        parsed = tomllib.loads(new)
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(
            f"cannot add Memoir's entry to {where} ({exc}); add it by hand:\n{block}"
        ) from exc
    ours = parsed.get("mcp_servers", {}).get(NAME)
    if ours != entry.as_toml_value() or _without_ours(parsed) != _without_ours(old):
        raise ConfigError(
            f"{where} defines mcp_servers.{NAME} in a form this command does not rewrite "
            f"(an inline table, dotted keys); remove that entry and run again, or add by "
            f"hand:\n{block}"
        )
    return new, True


MANIFEST = ".claude-plugin/plugin.json"

MCP_FILE = ".mcp.json"

HOOKS_FILE = "hooks/hooks.json"

SERVER = "memoir"


def _json(files: Mapping[str, str], name: str) -> dict[str, Any]:
    try:
        data = json.loads(files[name])
    except KeyError:
        raise ConfigError(f"the plugin folder has no {name}") from None
    except ValueError as exc:
        raise ConfigError(f"the plugin's {name} is not valid JSON ({exc})") from exc
    if not isinstance(data, dict):
        raise ConfigError(f"the plugin's {name} does not hold a JSON object")
    return data


def is_plugin(files: Mapping[str, str]) -> bool:
    """Do these files make Memoir's plugin (its manifest names it ``memoir``)?"""
    try:
        return _json(files, MANIFEST).get("name") == SERVER
    except ConfigError:
        return False


def _dump(data: dict[str, Any]) -> str:
    return json.dumps(data, indent=2, ensure_ascii=False) + "\n"


def installed_files(
    files: Mapping[str, str],
    *,
    mcp_argv: Sequence[str],
    hook: str,
    env: Mapping[str, str],
    is_memoir_hook: Callable[[object], bool],
) -> dict[str, str]:
    """``files`` with the MCP server started as ``mcp_argv`` (with ``env`` set when it is
    not empty) and each Memoir hook (``is_memoir_hook``) running ``hook``."""
    if not is_plugin(files):
        raise ConfigError(f"not Memoir's Claude Code plugin: {MANIFEST} does not name memoir")
    out = dict(files)
    mcp = _json(files, MCP_FILE)
    servers = mcp.get("mcpServers")
    if not isinstance(servers, dict) or not isinstance(servers.get(SERVER), dict):
        raise ConfigError(f"the plugin's {MCP_FILE} has no mcpServers.{SERVER} entry")
    entry: dict[str, Any] = {k: v for k, v in servers[SERVER].items() if k != "env"}
    entry["command"], entry["args"] = mcp_argv[0], list(mcp_argv[1:])
    if env:
        entry["env"] = dict(sorted(env.items()))
    mcp["mcpServers"] = {**servers, SERVER: entry}
    out[MCP_FILE] = _dump(mcp)
    hooks = _json(files, HOOKS_FILE)
    replaced = 0
    for groups in (hooks.get("hooks") or {}).values():
        for group in groups if isinstance(groups, list) else []:
            for command in group.get("hooks", []) if isinstance(group, dict) else []:
                if is_memoir_hook(command):
                    command["command"] = hook
                    replaced += 1
    if not replaced:
        raise ConfigError(f"the plugin's {HOOKS_FILE} holds no Memoir hook to point at memoir")
    out[HOOKS_FILE] = _dump(hooks)
    return out


# where the hosts keep their settings, and the command that starts this memoir ----------

HOOK_EVENT = "SessionStart"
HOOK_MATCHER = "startup|resume"
HOOK_ARGS = "sync --background"
# SessionStart stdout is added to the agent's context: the hook stays silent
QUIET = " >/dev/null 2>&1"


def codex_config_path() -> Path:
    home = os.environ.get("CODEX_HOME")
    return (Path(home).expanduser() if home else Path.home() / ".codex") / "config.toml"


def plugin_dir() -> Path | None:
    """The Claude Code plugin of this checkout (None for an installed wheel)."""
    found = Path(__file__).resolve().parents[3] / "integrations" / "claude-code"
    return found if (found / ".claude-plugin" / "plugin.json").is_file() else None


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


def memoir_hooks(settings: dict[str, Any]) -> list[str]:
    """The commands of Memoir's hooks in an agent's settings (pure)."""
    hooks = settings.get("hooks")
    groups = hooks.get(HOOK_EVENT) if isinstance(hooks, dict) else None
    return [
        str(entry.get("command"))
        for group in (groups if isinstance(groups, list) else [])
        if isinstance(group, dict)
        for entry in group.get("hooks", [])
        if is_memoir_hook(entry)
    ]


def plugin_mcp_command(files: dict[str, str]) -> list[str]:
    """The MCP server's command line in a plugin's files."""
    entry = json.loads(files[".mcp.json"])["mcpServers"]["memoir"]
    return [entry["command"], *entry.get("args", [])]
