"""The ``anthropic`` provider: the official Anthropic SDK (Messages API).

The SDK's own retries are off (``max_retries=0``); :mod:`memoir.llm.retry` retries.
Every SDK failure is translated here into the :mod:`memoir.llm.errors` tree. Anthropic
has no JSON response format: ``request.json`` relies on the prompt, and a leading
markdown fence in the answer is left for the caller's tolerant parser. The current SDK
no longer takes ``temperature``, so it is not sent; the user id goes as an opaque hash.
"""

from __future__ import annotations

import time
from typing import Any

import anthropic
from anthropic.types import Message

from memoir.llm.deadline import deadline_client
from memoir.llm.errors import BadResponse
from memoir.llm.mapping import (
    completion_or_error,
    opaque_user,
    stop_reason_of,
    token_count,
)
from memoir.llm.sdk_call import call_sdk
from memoir.llm.values import Completion, ModelRequest, Usage

__all__ = ["AnthropicModel"]

PROVIDER = "anthropic"


class AnthropicModel:
    """One Claude model. Thread-safe."""

    def __init__(
        self,
        model: str,
        *,
        api_key: str,
        base_url: str | None = None,
        timeout_s: float | None = 120.0,
        client: anthropic.Anthropic | None = None,
    ) -> None:
        self.model = model
        self.name = f"{PROVIDER}:{model}"
        self._client = client or anthropic.Anthropic(
            api_key=api_key,
            base_url=base_url,
            timeout=timeout_s,
            max_retries=0,
            http_client=deadline_client(anthropic, timeout_s),  # bounds the whole call
        )

    def _params(self, request: ModelRequest) -> dict[str, Any]:
        system_parts = [request.system] if request.system else []
        messages: list[dict[str, str]] = []
        for m in request.messages:
            if m.role == "system":
                system_parts.append(m.content)
            else:  # Anthropic knows user/assistant only; tool text goes in as user text
                role = "assistant" if m.role == "assistant" else "user"
                messages.append({"role": role, "content": m.content})
        params: dict[str, Any] = {
            "model": self.model,
            "messages": messages,
            "max_tokens": request.max_tokens,
        }
        if system_parts:
            params["system"] = "\n\n".join(system_parts)
        if request.meta.user:
            params["metadata"] = {"user_id": opaque_user(request.meta.user)}
        return params

    def close(self) -> None:
        """Close the HTTP connection pool (the model is unusable afterwards)."""
        self._client.close()

    def complete(self, request: ModelRequest) -> Completion:
        started = time.monotonic()
        context: dict[str, Any] = {"provider": PROVIDER, "model": self.model}
        parsed, request_id = call_sdk(
            anthropic,
            anthropic.AnthropicError,
            lambda: self._client.messages.with_raw_response.create(**self._params(request)),
            ("request-id",),
            context,
        )
        latency_ms = (time.monotonic() - started) * 1000.0
        return _completion(parsed, request_id, latency_ms, self.model)


def _completion(parsed: Any, request_id: str | None, latency_ms: float, model: str) -> Completion:
    context: dict[str, Any] = {"provider": PROVIDER, "model": model, "request_id": request_id}
    if not isinstance(parsed, Message) or parsed.content is None:
        raise BadResponse(f"not a message: {str(parsed)[:200]!r}", **context)
    text = "".join(getattr(block, "text", "") or "" for block in parsed.content)
    usage = Usage(
        input_tokens=token_count(parsed.usage, "input_tokens"),
        output_tokens=token_count(parsed.usage, "output_tokens"),
    )
    completion = completion_or_error(
        text=text,
        stop=stop_reason_of(parsed.stop_reason),
        usage=usage,
        model=parsed.model or model,
        provider=PROVIDER,
        request_id=request_id or parsed.id,
        latency_ms=latency_ms,
        raw_stop=parsed.stop_reason,
    )
    tool_uses = [b.model_dump() for b in parsed.content if getattr(b, "type", "") == "tool_use"]
    if tool_uses:
        completion.extra["tool_calls"] = tool_uses
    return completion
