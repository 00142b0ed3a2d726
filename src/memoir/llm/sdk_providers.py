"""The SDK providers: the official OpenAI and Anthropic SDKs, one call at a time, under a
whole-call deadline, their failures translated into the one error tree.

One SDK call, its failures translated into the :mod:`memoir.llm.port` tree.

The official OpenAI and Anthropic SDKs share one exception layout (``APIStatusError``,
``APITimeoutError``, ``APIConnectionError``, ``APIResponseValidationError`` and a base
error), so both providers translate through this one function.

The whole call is bounded by the client's transport (:mod:`memoir.llm.sdk_providers`).

A whole-call time limit for the SDKs' HTTP clients.

The SDKs' timeout bounds each phase of a request (connect, each read), not the whole of it:
a server that trickles its answer a byte at a time (or a proxy sending keep-alive
whitespace) can hold a call for as long as it likes. :func:`deadline_client` builds the
SDK's own default client — its connection limits, and the proxies the environment names —
and wraps each of its transports so that the answer's body is read against a deadline set
when the request starts: past it, the read stops with a read timeout in the calling thread
itself (the SDK reports it as its timeout error) and the connection is closed. No thread is
left behind; a server that says nothing at all is stopped by the per-read timeout.

The SDKs use ``httpx`` or its successor ``httpx2`` depending on their version; the wrappers
are made for whichever library the SDK's client comes from.

The ``openai`` provider: the official SDK against any OpenAI-compatible base URL
(OpenAI, OpenRouter, Ollama, vLLM, llama.cpp server, LM Studio).

The SDK's own retries are off (``max_retries=0``); :mod:`memoir.llm.wiring` retries.
Every SDK failure is translated here into the :mod:`memoir.llm.port` tree.

The ``anthropic`` provider: the official Anthropic SDK (Messages API).

The SDK's own retries are off (``max_retries=0``); :mod:`memoir.llm.wiring` retries.
Every SDK failure is translated here into the :mod:`memoir.llm.port` tree. Anthropic
has no JSON response format: ``request.json`` relies on the prompt, and a leading
markdown fence in the answer is left for the caller's tolerant parser. The current SDK
no longer takes ``temperature``, so it is not sent; the user id goes as an opaque hash.
"""

from __future__ import annotations

import json
import sys
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from functools import cache
from types import ModuleType
from typing import Any

import anthropic
import openai
from anthropic.types import Message
from openai.types.chat import ChatCompletion

from memoir.llm.mapping import (
    completion_or_error,
    error_for_status,
    error_message_of,
    opaque_user,
    parse_retry_after,
    stop_reason_of,
    text_of_content,
    token_count,
)
from memoir.llm.port import (
    FAILED_ATTEMPTS,
    BadResponse,
    Completion,
    EmptyResponse,
    ModelError,
    ModelRequest,
    OutputBudgetRejected,
    StopReason,
    Transient,
    Usage,
)

__all__ = [
    "AnthropicModel",
    "OpenAIModel",
    "call_sdk",
    "deadline_client",
]


def call_sdk(
    sdk: ModuleType,
    base_error: type[Exception],
    create: Callable[[], Any],
    request_id_headers: tuple[str, ...],
    context: Mapping[str, Any],
) -> tuple[Any, str | None]:
    """Run ``create`` (a ``with_raw_response.create`` call) and parse its answer.

    ``base_error`` is the SDK's root exception (``openai.OpenAIError``,
    ``anthropic.AnthropicError``). Returns (parsed response, provider request id); raises a
    ModelError subclass."""
    try:
        raw = create()
        request_id = next((v for h in request_id_headers if (v := raw.headers.get(h))), None)
        return raw.parse(), request_id
    except sdk.APIStatusError as exc:
        message = error_message_of(exc.body, fallback=exc.message)
        raise error_for_status(
            exc.status_code,
            message,
            retry_after=parse_retry_after(dict(exc.response.headers.items())),
            request_id=exc.request_id,
            **context,
        ) from exc
    except sdk.APITimeoutError as exc:
        raise Transient(f"the request to {_where(exc)} timed out", **context) from exc
    except sdk.APIConnectionError as exc:
        reason = exc.__cause__ or exc
        raise Transient(f"cannot reach {_where(exc)}: {reason}", **context) from exc
    except (ValueError, sdk.APIResponseValidationError) as exc:
        raise BadResponse(f"unparseable response: {exc}", **context) from exc
    except base_error as exc:
        raise ModelError(f"{type(exc).__name__}: {exc}", **context) from exc


