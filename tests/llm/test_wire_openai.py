"""The real openai SDK against a local server speaking its wire format."""

from __future__ import annotations

import pytest

from memoir.llm.mapping import opaque_user
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
from memoir.llm.sdk_providers import OpenAIModel

from .wire import Reply, WireServer, openai_chat

MODERATION_403 = {
    "error": {
        "code": 403,
        "message": "Input was flagged for violence by the moderation model",
        "metadata": {"reasons": ["violence"], "flagged_input": "…", "provider_name": "x"},
    }
}


def _request(**kw: object) -> ModelRequest:
    defaults: dict[str, object] = {
        "messages": (ChatMessage("user", "Summarize <transcript>hi</transcript>"),),
        "max_tokens": 100,
    }
    defaults.update(kw)
    return ModelRequest(**defaults)  # type: ignore[arg-type]


def _model(wire: WireServer, timeout_s: float = 5.0) -> OpenAIModel:
    return wire.track(
        OpenAIModel(
            "gpt-test", api_key="sk-test", base_url=wire.base_url + "/v1", timeout_s=timeout_s
        )
    )


def test_success_maps_text_usage_model_and_request_id(wire: WireServer) -> None:
    wire.queue(
        Reply(200, openai_chat("the answer", model="gpt-test-0613"), {"x-request-id": "r-9"})
    )
    request = _request(
        system="be brief",
        json=True,
        temperature=0.3,
        meta=RequestMeta(user="u1", session="s1"),
    )
    completion = _model(wire).complete(request)
    assert completion.text == "the answer"
    assert completion.stop_reason is StopReason.END
    assert (completion.usage.input_tokens, completion.usage.output_tokens) == (11, 5)
    assert completion.model == "gpt-test-0613"
    assert completion.provider == "openai"
    assert completion.request_id == "r-9"
    assert completion.offline is False
    sent = wire.received[0]
    assert sent.path == "/v1/chat/completions"
    assert sent.headers["authorization"] == "Bearer sk-test"
    assert sent.body["messages"][0] == {"role": "system", "content": "be brief"}
    assert sent.body["max_tokens"] == 100
    assert sent.body["temperature"] == 0.3
    assert sent.body["response_format"] == {"type": "json_object"}
    assert sent.body["user"] == opaque_user("u1") and len(sent.body["user"]) == 32


def test_length_raises_truncated_with_partial_text(wire: WireServer) -> None:
    wire.queue(Reply(200, openai_chat('{"narrative": "cut', finish_reason="length")))
    with pytest.raises(Truncated) as info:
        _model(wire).complete(_request())
    assert info.value.partial == '{"narrative": "cut'
    assert info.value.usage is not None and info.value.usage.output_tokens == 5


