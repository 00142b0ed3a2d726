"""The Claude Code plugin as ``memoir mcp install --claude`` writes it: the repository's
``integrations/claude-code`` with the commands that start Memoir made absolute.

The shipped folder's ``.mcp.json`` and ``hooks/hooks.json`` run a bare ``memoir``, which
Claude Code finds only when it is on the PATH it starts commands with (a venv's
``bin/memoir`` rarely is). :func:`installed_files` takes the folder's files (path → text)
and returns them with the MCP server's command and every Memoir hook's command replaced
by the ones given — the absolute path of the memoir that installs, with the settings it
pins — and everything else (the manifest, the marketplace, the skill) as it was. Pure: the
CLI reads and writes the files.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from memoir.errors import ConfigError

__all__ = ["HOOKS_FILE", "MANIFEST", "MCP_FILE", "installed_files", "is_plugin"]

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
