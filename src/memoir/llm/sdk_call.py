"""One SDK call, its failures translated into the :mod:`memoir.llm.errors` tree.

The official OpenAI and Anthropic SDKs share one exception layout (``APIStatusError``,
``APITimeoutError``, ``APIConnectionError``, ``APIResponseValidationError`` and a base
error), so both providers translate through this one function.

The whole call is bounded by the client's transport (:mod:`memoir.llm.deadline`).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from types import ModuleType
from typing import Any

from memoir.llm.errors import BadResponse, ModelError, Transient
from memoir.llm.mapping import error_for_status, error_message_of, parse_retry_after

__all__ = ["call_sdk"]


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