@pytest.mark.parametrize(
    ("reply", "kind"),
    [
        (Reply(200, openai_chat("", finish_reason="content_filter")), Refused),
        (Reply(200, openai_chat(None, refusal="I can't help with that.")), Refused),
        (Reply(403, MODERATION_403), Refused),
        (
            Reply(
                400,
                {
                    "error": {
                        "message": "Your request was rejected as a result of our safety system.",
                        "code": "content_policy_violation",
                    }
                },
            ),
            Refused,
        ),
        (
            Reply(
                401, {"error": {"message": "Incorrect API key provided", "code": "invalid_api_key"}}
            ),
            Unauthorized,
        ),
        (Reply(402, {"error": {"code": 402, "message": "Insufficient credits"}}), OutOfCredit),
        (
            Reply(
                429,
                {
                    "error": {
                        "message": "You exceeded your current quota",
                        "code": "insufficient_quota",
                    }
                },
            ),
            OutOfCredit,
        ),
        (Reply(403, {"error": {"message": "Project does not have access to model"}}), Forbidden),
        (Reply(500, {"error": {"message": "internal error"}}), Transient),
        (Reply(503, "<html>bad gateway</html>", {"content-type": "text/html"}), Transient),
        (Reply(200, openai_chat("")), EmptyResponse),
        (Reply(200, openai_chat(None)), EmptyResponse),
        (Reply(200, "{not json"), BadResponse),
        (Reply(200, "<html>hi</html>", {"content-type": "text/html"}), BadResponse),
        (Reply(200, {"error": {"message": "upstream overloaded", "code": 502}}), Transient),
        (
            Reply(
                400,
                {
                    "error": {
                        "message": "This model's maximum context length is 8192 tokens. "
                        "However, your messages resulted in 9000 tokens. Please reduce the "
                        "length of the messages.",
                        "code": "context_length_exceeded",
                    }
                },
            ),
            ContextTooLong,
        ),
        (
            Reply(
                400,
                {
                    "error": {
                        "message": "This model's maximum context length is 8192 tokens. "
                        "However, you requested 9000 tokens (5000 in the messages, 4000 in "
                        "the completion)."
                    }
                },
            ),
            OutputBudgetRejected,
        ),
        (
            Reply(
                400,
                {
                    "error": {
                        "message": "max_tokens is too large: 100000. This model supports "
                        "at most 16384 completion tokens",
                        "param": "max_tokens",
                    }
                },
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
    assert info.value.provider == "openai"
    assert info.value.model == "gpt-test"


def test_moderation_message_is_kept(wire: WireServer) -> None:
    wire.queue(Reply(403, MODERATION_403, {"x-request-id": "r-403"}))
    with pytest.raises(Refused) as info:
        _model(wire).complete(_request())
    assert "was flagged" in str(info.value)
    assert "violence" in str(info.value)
    assert info.value.status == 403
    assert info.value.request_id == "r-403"


def test_rate_limit_carries_retry_after(wire: WireServer) -> None:
    wire.queue(Reply(429, {"error": {"message": "Rate limit reached"}}, {"retry-after": "7"}))
    with pytest.raises(RateLimited) as info:
        _model(wire).complete(_request())
    assert info.value.retry_after == 7.0
    assert info.value.retryable


def test_timeout_is_transient(wire: WireServer) -> None:
    wire.queue(Reply(200, openai_chat("late"), delay_s=1.5))
    with pytest.raises(Transient, match=r"the request to http://127.0.0.1:\d+/v1/.* timed out"):
        _model(wire, timeout_s=0.3).complete(_request())


def test_connection_refused_is_transient() -> None:
    model = OpenAIModel("gpt-test", api_key="k", base_url="http://127.0.0.1:9/v1", timeout_s=2)
    try:  # says where it could not reach: a local server that is not running, a typo
        with pytest.raises(Transient, match=r"cannot reach http://127.0.0.1:9/v1/chat/completions"):
            model.complete(_request())
    finally:
        model.close()


def test_sdk_retries_are_off(wire: WireServer) -> None:
    wire.queue(Reply(500, {"error": {"message": "boom"}}), Reply(200, openai_chat("ok")))
    with pytest.raises(Transient):
        _model(wire).complete(_request())
    assert len(wire.received) == 1


def test_tool_calls_are_tool_use(wire: WireServer) -> None:
    body = openai_chat(None, finish_reason="tool_calls")
    body["choices"][0]["message"]["tool_calls"] = [
        {"id": "c1", "type": "function", "function": {"name": "f", "arguments": "{}"}}
    ]
    wire.queue(Reply(200, body))
    completion = _model(wire).complete(_request())
    assert completion.stop_reason is StopReason.TOOL_USE
    assert completion.extra["tool_calls"][0]["function"]["name"] == "f"


def test_max_completion_tokens_switch_for_reasoning_models(wire: WireServer) -> None:
    wire.queue(
        Reply(
            400,
            {
                "error": {
                    "message": "Unsupported parameter: 'max_tokens' is not supported "
                    "with this model. Use 'max_completion_tokens' instead.",
                    "param": "max_tokens",
                    "code": "unsupported_parameter",
                }
            },
        ),
        Reply(200, openai_chat("fine")),
        Reply(200, openai_chat("again")),
    )
    model = _model(wire)
    assert model.complete(_request()).text == "fine"
    assert model.complete(_request()).text == "again"
    assert "max_tokens" in wire.received[0].body
    assert wire.received[1].body["max_completion_tokens"] == 100
    assert "max_tokens" not in wire.received[2].body


def test_the_max_tokens_switch_is_two_calls_in_the_ledger(wire: WireServer) -> None:
    from memoir.llm.port import MemorySink, Metered

    rejected = {
        "error": {
            "message": "Unsupported parameter: 'max_tokens' is not supported with this "
            "model. Use 'max_completion_tokens' instead.",
            "code": "unsupported_parameter",
        }
    }
    wire.queue(Reply(400, rejected), Reply(200, openai_chat("fine")))
    sink = MemorySink()
    completion = Metered(_model(wire), sink).complete(_request())
    assert completion.text == "fine" and "failed_attempts" not in completion.extra
    assert len(wire.received) == 2
    assert [r.outcome for r in sink.records] == ["OutputBudgetRejected", "ok"]


def test_reasoning_is_kept_and_reasoning_alone_is_empty(wire: WireServer) -> None:
    with_content = openai_chat("final answer.")
    with_content["choices"][0]["message"]["reasoning"] = "thinking it over"
    alone = openai_chat("")
    alone["choices"][0]["message"]["reasoning_content"] = "only thoughts"
    wire.queue(Reply(200, with_content), Reply(200, alone))
    model = _model(wire)
    assert model.complete(_request()).extra["reasoning"] == "thinking it over"
    with pytest.raises(EmptyResponse, match="reasoning"):
        model.complete(_request())


@pytest.mark.parametrize(
    ("content", "usage", "text", "tokens"),
    [
        (
            [{"type": "text", "text": "List "}, {"type": "text", "text": "summary."}],
            None,
            "List summary.",
            None,
        ),
        ("Fine.", "weird", "Fine.", (0, 0)),
        ("Fine.", {"prompt_tokens": -15, "completion_tokens": 2.5}, "Fine.", (0, 0)),
    ],
)
def test_odd_shapes_from_compatible_servers_are_read_not_crashed_on(
    wire: WireServer, content: object, usage: object, text: str, tokens: tuple[int, int] | None
) -> None:
    body = openai_chat("placeholder")
    body["choices"][0]["message"]["content"] = content
    if usage is not None:
        body["usage"] = usage
    wire.queue(Reply(200, body))
    completion = _model(wire).complete(_request())
    assert completion.text == text
    if tokens is not None:
        assert (completion.usage.input_tokens, completion.usage.output_tokens) == tokens


def test_a_trickled_answer_is_cut_at_the_timeout(wire: WireServer) -> None:
    import threading
    import time

    wire.queue(Reply(200, openai_chat("slow " * 40), trickle_s=0.05))  # ~15 s in all
    threads = threading.active_count()
    started = time.monotonic()
    with pytest.raises(Transient, match=r"the request to http://127.0.0.1:\d+/v1/.* timed out"):
        _model(wire, timeout_s=0.5).complete(_request())  # each byte is well within 0.5 s
    assert time.monotonic() - started < 2.0
    assert threading.active_count() <= threads + 1  # cut in the caller: no thread left on it


def test_a_proxy_from_the_environment_is_still_used(
    wire: WireServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The whole-call limit wraps the SDK's own transports, the proxies it reads from the
    environment included (a corporate HTTP_PROXY must keep working)."""
    for name in ("NO_PROXY", "no_proxy", "ALL_PROXY", "all_proxy"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("HTTP_PROXY", wire.base_url)
    wire.queue(
        Reply(200, openai_chat("through the proxy")),
        Reply(200, openai_chat("x " * 80), trickle_s=0.05),
    )
    model = wire.track(
        OpenAIModel(
            "gpt-test", api_key="k", base_url="http://api.example.invalid/v1", timeout_s=0.5
        )
    )
    assert model.complete(_request()).text == "through the proxy"
    assert wire.received[0].path.startswith("http://api.example.invalid/v1/chat/completions")
    with pytest.raises(Transient, match="timed out"):  # and the limit holds through it
        model.complete(_request())
