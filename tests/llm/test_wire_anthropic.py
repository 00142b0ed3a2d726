"""The real anthropic SDK against a local server speaking the Messages wire format."""

from __future__ import annotations

import pytest

from memoir.llm.port import (
    BadResponse,
    ChatMessage,
    ContextTooLong,
    EmptyResponse,
    Forbidden,
    ModelError,
    ModelRequest,
    OutOfCredit,
    OutputBudgetRejected,
    RateLimited,
    Refused,
    RequestMeta,
    StopReason,
    Transient,
    Truncated,
    Unauthorized,
)
from memoir.llm.sdk_providers import AnthropicModel

from .wire import Reply, WireServer, anthropic_message


def _error(kind: str, message: str) -> dict[str, object]:
    return {"type": "error", "error": {"type": kind, "message": message}}


def _request(**kw: object) -> ModelRequest:
    defaults: dict[str, object] = {
        "messages": (ChatMessage("user", "Summarize <transcript>hi</transcript>"),),
        "max_tokens": 100,
    }
    defaults.update(kw)
    return ModelRequest(**defaults)  # type: ignore[arg-type]


def _model(wire: WireServer, timeout_s: float = 5.0) -> AnthropicModel:
    return wire.track(
        AnthropicModel(
            "claude-test", api_key="ak-test", base_url=wire.base_url, timeout_s=timeout_s
        )
    )


def test_success_maps_text_usage_model_and_request_id(wire: WireServer) -> None:
    wire.queue(Reply(200, anthropic_message("the answer"), {"request-id": "req_1"}))
    request = _request(
        system="be brief",
        messages=(
            ChatMessage("system", "also this"),
            ChatMessage("user", "q"),
            ChatMessage("assistant", "a"),
            ChatMessage("user", "q2"),
        ),
        meta=RequestMeta(user="u1"),
    )
    completion = _model(wire).complete(request)
    assert completion.text == "the answer"
    assert completion.stop_reason is StopReason.END
    assert (completion.usage.input_tokens, completion.usage.output_tokens) == (11, 5)
    assert completion.model == "claude-test"
    assert completion.provider == "anthropic"
    assert completion.request_id == "req_1"
    sent = wire.received[0]
    assert sent.path == "/v1/messages"
    auth = sent.headers.get("x-api-key") or sent.headers.get("authorization", "")
    assert auth.endswith("ak-test")
    assert "anthropic-version" in sent.headers
    assert sent.body["system"] == "be brief\n\nalso this"
    assert [m["role"] for m in sent.body["messages"]] == ["user", "assistant", "user"]
    assert sent.body["max_tokens"] == 100
    user_id = sent.body["metadata"]["user_id"]
    assert len(user_id) == 32 and "u1" not in user_id


def test_max_tokens_raises_truncated_with_partial_text(wire: WireServer) -> None:
    wire.queue(Reply(200, anthropic_message("half a sent", stop_reason="max_tokens")))
    with pytest.raises(Truncated) as info:
        _model(wire).complete(_request())
    assert info.value.partial == "half a sent"
    assert info.value.usage is not None and info.value.usage.output_tokens == 5


@pytest.mark.parametrize(
    ("reply", "kind"),
    [
        (Reply(200, anthropic_message("", stop_reason="refusal")), Refused),
        (Reply(403, _error("permission_error", "Input was flagged by moderation")), Refused),
        (Reply(401, _error("authentication_error", "invalid x-api-key")), Unauthorized),
        (Reply(402, _error("billing_error", "payment required")), OutOfCredit),
        (
            Reply(400, _error("invalid_request_error", "Your credit balance is too low")),
            OutOfCredit,
        ),
        (Reply(403, _error("permission_error", "no access to this model")), Forbidden),
        (Reply(500, _error("api_error", "Internal server error")), Transient),
        (Reply(529, _error("overloaded_error", "Overloaded")), Transient),
        (Reply(200, anthropic_message(None)), EmptyResponse),
        (Reply(200, anthropic_message("   ")), EmptyResponse),
        (Reply(200, "{not json"), BadResponse),
        (
            Reply(
                400, _error("invalid_request_error", "prompt is too long: 210000 tokens > 200000")
            ),
            ContextTooLong,
        ),
        (
            Reply(413, _error("request_too_large", "Request exceeds the maximum allowed size")),
            ContextTooLong,
        ),
        (
            Reply(
                400,
                _error(
                    "invalid_request_error",
                    "max_tokens: 100000 > 64000, which is the maximum allowed number of output "
                    "tokens for claude-test",
                ),
            ),
            OutputBudgetRejected,
        ),
        (
            Reply(
                400,
                _error(
                    "invalid_request_error",
                    "input length and `max_tokens` exceed context limit: 190000 + 20000 > 200000,"
                    " decrease input length or `max_tokens` and try again",
                ),
            ),
            OutputBudgetRejected,
        ),
    ],
    ids=lambda v: v.__name__ if isinstance(v, type) else None,
)
def test_failure_kinds(wire: WireServer, reply: Reply, kind: type[ModelError]) -> None:
    wire.queue(reply)
    with pytest.raises(ModelError) as info:
        _model(wire).complete(_request())
    assert type(info.value) is kind
    assert info.value.provider == "anthropic"


def test_rate_limit_carries_retry_after(wire: WireServer) -> None:
    wire.queue(Reply(429, _error("rate_limit_error", "slow down"), {"retry-after": "12"}))
    with pytest.raises(RateLimited) as info:
        _model(wire).complete(_request())
    assert info.value.retry_after == 12.0


def test_timeout_is_transient(wire: WireServer) -> None:
    wire.queue(Reply(200, anthropic_message("late"), delay_s=1.5))
    with pytest.raises(Transient, match="timed out"):
        _model(wire, timeout_s=0.3).complete(_request())


def test_sdk_retries_are_off(wire: WireServer) -> None:
    wire.queue(
        Reply(529, _error("overloaded_error", "Overloaded")), Reply(200, anthropic_message())
    )
    with pytest.raises(Transient):
        _model(wire).complete(_request())
    assert len(wire.received) == 1


def test_tool_use_stop(wire: WireServer) -> None:
    body = anthropic_message("calling", stop_reason="tool_use")
    body["content"].append({"type": "tool_use", "id": "t1", "name": "f", "input": {}})
    wire.queue(Reply(200, body))
    completion = _model(wire).complete(_request())
    assert completion.stop_reason is StopReason.TOOL_USE
    assert completion.extra["tool_calls"][0]["name"] == "f"


@pytest.mark.parametrize("usage", ["weird", {"input_tokens": -3, "output_tokens": "7"}])
def test_odd_usage_is_read_as_zero_not_crashed_on(wire: WireServer, usage: object) -> None:
    body = anthropic_message("the answer")
    body["usage"] = usage
    wire.queue(Reply(200, body))
    completion = _model(wire).complete(_request())
    assert completion.text == "the answer"
    assert (completion.usage.input_tokens, completion.usage.output_tokens) == (0, 0)


def test_a_trickled_answer_is_cut_at_the_timeout(wire: WireServer) -> None:
    import time

    wire.queue(Reply(200, anthropic_message("slow " * 40), trickle_s=0.05))
    started = time.monotonic()
    with pytest.raises(Transient, match="timed out"):
        _model(wire, timeout_s=0.5).complete(_request())
    assert time.monotonic() - started < 2.0
