"""Decision tables: HTTP answers and stop reasons → the ModelError tree."""

from __future__ import annotations

import email.utils

import pytest

from memoir.llm.mapping import (
    completion_or_error,
    error_for_status,
    error_message_of,
    parse_retry_after,
    stop_reason_of,
)
from memoir.llm.port import (
    BadResponse,
    ContextTooLong,
    EmptyResponse,
    Forbidden,
    ModelError,
    OutOfCredit,
    OutputBudgetRejected,
    RateLimited,
    Refused,
    StopReason,
    Transient,
    Truncated,
    Unauthorized,
    UnknownModel,
    Usage,
)


@pytest.mark.parametrize(
    ("status", "message", "kind"),
    [
        (403, "Input was flagged for self-harm", Refused),
        (400, "Your request was rejected as a result of our safety system", Refused),
        (400, "content_policy_violation", Refused),
        (422, "Output violates the Terms of Service", Refused),
        (451, "blocked by moderation", Refused),
        (401, "invalid api key", Unauthorized),
        (401, "", Unauthorized),
        (402, "", OutOfCredit),
        (429, "You exceeded your current quota [insufficient_quota]", OutOfCredit),
        (400, "Your credit balance is too low", OutOfCredit),
        (403, "Key limit exceeded: insufficient credits", OutOfCredit),
        (403, "not allowed to use this model", Forbidden),
        (429, "rate limit", RateLimited),
        (408, "request timeout", Transient),
        (409, "conflict", Transient),
        (500, "", Transient),
        (502, "bad gateway", Transient),
        (503, "flagged", Transient),  # moderation words on a 5xx are not a refusal
        (529, "overloaded", Transient),
        (413, "too large", ContextTooLong),
        (400, "This model's maximum context length is 8192 tokens", ContextTooLong),
        (400, "prompt is too long: 210000 tokens > 200000 maximum", ContextTooLong),
        (
            400,
            "maximum context length is 8192 tokens. However, you requested 9000 tokens "
            "(5000 in the messages, 4000 in the completion)",
            OutputBudgetRejected,
        ),
        (
            400,
            "maximum context length is 8192 tokens. However, you requested 12000 tokens "
            "(9000 in the messages, 3000 in the completion)",
            ContextTooLong,
        ),
        (
            400,
            "input length and `max_tokens` exceed context limit: 1 + 2 > 2",
            OutputBudgetRejected,
        ),
        (400, "input length and `max_tokens` exceed context limit: 5 + 2 > 4", ContextTooLong),
        (400, "max_tokens: 100000 > 64000", OutputBudgetRejected),
        (400, "max_output_tokens must be <= 8192", OutputBudgetRejected),
        (400, "unknown field 'foo'", BadResponse),
        (404, "model not found", UnknownModel),  # the setting, never the input
    ],
)
def test_error_for_status(status: int, message: str, kind: type[ModelError]) -> None:
    error = error_for_status(status, message, provider="p", model="m", request_id="r")
    assert type(error) is kind
    assert (error.provider, error.model, error.request_id, error.status) == ("p", "m", "r", status)
    assert str(status) in str(error)


def test_rate_limited_keeps_retry_after() -> None:
    error = error_for_status(429, "slow", retry_after=3.5)
    assert isinstance(error, RateLimited) and error.retry_after == 3.5


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ("stop", StopReason.END),
        ("length", StopReason.MAX_TOKENS),
        ("content_filter", StopReason.REFUSAL),
        ("tool_calls", StopReason.TOOL_USE),
        ("function_call", StopReason.TOOL_USE),
        ("end_turn", StopReason.END),
        ("stop_sequence", StopReason.END),
        ("max_tokens", StopReason.MAX_TOKENS),
        ("model_context_window_exceeded", StopReason.MAX_TOKENS),
        ("refusal", StopReason.REFUSAL),
        ("tool_use", StopReason.TOOL_USE),
        ("pause_turn", StopReason.END),
        ("LENGTH", StopReason.MAX_TOKENS),
        (None, StopReason.END),
        ("something_new", StopReason.END),
    ],
)
def test_stop_reason_of(raw: str | None, expected: StopReason) -> None:
    assert stop_reason_of(raw) is expected


@pytest.mark.parametrize(
    ("headers", "expected"),
    [
        ({}, None),
        ({"retry-after": "7"}, 7.0),
        ({"Retry-After": "1.5"}, 1.5),
        ({"retry-after-ms": "250"}, 0.25),
        ({"retry-after-ms": "250", "retry-after": "9"}, 0.25),
        ({"retry-after": "-3"}, 0.0),
        ({"retry-after": "soon"}, None),
    ],
)
def test_parse_retry_after(headers: dict[str, str], expected: float | None) -> None:
    assert parse_retry_after(headers) == expected


def test_parse_retry_after_http_date() -> None:
    now = 1_700_000_000.0
    header = email.utils.formatdate(now + 30, usegmt=True)
    assert parse_retry_after({"retry-after": header}, now=now) == pytest.approx(30.0, abs=1.0)


@pytest.mark.parametrize(
    ("body", "expected"),
    [
        ({"error": {"message": "bad key", "code": "invalid_api_key"}}, "bad key [invalid_api_key]"),
        ({"message": "flat"}, "flat"),
        (
            {
                "error": {
                    "code": 403,
                    "message": "Input was flagged",
                    "metadata": {"reasons": ["x"]},
                }
            },
            "Input was flagged (reasons: x) [403]",
        ),
        (
            {"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}},
            "Overloaded [overloaded_error]",
        ),
        ("plain text body", "plain text body"),
        (None, "fallback"),
        ({"error": "just a string"}, "just a string"),
    ],
)
def test_error_message_of(body: object, expected: str) -> None:
    assert error_message_of(body, fallback="fallback") == expected


def _finish(text: str, stop: StopReason) -> object:
    return completion_or_error(
        text=text,
        stop=stop,
        usage=Usage(3, 4),
        model="m",
        provider="p",
        request_id="r",
        latency_ms=1.0,
    )


@pytest.mark.parametrize(
    ("text", "stop", "kind"),
    [
        ("partial", StopReason.MAX_TOKENS, Truncated),
        ("", StopReason.MAX_TOKENS, Truncated),
        ("no", StopReason.REFUSAL, Refused),
        ("", StopReason.END, EmptyResponse),
        (" \n", StopReason.END, EmptyResponse),
    ],
)
def test_completion_or_error_raises(text: str, stop: StopReason, kind: type[ModelError]) -> None:
    with pytest.raises(kind) as info:
        _finish(text, stop)
    assert info.value.usage == Usage(3, 4)
    if isinstance(info.value, Truncated):
        assert info.value.partial == text


@pytest.mark.parametrize(("text", "stop"), [("ok", StopReason.END), ("", StopReason.TOOL_USE)])
def test_completion_or_error_returns(text: str, stop: StopReason) -> None:
    completion = _finish(text, stop)
    assert completion.text == text and completion.stop_reason is stop  # type: ignore[attr-defined]
