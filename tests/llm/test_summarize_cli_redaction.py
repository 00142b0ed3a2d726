"""`memoir summarize` through the CLI entry point, with a remote model (an OpenAI-compatible
URL pointing at a recording server): no secret of a synced transcript reaches the wire —
neither the 12 kinds of the wire test, nor assignments joined on one line, nor a private
key in the middle of a line."""

from __future__ import annotations

import gc
import json
import warnings
from pathlib import Path

import pytest

from cli_run import run_cli
from memoir.demo import ClaudeWriter, tool_use_block

from .test_redaction_wire import SECRETS
from .wire import Reply, WireServer, openai_chat

SID = "5ec7e7a1-0000-4000-8000-0000000051a1"
JOINED = "export DB_PASSWORD=Zq8s3cr3tV4lue; API_KEY=abc123xyz789q && ./deploy"
JOINED_SECRETS = ("Zq8s3cr3tV4lue", "abc123xyz789q")
PEM_BODY = "MIIEowIBAAKCAQEAx9Zp2Jx1q3Jm0q0u9s4nGf1QeXbHk3n0dJ5Lw3q"
MID_LINE = (
    f"the host key is -----BEGIN RSA PRIVATE KEY----- {PEM_BODY} "
    "-----END RSA PRIVATE KEY----- (kept in the vault)"
)


def _transcript(folder: Path) -> Path:
    lines = [context.format(secret=secret) for _kind, secret, context in SECRETS]
    third = len(lines) // 3
    writer = ClaudeWriter(SID, cwd="/home/ann/code/vault")
    writer.user("Please deploy the vault service with these:\n" + "\n".join(lines[:third]))
    command = "\n".join([*lines[third : 2 * third], JOINED])
    writer.assistant(tool_use_block("call-1", "Bash", {"command": command}))
    writer.tool("call-1", "$ cat .env\n" + "\n".join(lines[2 * third :]) + "\n" + MID_LINE)
    writer.assistant("The vault service is deployed; the keys are in place.")
    path = folder / "projects" / "-home-ann-code-vault" / f"{SID}.jsonl"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(writer.bytes())
    return path


def _run(args: list[str], capsys: pytest.CaptureFixture[str]) -> str:
    code, out, err = run_cli(args, capsys)
    assert code == 0, out + err
    return out


def test_summarize_sends_no_secret_of_a_synced_transcript(
    wire: WireServer,
    home: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.setenv("MEMOIR_HOME", str(home))
    monkeypatch.setenv("MEMOIR_LLM", "openai:gpt-test")
    monkeypatch.setenv("MEMOIR_LLM_BASE_URL", wire.base_url + "/v1")
    monkeypatch.setenv("MEMOIR_LLM_API_KEY", "sk-test")
    source = _transcript(tmp_path / "src").parents[1]
    _run(["sync", "--source", str(source), "--no-summaries", "--json"], capsys)
    answer = json.dumps({"narrative": "The vault service was deployed.", "facts": ["deployed"]})
    wire.queue(*[Reply(200, openai_chat(answer)) for _ in range(20)])

    out = json.loads(_run(["summarize", SID[:8], "--json", "--no-cache"], capsys))
    with warnings.catch_warnings():  # the CLI leaves its model's connection to the GC
        warnings.simplefilter("ignore", ResourceWarning)
        gc.collect()

    assert wire.received, out  # the remote model was asked
    sent = "\n".join(json.dumps(r.body) for r in wire.received)
    assert "deploy the vault service" in sent  # the transcript itself went out
    for _kind, secret, _context in SECRETS:
        for part in secret.splitlines()[-2:]:  # a key's body line, a JWT's signature too
            assert part.rsplit(".", 1)[-1] not in sent, part
    for secret in (*JOINED_SECRETS, PEM_BODY):
        assert secret not in sent, secret
    assert "[redacted: private key]" in sent and "[redacted: secret]" in sent
    # the key only, not the words around it on its line
    assert "the host key is [redacted: private key] (kept in the vault)" in sent
