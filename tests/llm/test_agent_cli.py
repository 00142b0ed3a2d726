"""The pure parts of the agent-CLI models: what a failing CLI said → the error tree (a
table), a request → the one prompt a CLI takes, and the specs that name them."""

from __future__ import annotations

import pytest

from memoir.errors import ConfigError
from memoir.llm import encoding_for_model
from memoir.llm.mapping import NEUTRAL_SYSTEM, error_for_message, prompt_of, system_of
from memoir.llm.port import (
    ChatMessage,
    ContextTooLong,
    ModelError,
    ModelRequest,
    OutOfCredit,
    RateLimited,
    Refused,
    Transient,
    Unauthorized,
    UnknownModel,
)
from memoir.llm.wiring import ModelSpec, agent_missing, parse_spec

NOW = 1_767_000_000.0

ROWS: list[tuple[str, type[ModelError], float | None]] = [
    # Claude Code (`claude -p --output-format json`, the message in `result`)
    ("Invalid API key · Please run /login", Unauthorized, None),
    (
        "OAuth token has expired. Please obtain a new token or refresh your existing token.",
        Unauthorized,
        None,
    ),
    ('API Error: 401 {"type":"error","error":{"type":"authentication_error"}}', Unauthorized, None),
    (f"Claude AI usage limit reached|{int(NOW) + 7200}", RateLimited, 7200.0),
    (
        'API Error: 429 {"type":"error","error":{"type":"rate_limit_error","message":"slow"}}',
        RateLimited,
        None,
    ),
    ('API Error: 529 {"type":"error","error":{"type":"overloaded_error"}}', Transient, None),
    ("API Error: 500 Internal server error", Transient, None),
    (
        "API Error: Claude Code is unable to respond to this request, which appears to violate "
        "our Usage Policy (https://www.anthropic.com/legal/aup).",
        Refused,
        None,
    ),
    ("Credit balance is too low", OutOfCredit, None),
    ("Prompt is too long", ContextTooLong, None),
    (
        'API Error: 404 {"type":"error","error":{"type":"not_found_error","message":"model: '
        'claude-nope"}}',
        UnknownModel,
        None,
    ),
    (
        "There's an issue with the selected model (claude-nope). It may not exist or you may not "
        "have access to it.",
        ModelError,
        None,
    ),
    # Codex (`codex exec --json`, turn.failed / error events)
    (
        "unexpected status 401 Unauthorized: Missing bearer or basic authentication in header",
        Unauthorized,
        None,
    ),
    (
        "You've hit your usage limit. Upgrade to Pro (https://openai.com/chatgpt/pricing) or try "
        "again in 1 hour 20 minutes.",
        RateLimited,
        4800.0,
    ),
    (
        "You've hit your usage limit. Try again in 4 days 20 hours 9 minutes.",
        RateLimited,
        4 * 86400 + 20 * 3600 + 9 * 60.0,
    ),
    ("exceeded retry limit, last status: 429 Too Many Requests", RateLimited, None),
    ("stream disconnected before completion: error sending request", Transient, None),
    (
        "Invalid prompt: your prompt was flagged as potentially violating our usage policy.",
        Refused,
        None,
    ),
    ("Not logged in. Run `codex login` first.", Unauthorized, None),
    (
        "The 'gpt-9' model is not supported when using Codex with a ChatGPT account.",
        UnknownModel,
        None,
    ),
    (
        "unexpected status 400 Bad Request: context_length_exceeded: maximum context length",
        ContextTooLong,
        None,
    ),
    # neither: a plain failure, never retried
    ("Error: unknown option '--tools'", ModelError, None),
    ("", ModelError, None),
]


@pytest.mark.parametrize(("message", "kind", "wait"), ROWS)
def test_error_for_message(message: str, kind: type[ModelError], wait: float | None) -> None:
    error = error_for_message(message, now=NOW, provider="claude-code", model="sonnet")
    assert type(error) is kind, (message, error)
    assert error.provider == "claude-code" and error.model == "sonnet"
    assert "\n" not in error.message and error.message  # one clear line
    if isinstance(error, RateLimited):
        assert error.retry_after == wait
        assert error.retryable
    if kind in (Unauthorized, Refused, UnknownModel, ModelError):
        assert not error.retryable


