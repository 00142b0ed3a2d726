"""The ``openai`` provider: the official SDK against any OpenAI-compatible base URL
(OpenAI, OpenRouter, Ollama, vLLM, llama.cpp server, LM Studio).

The SDK's own retries are off (``max_retries=0``); :mod:`memoir.llm.retry` retries.
Every SDK failure is translated here into the :mod:`memoir.llm.errors` tree.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Mapping
from typing import Any

import openai
from openai.types.chat import ChatCompletion

from memoir.llm.deadline import deadline_client
from memoir.llm.errors import (
    BadResponse,
    EmptyResponse,
    OutputBudgetRejected,
)
from memoir.llm.ledger import FAILED_ATTEMPTS
from memoir.llm.mapping import (
    completion_or_error,
    error_for_status,
    error_message_of,
    opaque_user,
    stop_reason_of,
    text_of_content,
    token_count,
)
from memoir.llm.sdk_call import call_sdk
from memoir.llm.values import Completion, ModelRequest, StopReason, Usage

__all__ = ["OpenAIModel"]

PROVIDER = "openai"


class OpenAIModel:
    """One chat model behind an OpenAI-compatible endpoint. Thread-safe."""

    def __init__(
        self,
        model: str,
        *,
        api_key: str,
        base_url: str | None = None,
        timeout_s: float | None = 120.0,
        client: openai.OpenAI | None = None,
    ) -> None:
        self.model = model
        self.name = f"{PROVIDER}:{model}"
        self.base_url = base_url
        self._client = client or openai.OpenAI(
            api_key=api_key,
            base_url=base_url,
            timeout=timeout_s,
            max_retries=0,
            http_client=deadline_client(openai, timeout_s),  # bounds the whole call
        )
        # Official OpenAI reasoning models reject ``max_tokens``; switch once, remember.
        self._budget_param = "max_tokens"
        self._lock = threading.Lock()

    def _params(self, request: ModelRequest) -> dict[str, Any]:
        messages: list[dict[str, str]] = []
        if request.system:
            messages.append({"role": "system", "content": request.system})
        messages.extend({"role": m.role, "content": m.content} for m in request.messages)
        params: dict[str, Any] = {
            "model": self.model,
            "messages": messages,
            "temperature": request.temperature,
            self._budget_param: request.max_tokens,
        }
        if request.json:
            params["response_format"] = {"type": "json_object"}
        if request.meta.user:
            params["user"] = opaque_user(request.meta.user)
        return params

    def close(self) -> None:
        """Close the HTTP connection pool (the model is unusable afterwards)."""
        self._client.close()

    def complete(self, request: ModelRequest) -> Completion:
        started = time.monotonic()
        try:
            return self._call(request, started)
        except OutputBudgetRejected as exc:
            if self._budget_param == "max_tokens" and "max_completion_tokens" in exc.message:
                with self._lock:
                    self._budget_param = "max_completion_tokens"
                completion = self._call(request, started)
                completion.extra[FAILED_ATTEMPTS] = [exc]  # the ledger counts both calls
                return completion
            raise

    def _call(self, request: ModelRequest, started: float) -> Completion:
        context: dict[str, Any] = {"provider": PROVIDER, "model": self.model}
        parsed, request_id = call_sdk(
            openai,
            openai.OpenAIError,
            lambda: self._client.chat.completions.with_raw_response.create(**self._params(request)),
            ("x-request-id", "x-generation-id"),
            context,
        )
        latency_ms = (time.monotonic() - started) * 1000.0
        return _completion(parsed, request_id, latency_ms, self.model)


def _completion(parsed: Any, request_id: str | None, latency_ms: float, model: str) -> Completion:
    context: dict[str, Any] = {"provider": PROVIDER, "model": model, "request_id": request_id}
    if not isinstance(parsed, ChatCompletion):
        raise BadResponse(f"not a chat completion: {str(parsed)[:200]!r}", **context)
    extra = parsed.model_extra or {}
    if not parsed.choices:
        error = extra.get("error")
        if isinstance(error, Mapping):  # OpenRouter: 200 with an error object
            code = error.get("code")
            status = code if isinstance(code, int) else 502
            raise error_for_status(status, error_message_of({"error": error}), **context)
        raise BadResponse("response has no choices", **context)
    choice = parsed.choices[0]
    message = choice.message
    usage = Usage(
        input_tokens=token_count(parsed.usage, "prompt_tokens"),
        output_tokens=token_count(parsed.usage, "completion_tokens"),
    )
    used_model = parsed.model or model
    raw_stop: str | None = choice.finish_reason
    stop = stop_reason_of(raw_stop)
    if message is not None and message.refusal:
        stop, raw_stop = StopReason.REFUSAL, f"refusal: {message.refusal[:200]}"
    if message is not None and message.tool_calls:
        stop = StopReason.TOOL_USE if stop is StopReason.END else stop
    text = text_of_content(message.content) if message is not None else ""
    msg_extra = (message.model_extra or {}) if message is not None else {}
    reasoning = msg_extra.get("reasoning") or msg_extra.get("reasoning_content")
    if reasoning and not text.strip() and stop is StopReason.END:
        raise EmptyResponse(
            "the model answered with reasoning and no content",
            provider=PROVIDER,
            model=used_model,
            request_id=request_id or parsed.id,
            usage=usage,
        )
    completion = completion_or_error(
        text=text,
        stop=stop,
        usage=usage,
        model=used_model,
        provider=PROVIDER,
        request_id=request_id or parsed.id,
        latency_ms=latency_ms,
        raw_stop=raw_stop,
    )
    if reasoning:
        completion.extra["reasoning"] = str(reasoning)
    if message is not None and message.tool_calls:
        calls = [json.loads(c.model_dump_json()) for c in message.tool_calls]
        completion.extra["tool_calls"] = calls
    return completion
