"""A recording OpenAI-compatible server sees none of 12 kinds of secrets put in tool output,
prompts and tool inputs; the ledger counts them; with MEMOIR_REDACT=off they go through."""

from __future__ import annotations

import pytest

from memoir.config import Settings
from memoir.errors import ConfigError
from memoir.llm.port import ChatMessage, MemorySink, ModelRequest, Purpose, RequestMeta
from memoir.llm.sdk_providers import OpenAIModel
from memoir.llm.wiring import wrap
from memoir.secrets import placeholder

from .wire import Reply, WireServer, openai_chat

PEM = (
    "-----BEGIN RSA PRIVATE KEY-----\n"
    "MIIEowIBAAKCAQEAv8Zp2Jx1q3Jm0q0u9s4nGf1QeXbHk3n0dJ5Lw3q\n"
    "-----END RSA PRIVATE KEY-----"
)
# (kind, secret, the line it sits in)
SECRETS = [
    ("private_key", PEM, "{secret}"),
    ("aws_access_key", "AKIAQYLPMN5HHHFPZAM2", "aws_access_key_id = {secret}"),
    (
        "github_token",
        "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",
        "gh auth login --with-token {secret}",
    ),
    (
        "basic_auth_credentials",
        "Zq8hunter2pass",
        "DATABASE_URL=postgres://bob:{secret}@db.example.com/app",
    ),
    ("secret_keyword", "s3cr3tV4lue", "DB_PASSWORD={secret}"),
    ("hex_high_entropy_string", "9f8e7d6c5b4a39281706aa", "AUTH_TOKEN={secret}"),
    ("base64_high_entropy_string", "q8Zr2LmX0vT7bN4kP1sW9yD3", "export SESSION_KEY='{secret}'"),
    ("slack_token", "xoxb-123456789012-1234567890123-AbCdEfGhIjKlMnOpQrStUvWx", "SLACK={secret}"),
    ("stripe_access_key", "sk_live_4eC39HqLyjWDarjtT1zdp7dc", "stripe key {secret}"),
    (
        "json_web_token",
        "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U",
        "Authorization: Bearer {secret}",
    ),
    (
        "sendgrid_api_key",
        "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",
        "sendgrid {secret}",
    ),
    (
        "npm_tokens",
        "npm_abcdefghijklmnopqrstuvwxyz0123456789",
        "//registry.npmjs.org/:_authToken={secret}",
    ),
]


def _request() -> ModelRequest:
    lines = [context.format(secret=secret) for _kind, secret, context in SECRETS]
    third = len(lines) // 3
    prompt = "User: please deploy; " + "\n".join(lines[:third])
    tool_input = "Tool call (Bash): " + "\n".join(lines[third : 2 * third])
    tool_output = "Tool result: $ cat .env\n" + "\n".join(lines[2 * third :])
    transcript = "\n".join((prompt, tool_input, tool_output))
    return ModelRequest(
        messages=(ChatMessage("user", f"<transcript>\n{transcript}\n</transcript>"),),
        max_tokens=200,
        system="Summarize the conversation.",
        meta=RequestMeta(purpose=Purpose.SUMMARY, session="s1"),
    )


def _wrapped(wire: WireServer, redact: str) -> tuple[object, MemorySink]:
    inner = wire.track(
        OpenAIModel("gpt-test", api_key="sk-test", base_url=wire.base_url + "/v1", timeout_s=5.0)
    )
    sink = MemorySink()
    settings = Settings(llm="openai:gpt-test", llm_api_key="sk-test", redact=redact)
    return wrap(inner, sink, settings), sink


@pytest.mark.parametrize("purpose", [Purpose.SUMMARY, Purpose.EPISODE, Purpose.COMPACTION])
def test_the_server_sees_no_secret_and_the_ledger_counts_them(
    wire: WireServer, purpose: Purpose
) -> None:
    wire.queue(Reply(200, openai_chat("a summary")))
    model, sink = _wrapped(wire, "on")
    request = _request()
    request = ModelRequest(
        messages=request.messages,
        max_tokens=request.max_tokens,
        system=request.system,
        meta=RequestMeta(purpose=purpose, session="s1"),
    )
    assert model.complete(request).text == "a summary"  # type: ignore[attr-defined]
    (received,) = wire.received
    body = str(received.body)
    for _kind, secret, _context in SECRETS:
        for part in secret.splitlines()[-2:]:  # a key's body line, a JWT's signature too
            assert part.rsplit(".", 1)[-1] not in body
    assert body.count("[redacted: ") == len(SECRETS)  # one placeholder per secret
    assert placeholder("private_key") in body
    (row,) = sink.records
    assert row.redacted == len(SECRETS)
    assert row.purpose == str(purpose)


def test_with_redaction_off_the_secrets_go_through(wire: WireServer) -> None:
    wire.queue(Reply(200, openai_chat("a summary")))
    model, sink = _wrapped(wire, "off")
    model.complete(_request())  # type: ignore[attr-defined]
    body = str(wire.received[0].body)
    assert "AKIAQYLPMN5HHHFPZAM2" in body
    assert sink.records[0].redacted == 0


def test_bad_setting_is_one_config_error() -> None:
    with pytest.raises(ConfigError, match="MEMOIR_REDACT"):
        Settings.from_env({"MEMOIR_REDACT": "maybe"})
    assert Settings.from_env({"MEMOIR_REDACT": "OFF"}).redact == "off"
    assert Settings.from_env({}).redact == "on"