def _where(exc: BaseException) -> str:
    """The address a failed request went to (a local server that is not running, a
    mistyped MEMOIR_LLM_BASE_URL), without its query string."""
    request = getattr(exc, "request", None)
    url = getattr(request, "url", None)
    if url is None:
        return "the provider"
    return f"{url.scheme}://{url.host}{f':{url.port}' if url.port else ''}{url.path}"


@cache
def _wrappers(lib: Any) -> tuple[type, type]:
    """(transport wrapper, body stream wrapper) for the HTTP library ``lib``."""

    class DeadlineStream(lib.SyncByteStream):
        def __init__(self, inner: Any, deadline: float, request: Any) -> None:
            self._inner = inner
            self._deadline = deadline
            self._request = request

        def __iter__(self) -> Iterator[bytes]:
            for chunk in self._inner:
                if time.monotonic() > self._deadline:
                    raise lib.ReadTimeout(
                        "the answer took longer than MEMOIR_LLM_TIMEOUT_S allows",
                        request=self._request,
                    )
                yield chunk

        def close(self) -> None:
            close = getattr(self._inner, "close", None)
            if callable(close):
                close()

    class DeadlineTransport(lib.BaseTransport):
        def __init__(self, total_s: float, inner: Any) -> None:
            self.total_s = total_s
            self.inner = inner

        def handle_request(self, request: Any) -> Any:
            deadline = time.monotonic() + self.total_s
            response = self.inner.handle_request(request)
            response.stream = DeadlineStream(response.stream, deadline, request)
            return response

        def close(self) -> None:
            self.inner.close()

    return DeadlineTransport, DeadlineStream


def deadline_client(sdk: Any, total_s: float | None) -> Any:
    """The SDK's default HTTP client with every transport (direct and per-proxy) bounded to
    ``total_s`` seconds an answer; None (the SDK builds its own) when there is no limit."""
    if total_s is None or total_s <= 0:
        return None
    client = sdk.DefaultHttpxClient()
    roots = [c.__module__.split(".")[0] for c in type(client).__mro__]
    lib = next((sys.modules[r] for r in roots if r in ("httpx2", "httpx")), None)
    transport, mounts = getattr(client, "_transport", None), getattr(client, "_mounts", None)
    if lib is None or transport is None or not isinstance(mounts, dict):
        return client  # a library that hides its transports: per-read timeouts only
    wrap, _ = _wrappers(lib)
    client._transport = wrap(total_s, transport)
    for pattern, mounted in list(mounts.items()):
        if mounted is not None:  # None: this host bypasses the proxy (NO_PROXY)
            mounts[pattern] = wrap(total_s, mounted)
    return client


OPENAI = "openai"


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
        self.name = f"{OPENAI}:{model}"
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
        context: dict[str, Any] = {"provider": OPENAI, "model": self.model}
        parsed, request_id = call_sdk(
            openai,
            openai.OpenAIError,
            lambda: self._client.chat.completions.with_raw_response.create(**self._params(request)),
            ("x-request-id", "x-generation-id"),
            context,
        )
        latency_ms = (time.monotonic() - started) * 1000.0
        return _openai_completion(parsed, request_id, latency_ms, self.model)


def _openai_completion(
    parsed: Any, request_id: str | None, latency_ms: float, model: str
) -> Completion:
    context: dict[str, Any] = {"provider": OPENAI, "model": model, "request_id": request_id}
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
            provider=OPENAI,
            model=used_model,
            request_id=request_id or parsed.id,
            usage=usage,
        )
    completion = completion_or_error(
        text=text,
        stop=stop,
        usage=usage,
        model=used_model,
        provider=OPENAI,
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


ANTHROPIC = "anthropic"


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
        self.name = f"{ANTHROPIC}:{model}"
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
        context: dict[str, Any] = {"provider": ANTHROPIC, "model": self.model}
        parsed, request_id = call_sdk(
            anthropic,
            anthropic.AnthropicError,
            lambda: self._client.messages.with_raw_response.create(**self._params(request)),
            ("request-id",),
            context,
        )
        latency_ms = (time.monotonic() - started) * 1000.0
        return _anthropic_completion(parsed, request_id, latency_ms, self.model)


def _anthropic_completion(
    parsed: Any, request_id: str | None, latency_ms: float, model: str
) -> Completion:
    context: dict[str, Any] = {"provider": ANTHROPIC, "model": model, "request_id": request_id}
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
        provider=ANTHROPIC,
        request_id=request_id or parsed.id,
        latency_ms=latency_ms,
        raw_stop=parsed.stop_reason,
    )
    tool_uses = [b.model_dump() for b in parsed.content if getattr(b, "type", "") == "tool_use"]
    if tool_uses:
        completion.extra["tool_calls"] = tool_uses
    return completion
