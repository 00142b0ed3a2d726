"""One SDK call, its failures translated into the :mod:`memoir.llm.errors` tree.

The official OpenAI and Anthropic SDKs share one exception layout (``APIStatusError``,
``APITimeoutError``, ``APIConnectionError``, ``APIResponseValidationError`` and a base
error), so both providers translate through this one function.

The SDKs' timeout bounds each phase of a request (connect, each read), not the whole of
it: a server that trickles its answer a byte at a time (or a proxy sending keep-alive
whitespace) can hold a call for as long as it likes. ``deadline_s`` bounds the whole call:
the request runs in a daemon thread, abandoned (it ends on its own) when the deadline
passes, and the caller gets a ``Transient``.
"""

from __future__ import annotations

import threading
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
    deadline_s: float | None = None,
) -> tuple[Any, str | None]:
    """Run ``create`` (a ``with_raw_response.create`` call) and parse its answer.

    ``base_error`` is the SDK's root exception (``openai.OpenAIError``,
    ``anthropic.AnthropicError``). Returns (parsed response, provider request id); raises a
    ModelError subclass."""
    try:
        raw = _within(create, deadline_s, context)
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


def _within(create: Callable[[], Any], deadline_s: float | None, context: Mapping[str, Any]) -> Any:
    """``create()``, or ``Transient`` when it has not returned within ``deadline_s``."""
    if deadline_s is None or deadline_s <= 0:
        return create()
    box: dict[str, Any] = {}
    done = threading.Event()

    def run() -> None:
        try:
            box["value"] = create()
        except BaseException as exc:  # handed to the caller's thread
            box["error"] = exc
        finally:
            done.set()

    threading.Thread(target=run, name="memoir-model-call", daemon=True).start()
    # a little past the SDK's own timeout, so that a server that says nothing at all is
    # reported by it (naming the URL); this catches the one that keeps talking too slowly
    if not done.wait(deadline_s + max(1.0, deadline_s / 10)):
        raise Transient(
            f"no complete answer within {deadline_s:g} s (MEMOIR_LLM_TIMEOUT_S)", **context
        )
    if "error" in box:
        raise box["error"]
    return box["value"]


def _where(exc: BaseException) -> str:
    """The address a failed request went to (a local server that is not running, a
    mistyped MEMOIR_LLM_BASE_URL), without its query string."""
    request = getattr(exc, "request", None)
    url = getattr(request, "url", None)
    if url is None:
        return "the provider"
    return f"{url.scheme}://{url.host}{f':{url.port}' if url.port else ''}{url.path}"