def test_usage_window_without_a_reset_time_is_past_any_retry_wait() -> None:
    error = error_for_message("5-hour limit reached ∙ resets 3pm", now=NOW)
    assert isinstance(error, RateLimited) and error.retry_after == 3600.0


def test_logged_out_line_says_what_to_do() -> None:
    error = error_for_message("Invalid API key · Please run /login")
    assert str(error) == "Invalid API key · Please run /login (log the CLI in, then try again)"


def _req(*messages: ChatMessage, system: str | None = None) -> ModelRequest:
    return ModelRequest(messages=messages, max_tokens=100, system=system)


def test_prompt_of_one_user_message_is_the_message() -> None:
    request = _req(ChatMessage("user", "Summarize: hi"), system="Be brief.")
    assert prompt_of(request, with_system=False) == "Summarize: hi"
    assert prompt_of(request, with_system=True) == "Instructions:\nBe brief.\n\nSummarize: hi"
    assert system_of(request) == "Be brief."


def test_prompt_of_a_conversation_is_written_out_turn_by_turn() -> None:
    request = _req(
        ChatMessage("system", "Rule two."),
        ChatMessage("user", "Q1"),
        ChatMessage("assistant", "A1"),
        ChatMessage("user", "Q2"),
        system="Rule one.",
    )
    assert prompt_of(request, with_system=False) == "User:\nQ1\n\nAssistant:\nA1\n\nUser:\nQ2"
    assert prompt_of(request, with_system=True).startswith("Instructions:\nRule one.\n\nRule two.")
    assert system_of(request) == "Rule one.\n\nRule two."
    assert system_of(_req(ChatMessage("user", "x"))) == NEUTRAL_SYSTEM


@pytest.mark.parametrize(
    ("raw", "spec", "name"),
    [
        ("claude-code", ModelSpec("claude-code", ""), "claude-code"),
        ("Claude-Code:sonnet", ModelSpec("claude-code", "sonnet"), "claude-code:sonnet"),
        (
            "claude-code:claude-opus-4-1-20250805",
            ModelSpec("claude-code", "claude-opus-4-1-20250805"),
            "claude-code:claude-opus-4-1-20250805",
        ),
        ("codex", ModelSpec("codex", ""), "codex"),
        ("codex:gpt-5-codex", ModelSpec("codex", "gpt-5-codex"), "codex:gpt-5-codex"),
        ("codex:", ModelSpec("codex", ""), "codex"),
    ],
)
def test_agent_specs(raw: str, spec: ModelSpec, name: str) -> None:
    assert parse_spec(raw) == spec
    assert parse_spec(raw).name == name


def test_unknown_spec_names_the_agents() -> None:
    with pytest.raises(ConfigError, match=r"claude-code\[:<model>\] or codex\[:<model>\]"):
        parse_spec("claude")


@pytest.mark.parametrize(
    ("provider", "found", "expected"),
    [
        (
            "claude-code",
            None,
            "the claude-code model runs the claude command, which is not on "
            "PATH: npm install -g @anthropic-ai/claude-code, then run claude to log in",
        ),
        (
            "codex",
            None,
            "the codex model runs the codex command, which is not on PATH: "
            "npm install -g @openai/codex, then run codex login",
        ),
        ("claude-code", "/usr/bin/claude", None),
        ("openai", None, None),
    ],
)
def test_agent_missing(provider: str, found: str | None, expected: str | None) -> None:
    assert agent_missing(provider, which=lambda _name: found) == expected


@pytest.mark.parametrize(
    ("name", "encoding"),
    [
        ("codex", "o200k_base"),  # the Codex CLI's default model is a GPT-5
        ("codex:gpt-5-codex", "o200k_base"),
        ("claude-code", "cl100k_base"),
        ("claude-code:sonnet", "cl100k_base"),
    ],
)
def test_agent_models_count_tokens_with_their_family(name: str, encoding: str) -> None:
    assert encoding_for_model(name) == encoding
