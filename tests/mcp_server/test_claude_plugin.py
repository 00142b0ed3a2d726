"""The Claude Code plugin in integrations/claude-code: its files validate against the
formats Claude Code documents, its hook is Memoir's sync hook, its server entry starts."""

from __future__ import annotations

import json
import re
import subprocess
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import jsonschema
import pytest

import memoir
from memoir.mcp import HOOK_ARGS, is_memoir_hook, plugin_dir

from .mcp_client import Client, Server, run_cli

PLUGIN = Path(__file__).resolve().parents[2] / "integrations" / "claude-code"
KEBAB = r"^[a-z][a-z0-9]*(-[a-z0-9]+)*$"
SEMVER = r"^\d+\.\d+\.\d+(-[0-9A-Za-z.-]+)?$"
RELATIVE = r"^\./(?!.*\.\./)[^\\]*$"  # "./…", no "..", forward slashes

_PATH = {"type": "string", "pattern": RELATIVE}
_PATHS = {"oneOf": [_PATH, {"type": "array", "items": _PATH}]}
_AUTHOR = {
    "oneOf": [
        {"type": "string"},
        {
            "type": "object",
            "required": ["name"],
            "properties": {
                "name": {"type": "string"},
                "email": {"type": "string"},
                "url": {"type": "string"},
            },
            "additionalProperties": False,
        },
    ]
}
# .claude-plugin/plugin.json as the plugins reference describes it (every field optional
# but the kebab-case name; component paths relative, "./" first)
PLUGIN_SCHEMA = {
    "type": "object",
    "required": ["name"],
    "additionalProperties": False,
    "properties": {
        "name": {"type": "string", "pattern": KEBAB},
        "version": {"type": "string", "pattern": SEMVER},
        "description": {"type": "string", "minLength": 1},
        "author": _AUTHOR,
        "homepage": {"type": "string"},
        "repository": {"oneOf": [{"type": "string"}, {"type": "object"}]},
        "license": {"type": "string"},
        "keywords": {"type": "array", "items": {"type": "string"}},
        "commands": _PATHS,
        "agents": _PATHS,
        "skills": _PATHS,
        "outputStyles": _PATHS,
        "hooks": {"oneOf": [_PATH, {"type": "object"}]},
        "mcpServers": {"oneOf": [_PATH, {"type": "object"}]},
        "lspServers": {"oneOf": [_PATH, {"type": "object"}]},
        "userConfig": {"type": "object"},
    },
}
# .claude-plugin/marketplace.json: a name, an owner, the plugins with their source
MARKETPLACE_SCHEMA = {
    "type": "object",
    "required": ["name", "owner", "plugins"],
    "properties": {
        "name": {"type": "string", "pattern": KEBAB},
        "owner": _AUTHOR["oneOf"][1],
        "description": {"type": "string"},
        "plugins": {
            "type": "array",
            "minItems": 1,
            "items": {
                "type": "object",
                "required": ["name", "source"],
                "properties": {
                    "name": {"type": "string", "pattern": KEBAB},
                    "source": {
                        "oneOf": [{"type": "string", "pattern": r"^\./"}, {"type": "object"}]
                    },
                    "description": {"type": "string"},
                    "version": {"type": "string", "pattern": SEMVER},
                    "category": {"type": "string"},
                },
            },
        },
    },
}
EVENTS = [
    "PreToolUse", "PostToolUse", "UserPromptSubmit", "Notification", "Stop", "SubagentStop",
    "SessionStart", "SessionEnd", "PreCompact",
]  # fmt: skip
# hooks/hooks.json: {"description"?, "hooks": {event: [{matcher?, hooks: [command …]}]}}
HOOKS_SCHEMA = {
    "type": "object",
    "required": ["hooks"],
    "additionalProperties": False,
    "properties": {
        "description": {"type": "string"},
        "hooks": {
            "type": "object",
            "propertyNames": {"enum": EVENTS},
            "additionalProperties": {
                "type": "array",
                "items": {
                    "type": "object",
                    "required": ["hooks"],
                    "additionalProperties": False,
                    "properties": {
                        "matcher": {"type": "string"},
                        "hooks": {
                            "type": "array",
                            "minItems": 1,
                            "items": {
                                "type": "object",
                                "required": ["type", "command"],
                                "additionalProperties": False,
                                "properties": {
                                    "type": {"const": "command"},
                                    "command": {"type": "string", "minLength": 1},
                                    "timeout": {"type": "number", "exclusiveMinimum": 0},
                                },
                            },
                        },
                    },
                },
            },
        },
    },
}
# .mcp.json: {"mcpServers": {name: a stdio server (command, args, env)}}
MCP_SCHEMA = {
    "type": "object",
    "required": ["mcpServers"],
    "additionalProperties": False,
    "properties": {
        "mcpServers": {
            "type": "object",
            "minProperties": 1,
            "additionalProperties": {
                "type": "object",
                "required": ["command"],
                "additionalProperties": False,
                "properties": {
                    "type": {"const": "stdio"},
                    "command": {"type": "string", "minLength": 1},
                    "args": {"type": "array", "items": {"type": "string"}},
                    "env": {"type": "object", "additionalProperties": {"type": "string"}},
                    "cwd": {"type": "string"},
                },
            },
        }
    },
}


