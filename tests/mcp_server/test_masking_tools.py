"""The MCP tools always mask secrets in transcript text: `search` snippets and `read` pages
(a tool's result goes to a model; there is no argument to reveal them)."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

from memoir.demo import ClaudeWriter, tool_use_block

from .mcp_client import Client, Server, base_env, run_cli

SID = "5ec7e7a1-0000-4000-8000-00000000f00d"
AWS = "AKIAQYLPMN5HHHFPZAM2"
PASSWORD = "s3cr3tV4lue"
PEM_BODY = "MIIEowIBAAKCAQEAv8Zp2Jx1q3Jm0q0u9s4nGf1QeXbHk3n0dJ5Lw3q"
PEM = f"-----BEGIN RSA PRIVATE KEY-----\n{PEM_BODY}\n-----END RSA PRIVATE KEY-----"


def _home(tmp_path: Path) -> Path:
    writer = ClaudeWriter(SID, cwd="/home/ann/code/vault")
    writer.user(f"Deploy the zanzibar service; my AWS key is {AWS} for it.")
    command = f"DB_PASSWORD={PASSWORD}; API_KEY=abc123xyz789q ./deploy zanzibar"
    writer.assistant(tool_use_block("call-1", "Bash", {"command": command}))
    writer.tool("call-1", f"deployed zanzibar with the host key {PEM} in place")
    writer.assistant("The zanzibar service is deployed.")
    source = tmp_path / "src" / "projects"
    path = source / "-home-ann-code-vault" / f"{SID}.jsonl"
    path.parent.mkdir(parents=True)
    path.write_bytes(writer.bytes())
    home = tmp_path / "home"
    (tmp_path / "user-home").mkdir(exist_ok=True)
    env = base_env(tmp_path / "user-home", MEMOIR_HOME=str(home))
    run_cli(env, "sync", "--source", str(source), "--no-summaries")
    return home


def test_search_and_read_show_placeholders_not_secrets(
    tmp_path: Path, server_for: Callable[..., Server]
) -> None:
    home = _home(tmp_path)

    async def body(client: Client) -> Any:
        return (
            await client.call("search", {"query": "zanzibar aws key", "mode": "text"}),
            await client.call("read", {"id": SID, "tools": "full"}),
        )

    found, read = server_for(home).run(body)
    hits = found.data["hits"]
    assert hits and "[redacted: AWS access key]" in json.dumps(hits)
    texts = [e["text"] for e in read.data["events"]]
    shown = "[redacted: AWS access key]"
    assert texts[0] == f"Deploy the zanzibar service; my AWS key is {shown} for it."
    assert "deployed zanzibar with the host key [redacted: private key] in place" in texts
    assert any("DB_PASSWORD=[redacted: secret]" in t for t in texts)
    for reply in (found, read):
        for secret in (AWS, PASSWORD, PEM_BODY):
            assert secret not in reply.text
