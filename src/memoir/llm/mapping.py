"""Pure decisions that map provider answers onto the ModelError tree, and a request onto
an agent CLI's prompt.

Both SDK adapters call these with what they saw (an HTTP status and the error message of
the body, or a finish/stop reason); nothing here does I/O, so every row of the mapping is
tested as a table (tests/llm/test_mapping.py).

The agent CLIs (:mod:`memoir.llm.agent_providers`) take one prompt: :func:`prompt_of`
renders a request as it, :func:`system_of` gives the system prompt for a CLI that takes
one (never the coding agent's own). :func:`error_for_message` maps what a CLI said when it
failed (an ``API Error: 429 …``, ``Invalid API key · Please run /login``, a usage limit,
a policy refusal) onto the same tree; it is tested as a table too
(tests/llm/test_agent_cli.py).
"""

from __future__ import annotations

import email.utils
import hashlib
import re
import time
from collections.abc import Mapping
from typing import Any

from memoir.llm.port import (
    BadResponse,
    Completion,
    ContextTooLong,
    EmptyResponse,
    Forbidden,
    ModelError,
    ModelRequest,
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

__all__ = [
    "NEUTRAL_SYSTEM",
    "USAGE_WINDOW_S",
    "completion_or_error",
    "error_for_message",
    "error_for_status",
    "error_message_of",
    "first_line",
    "opaque_user",
    "parse_retry_after",
    "prompt_of",
    "stop_reason_of",
    "system_of",
    "text_of_content",
    "token_count",
]

_MODERATION = re.compile(
    r"was flagged|flagged (?:for|as|input)|\bmoderation\b|content[ _-]?(?:policy|filter|management)"
    r"|safety system|terms of (?:service|use)|\bToS\b|violat\w* (?:our|the) (?:usage )?polic",
    re.IGNORECASE,
)
_CREDIT = re.compile(
    r"insufficient[ _](?:quota|credit|funds|balance)|credit balance|out of credits?"
    r"|billing|payment required|exceeded your current quota|more credits",
    re.IGNORECASE,
)
_CONTEXT = re.compile(
    r"context[ _](?:length|window)|maximum context|prompt is too long|input is too long"
    r"|too many (?:input )?tokens|reduce the length|request too large|input length",
    re.IGNORECASE,
)
_OUTPUT_BUDGET = re.compile(
    r"max_tokens|max_completion_tokens|max_output_tokens|maximum (?:number of )?output tokens"
    r"|output token limit",
    re.IGNORECASE,
)
# OpenAI: "... you requested 9000 tokens (5000 in the messages, 4000 in the completion)"
_OPENAI_SPLIT = re.compile(
    r"maximum context length is (\d+).*?\((\d+) in the messages?,\s*(\d+) in the completion",
    re.IGNORECASE | re.DOTALL,
)
# Anthropic: "input length and `max_tokens` exceed context limit: 190000 + 20000 > 200000"
_ANTHROPIC_SPLIT = re.compile(r"(\d+)\s*\+\s*(\d+)\s*>\s*(\d+)")


def opaque_user(user: str) -> str:
    """The user id as providers should see it: a stable opaque hash (both OpenAI and
    Anthropic ask for no identifying information in this field)."""
    return hashlib.sha256(user.encode("utf-8")).hexdigest()[:32]


def error_message_of(body: object, fallback: str = "") -> str:
    """The human message inside an error body: ``{"error": {"message": …}}``, a bare
    ``{"message": …}``, metadata ``reasons`` (OpenRouter moderation) appended."""
    if isinstance(body, Mapping):
        inner: Any = body.get("error", body)
        if isinstance(inner, Mapping):
            message = str(inner.get("message") or inner.get("detail") or "")
            code = inner.get("code") or inner.get("type")
            meta = inner.get("metadata")
            if isinstance(meta, Mapping) and meta.get("reasons"):
                message += f" (reasons: {', '.join(map(str, meta['reasons']))})"
            if code and str(code) not in message:
                message = f"{message} [{code}]" if message else str(code)
            return message or fallback
        if isinstance(inner, str):
            return inner
    if isinstance(body, str) and body.strip():
        return body.strip()[:500]
    return fallback


def parse_retry_after(headers: Mapping[str, str], *, now: float | None = None) -> float | None:
    """Seconds to wait from ``retry-after-ms`` / ``retry-after`` (seconds or HTTP date)."""
    lowered = {k.lower(): v for k, v in headers.items()}
    raw_ms = lowered.get("retry-after-ms")
    if raw_ms:
        try:
            return max(0.0, float(raw_ms) / 1000.0)
        except ValueError:
            pass
    raw = lowered.get("retry-after")
    if not raw:
        return None
    try:
        return max(0.0, float(raw))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(raw)
    except (TypeError, ValueError):
        return None
    return max(0.0, when.timestamp() - (time.time() if now is None else now))


def _budget_or_context(message: str) -> type[ModelError] | None:
    """For an input-size complaint: would a smaller max_tokens fix it?"""
    if m := _OPENAI_SPLIT.search(message):
        limit, prompt = int(m.group(1)), int(m.group(2))
        return OutputBudgetRejected if prompt < limit else ContextTooLong
    if (m := _ANTHROPIC_SPLIT.search(message)) and "max_tokens" in message:
        prompt, limit = int(m.group(1)), int(m.group(3))
        return OutputBudgetRejected if prompt < limit else ContextTooLong
    if _CONTEXT.search(message):
        return ContextTooLong
    if _OUTPUT_BUDGET.search(message):
        return OutputBudgetRejected
    return None


def error_for_status(
    status: int,
    message: str,
    *,
    retry_after: float | None = None,
    **context: Any,
) -> ModelError:
    """The ModelError for an HTTP error answer. ``context`` goes to the error
    (provider, model, request_id)."""
    text = f"HTTP {status}: {message}" if message else f"HTTP {status}"
    kind: type[ModelError]
    if status in (400, 403, 422, 451) and _MODERATION.search(message):
        kind = Refused
    elif status == 401:
        kind = Unauthorized
    elif status == 402 or (status in (400, 403, 429) and _CREDIT.search(message)):
        kind = OutOfCredit
    elif status == 403:
        kind = Forbidden
    elif status == 404:
        kind = UnknownModel
    elif status == 429:
        return RateLimited(text, retry_after=retry_after, status=status, **context)
    elif status in (408, 409, 425) or status >= 500:
        kind = Transient
    elif status == 413:
        kind = ContextTooLong
    elif status in (400, 422) and (found := _budget_or_context(message)) is not None:
        kind = found
    else:
        kind = BadResponse
    return kind(text, status=status, **context)


_STOP = {
    # OpenAI-compatible finish_reason
    "stop": StopReason.END,
    "eos": StopReason.END,
    "end": StopReason.END,
    "length": StopReason.MAX_TOKENS,
    "content_filter": StopReason.REFUSAL,
    "tool_calls": StopReason.TOOL_USE,
    "function_call": StopReason.TOOL_USE,
    # Anthropic stop_reason
    "end_turn": StopReason.END,
    "stop_sequence": StopReason.END,
    "pause_turn": StopReason.END,
    "max_tokens": StopReason.MAX_TOKENS,
    "model_context_window_exceeded": StopReason.MAX_TOKENS,
    "refusal": StopReason.REFUSAL,
    "tool_use": StopReason.TOOL_USE,
}


def stop_reason_of(raw: str | None) -> StopReason:
    """Normalise a provider's finish/stop reason. Unknown or missing reasons count as END
    (servers such as llama.cpp and some proxies omit it); emptiness is checked separately."""
    if raw is None:
        return StopReason.END
    return _STOP.get(raw.strip().lower(), StopReason.END)


def completion_or_error(
    *,
    text: str,
    stop: StopReason,
    usage: Usage,
    model: str,
    provider: str,
    request_id: str | None,
    latency_ms: float,
    raw_stop: str | None = None,
) -> Completion:
    """A successful answer as a Completion, or the error it really is: MAX_TOKENS raises
    Truncated (with the partial text), REFUSAL raises Refused, blank text raises
    EmptyResponse (unless the model stopped to call a tool)."""
    context: dict[str, Any] = {
        "provider": provider,
        "model": model,
        "request_id": request_id,
        "usage": usage,
    }
    if stop is StopReason.MAX_TOKENS:
        raise Truncated(
            f"output stopped at the max_tokens cutoff ({raw_stop or 'max_tokens'}) after "
            f"{usage.output_tokens} tokens",
            partial=text,
            **context,
        )
    if stop is StopReason.REFUSAL:
        raise Refused(f"the provider refused the request ({raw_stop or 'refusal'})", **context)
    if not text.strip() and stop is not StopReason.TOOL_USE:
        raise EmptyResponse("the provider answered with no content", **context)
    return Completion(
        text=text,
        stop_reason=stop,
        usage=usage,
        model=model,
        provider=provider,
        request_id=request_id,
        latency_ms=latency_ms,
    )


def token_count(usage: object, field: str) -> int:
    """A token count from a provider's usage object, read defensively: metering must
    never fail the call it meters, so a missing, negative or non-integer count is 0."""
    value = getattr(usage, field, None) if usage is not None else None
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        return 0
    return value


def text_of_content(content: object) -> str:
    """A message's text: a string, or the text parts of a list of content parts (some
    OpenAI-compatible servers answer with ``[{"type": "text", "text": …}]``)."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts = []
        for part in content:
            text = part.get("text") if isinstance(part, dict) else getattr(part, "text", None)
            if isinstance(text, str):
                parts.append(text)
        return "".join(parts)
    return ""


# an agent CLI's call: the request as its prompt, and what it said when it failed --------

# the system prompt a call without one gets: it replaces the coding agent's own
NEUTRAL_SYSTEM = (
    "You are a text-processing model called by a program. Use no tools. Answer with the "
    "requested output only, in the requested format."
)


def prompt_of(request: ModelRequest, *, with_system: bool) -> str:
    """The request as one prompt. One user message is sent as it is; a conversation is
    written out turn by turn. ``with_system`` puts the system prompt (and any system
    message) in front, for a CLI that takes no system prompt of its own."""
    parts: list[str] = []
    systems = [m.content for m in request.messages if m.role == "system"]
    if with_system:
        systems = [request.system, *systems] if request.system else systems
        if systems:
            parts.append("Instructions:\n" + "\n\n".join(systems))
    turns = [m for m in request.messages if m.role != "system"]
    if len(turns) == 1 and turns[0].role == "user" and not parts:
        return turns[0].content
    if len(turns) == 1 and turns[0].role == "user":
        parts.append(turns[0].content)
    else:
        label = {"user": "User", "assistant": "Assistant", "tool": "Tool output"}
        parts.extend(f"{label[m.role]}:\n{m.content}" for m in turns)
    return "\n\n".join(parts)


def system_of(request: ModelRequest) -> str:
    """The system prompt for a CLI that takes one (system messages folded in), or the
    neutral one: never the coding agent's own."""
    given = [request.system, *(m.content for m in request.messages if m.role == "system")]
    systems = [s for s in given if s]
    return "\n\n".join(systems) if systems else NEUTRAL_SYSTEM


def first_line(text: str, limit: int = 300) -> str:
    """The first non-blank line of ``text`` (an error message's own), cut to ``limit``."""
    for line in text.splitlines():
        if line.strip():
            line = line.strip()
            return line if len(line) <= limit else line[: limit - 1] + "…"
    return ""


# "API Error: 529 {...}" (Claude Code), "unexpected status 401 Unauthorized: …" (Codex)
_STATUS = re.compile(r"(?:API Error:?|unexpected status|status(?: code)?:?)\s*(\d{3})\b", re.I)
_LOGGED_OUT = re.compile(
    r"invalid api key|please run /login|run `?codex login|not logged in|log ?in again"
    r"|oauth token (?:has )?expired|authentication[_ ](?:error|failed)|invalid x-api-key"
    r"|token (?:is )?expired|unauthori[sz]ed",
    re.I,
)
_CLI_CREDIT = re.compile(r"credit balance is too low|insufficient[_ ]quota|out of credits?", re.I)
_CLI_CONTEXT = re.compile(
    r"prompt is too long|context[ _](?:length|window)|maximum context|input is too long"
    r"|too many (?:input )?tokens",
    re.I,
)
_LIMIT = re.compile(
    r"usage limit|limit reached|rate[_ ]limit|too many requests|hit your (?:usage )?limit", re.I
)
_REFUSAL = re.compile(
    r"usage polic|violat\w* (?:our|the|anthropic|openai)|content (?:policy|filter)"
    r"|unable to respond to this request|flagged",
    re.I,
)
_TRANSIENT = re.compile(
    r"overloaded|internal server error|service unavailable|bad gateway|timed? ?out"
    r"|connection (?:error|refused|reset)|stream (?:error|disconnected)|network|ECONNRESET",
    re.I,
)
_MODEL = re.compile(
    r"\bmodel\b.{0,80}\b(?:not found|does not exist|not supported|not available|invalid)"
    r"|unknown model|invalid model|not_found_error",
    re.I,
)
# Claude Code: "Claude AI usage limit reached|1767225600" (the epoch second it resets)
_RESET_EPOCH = re.compile(r"limit reached\|(\d{9,11})")
# Codex: "Try again in 4 days 20 hours 9 minutes." / "try again in 42s"
_TRY_AGAIN = re.compile(
    r"try again in\s+((?:\d+\s*(?:days?|d|hours?|h|minutes?|mins?|m|seconds?|secs?|s)[\s,]*)+)",
    re.I,
)
_UNITS = {"d": 86400, "h": 3600, "m": 60, "s": 1}
_LOG_IN = "(log the CLI in, then try again)"
# a usage window (hours away) with no reset time given: past any retry wait
USAGE_WINDOW_S = 3600.0


def _wait_of(message: str, now: float) -> float | None:
    if m := _RESET_EPOCH.search(message):
        return max(0.0, int(m.group(1)) - now)
    if m := _TRY_AGAIN.search(message):
        total = 0
        for num, unit in re.findall(r"(\d+)\s*([a-z]+)", m.group(1), re.I):
            total += int(num) * _UNITS.get(unit[0].lower(), 0)
        return float(total)
    if re.search(r"usage limit|limit reached|hit your (?:usage )?limit", message, re.I):
        return USAGE_WINDOW_S
    return None


def error_for_message(message: str, *, now: float | None = None, **context: Any) -> ModelError:
    """The ModelError for what an agent CLI said when a call failed (``context``:
    provider, model, request_id, usage). Order matters: a refusal is a refusal whatever
    status came with it; then a status the CLI quoted; then the words alone."""
    text = message.strip() or "the command failed without saying why"
    now = time.time() if now is None else now
    if _REFUSAL.search(text):
        return Refused(f"refused: {text}", **context)
    if (m := _STATUS.search(text)) is not None:
        status = int(m.group(1))
        if status == 429 or (status in (400, 403) and _LIMIT.search(text)):
            if _CLI_CREDIT.search(text):
                return OutOfCredit(text, status=status, **context)
            return RateLimited(text, retry_after=_wait_of(text, now), status=status, **context)
        kind = type(error_for_status(status, text))  # the CLI's own words, no "HTTP …:"
        if kind is Unauthorized:
            text = f"{text} {_LOG_IN}"
        return kind(text, status=status, **context)
    if _CLI_CREDIT.search(text):
        return OutOfCredit(text, **context)
    if _CLI_CONTEXT.search(text):
        return ContextTooLong(text, **context)
    if _LOGGED_OUT.search(text):
        return Unauthorized(f"{text} {_LOG_IN}", **context)
    if _LIMIT.search(text):
        return RateLimited(text, retry_after=_wait_of(text, now), **context)
    if _MODEL.search(text):
        return UnknownModel(text, **context)
    if _TRANSIENT.search(text):
        return Transient(text, **context)
    return ModelError(text, **context)