def _json(relative: str) -> Any:
    return json.loads((PLUGIN / relative).read_text(encoding="utf-8"))


@pytest.mark.parametrize(
    ("relative", "schema"),
    [
        (".claude-plugin/plugin.json", PLUGIN_SCHEMA),
        (".claude-plugin/marketplace.json", MARKETPLACE_SCHEMA),
        ("hooks/hooks.json", HOOKS_SCHEMA),
        (".mcp.json", MCP_SCHEMA),
    ],
)
def test_each_plugin_file_has_the_documented_shape(relative: str, schema: Any) -> None:
    jsonschema.Draft202012Validator.check_schema(schema)
    jsonschema.validate(_json(relative), schema)


def test_a_schema_catches_what_claude_code_would_refuse() -> None:
    bad = [
        ({"name": "Memoir Plugin"}, PLUGIN_SCHEMA),
        ({"name": "memoir", "hooks": "hooks/hooks.json"}, PLUGIN_SCHEMA),
        ({"name": "memoir", "version": "1.0"}, PLUGIN_SCHEMA),
        ({"hooks": {"OnStart": []}}, HOOKS_SCHEMA),
        ({"hooks": {"SessionStart": [{"hooks": [{"type": "command"}]}]}}, HOOKS_SCHEMA),
        ({"memoir": {"command": "memoir"}}, MCP_SCHEMA),
    ]
    for document, schema in bad:
        with pytest.raises(jsonschema.ValidationError):
            jsonschema.validate(document, schema)


def test_the_manifest_and_the_marketplace_agree_with_the_package() -> None:
    manifest = _json(".claude-plugin/plugin.json")
    market = _json(".claude-plugin/marketplace.json")
    (entry,) = market["plugins"]
    assert entry["name"] == manifest["name"] == "memoir"
    assert entry["version"] == manifest["version"] == memoir.__version__
    assert (PLUGIN / entry["source"]).resolve() == PLUGIN  # installable from this folder
    assert plugin_dir() == PLUGIN  # what `memoir mcp install --claude` points at


def test_the_skill_has_the_frontmatter_skills_need() -> None:
    text = (PLUGIN / "skills" / "memoir" / "SKILL.md").read_text(encoding="utf-8")
    match = re.match(r"^---\n(.*?)\n---\n", text, re.DOTALL)
    assert match is not None
    fields = dict(line.split(": ", 1) for line in match.group(1).splitlines())
    assert set(fields) == {"name", "description"}
    assert re.fullmatch(r"[a-z0-9-]{1,64}", fields["name"]) and fields["name"] == "memoir"
    assert 0 < len(fields["description"]) <= 1024
    for tool in ("search", "read", "summary", "memories", "remember", "forget"):
        assert f"`{tool}`" in text


def test_the_hook_is_memoirs_sync_hook_and_runs(tmp_path: Path) -> None:
    from memoir.demo.make_corpus import corpus_sources

    from .mcp_client import base_env

    (group,) = _json("hooks/hooks.json")["hooks"]["SessionStart"]
    assert group["matcher"] == "startup|resume"
    (hook,) = group["hooks"]
    assert is_memoir_hook(hook) and HOOK_ARGS in hook["command"]
    home = tmp_path / "hook-home"
    env = base_env(
        tmp_path / "user-home",
        MEMOIR_HOME=str(home),
        MEMOIR_SOURCES=str(corpus_sources()[0]),
    )
    done = subprocess.run(["sh", "-c", hook["command"]], env=env, timeout=60, check=False)
    assert done.returncode == 0
    for _ in range(600):  # the sync it started is detached: wait for it to finish
        logs = list((home / "logs").glob("sync-*.log")) if (home / "logs").is_dir() else []
        if logs and "seconds" in logs[0].read_text(encoding="utf-8", errors="replace"):
            break
        time.sleep(0.1)
    else:
        raise AssertionError("the hook's background sync did not finish")
    stats = json.loads(run_cli(env, "stats", "--json").stdout)
    assert stats["sessions"] == 10  # the Claude Code part of the demo corpus


def test_the_mcp_entry_starts_the_server(
    demo_home: Path, server_for: Callable[..., Server]
) -> None:
    (server_entry,) = _json(".mcp.json")["mcpServers"].values()
    server = server_for(demo_home)
    server.command, server.args = server_entry["command"], tuple(server_entry["args"])
    assert server.command == "memoir"  # found on PATH, as Claude Code starts it

    async def body(client: Client) -> Any:
        tools = (await client.session.list_tools()).tools
        return tools, await client.call("search", {"query": "PgBouncer", "mode": "text"})

    tools, hits = server.run(body)
    assert {t.name for t in tools} == {
        "search",
        "read",
        "summary",
        "remember",
        "memories",
        "forget",
    }
    assert hits.data["hits"][0]["project"] == "-home-ann-code-infra"
