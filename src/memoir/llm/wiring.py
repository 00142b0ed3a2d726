"""Models from settings, and how the configured model is wrapped for use:
Retrying(Redacting(Metered(model, store))).

Models from settings: ``MEMOIR_LLM`` = ``offline`` | ``openai:<model>`` |
``anthropic:<model>`` | ``claude-code[:<model>]`` | ``codex[:<model>]``
(``MEMOIR_LLM_FALLBACK`` the same form), ``MEMOIR_LLM_BASE_URL``,
``MEMOIR_LLM_API_KEY`` (else ``OPENAI_API_KEY`` / ``ANTHROPIC_API_KEY``),
``MEMOIR_LLM_TIMEOUT_S`` (per request, default 120, 0 = none) and
``MEMOIR_LLM_RETRY_BUDGET`` (attempts per call for RateLimited / Transient, default 3).

:func:`check_settings` validates all of it at start-up and raises one
:class:`~memoir.errors.ConfigError` line that names the variable to set.

A fallback of another provider than the primary needs its own key: Settings carries one
key, so the fallback provider's conventional variable (``OPENAI_API_KEY`` /
``ANTHROPIC_API_KEY``) is read from the environment here; when it is the same provider the
primary key is used.

``claude-code`` and ``codex`` are the user's own coding agent, run as a command under the
login it already has (:mod:`memoir.llm.agent_providers`): they need no key, but their command
(``claude`` / ``codex``) must be on PATH; without a model they use the CLI's default.

How the configured model is wrapped for use:
``Retrying(Redacting(Metered(model, store)))``.

Every model is redacted unless ``MEMOIR_REDACT=off`` (``Settings.redact``): secrets never
reach a provider, and each ledger row counts them. The offline model is redacted too:
what it writes (summaries, episodes, compaction summaries, memory items) is derived text,
and derived text carries placeholders, never a credential (issue 41).

Metering sits inside the retry loop so that every attempt the provider saw (and may have
billed) is one ledger row. The offline model is metered too (its rows say ``offline``)
but never retried: it has no transient failures.

The one redaction step at the model boundary.

:class:`Redacting` wraps a Model and replaces every secret in a request's system prompt and
messages (:func:`memoir.secrets.redact`: detect-secrets' plugins, a stable placeholder per
kind) before the inner model — and so the provider — sees it. Summaries, episodes,
compaction and memory extraction all reach a provider through ``Model.complete``, so this
is the one place it happens. The number of secrets replaced rides on the request
(``RequestMeta.redacted``) to the ledger inside; the secrets themselves are never logged.
The offline model reads the request's task instead of its prompt, so the task's text is
redacted the same way (it holds the same text: the count is the prompt's).

Retries with jittered exponential backoff, for RateLimited and Transient only.

The SDKs' own retries are disabled; this is the one retry loop. ``attempts`` is the
caller's budget (total calls, the first included). A provider's ``retry_after`` is honoured
(never waited less than it asked); one longer than ``max_wait_s`` ends the loop at once —
a caller with a budget is better served by the error than by a minutes-long sleep.
Every other error (Truncated, Refused, AuthError, …) surfaces on the first attempt.

``sleep`` and ``rand`` are injectable so tests run without waiting.
"""

from __future__ import annotations

import dataclasses
import importlib.util
import logging
import os
import random
import shutil
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from typing import Any, TypeVar

from memoir.config import Settings
from memoir.errors import ConfigError, install_hint
from memoir.llm.port import (
    ChatMessage,
    Completion,
    Metered,
    Model,
    ModelError,
    ModelRequest,
    RateLimited,
    UsageSink,
)
from memoir.secrets import redact

__all__ = [
    "PROVIDERS",
    "ModelSpec",
    "Redacting",
    "RetryPolicy",
    "Retrying",
    "agent_missing",
    "backoff_delay",
    "call_with_retries",
    "check_settings",
    "fallback_from_settings",
    "model_from_settings",
    "parse_spec",
    "redact_request",
    "wrap",
    "wrapped_fallback",
    "wrapped_model",
]

PROVIDERS = ("offline", "openai", "anthropic", "claude-code", "codex")
_KEY_VARS = {"openai": "OPENAI_API_KEY", "anthropic": "ANTHROPIC_API_KEY"}
# the user's own coding agent: its command, and how to get it
_AGENTS = {
    "claude-code": (
        "claude",
        "npm install -g @anthropic-ai/claude-code, then run claude to log in",
    ),
    "codex": ("codex", "npm install -g @openai/codex, then run codex login"),
}


@dataclass(frozen=True, slots=True)
class ModelSpec:
    provider: str
    model: str

    @property
    def name(self) -> str:
        if self.provider == "offline" or not self.model:
            return self.provider
        return f"{self.provider}:{self.model}"


def parse_spec(raw: str, variable: str = "MEMOIR_LLM") -> ModelSpec:
    """``offline`` | ``openai:<model>`` | ``anthropic:<model>`` | ``claude-code[:<model>]``
    | ``codex[:<model>]`` → ModelSpec (an agent without a model: ``model`` is "")."""
    text = raw.strip()
    provider, sep, model = text.partition(":")
    provider = provider.strip().lower()
    model = model.strip()
    if provider == "offline" and not model:
        return ModelSpec("offline", "offline")
    if provider in _AGENTS:
        return ModelSpec(provider, model)
    if provider in ("openai", "anthropic") and sep and model:
        return ModelSpec(provider, model)
    if provider in ("openai", "anthropic"):
        raise ConfigError(f"{variable}={raw!r} names no model; use {provider}:<model>")
    raise ConfigError(
        f"{variable}={raw!r} is not a model; use offline, openai:<model>, anthropic:<model>, "
        "claude-code[:<model>] or codex[:<model>]"
    )


def _key_for(
    spec: ModelSpec, settings: Settings, primary: ModelSpec, env: Mapping[str, str]
) -> str | None:
    if spec.provider == primary.provider and settings.llm_api_key:
        return settings.llm_api_key
    value = env.get(_KEY_VARS[spec.provider], "").strip()
    return value or None


def _missing_key(spec: ModelSpec, variable: str, *, fallback: bool) -> ConfigError:
    own = _KEY_VARS[spec.provider]
    if fallback:
        return ConfigError(f"{variable}={spec.name} needs an API key: set {own}")
    return ConfigError(f"{variable}={spec.name} needs an API key: set MEMOIR_LLM_API_KEY or {own}")


def _timeout(settings: Settings) -> float | None:
    """``MEMOIR_LLM_TIMEOUT_S`` seconds per request; 0 means no timeout."""
    return settings.llm_timeout_s if settings.llm_timeout_s > 0 else None


def _build(spec: ModelSpec, settings: Settings, key: str | None) -> Model:
    if spec.provider == "offline":
        from memoir.llm import OfflineModel

        return OfflineModel()
    if spec.provider in _AGENTS:
        return _agent(spec, settings)
    if key is None:  # pragma: no cover - check_settings runs first
        raise _missing_key(spec, "MEMOIR_LLM", fallback=False)
    _require_sdk(spec.provider)
    if spec.provider == "openai":
        from memoir.llm.sdk_providers import OpenAIModel

        return OpenAIModel(
            spec.model,
            api_key=key,
            base_url=settings.llm_base_url,
            timeout_s=_timeout(settings),
        )
    from memoir.llm.sdk_providers import AnthropicModel

    return AnthropicModel(
        spec.model, api_key=key, base_url=settings.llm_base_url, timeout_s=_timeout(settings)
    )


def _agent(spec: ModelSpec, settings: Settings) -> Model:
    from memoir.llm.agent_providers import runs_folder

    command, _ = _AGENTS[spec.provider]
    binary = shutil.which(command) or command
    runs = runs_folder(settings.home)
    if spec.provider == "claude-code":
        from memoir.llm.agent_providers import ClaudeCodeModel

        return ClaudeCodeModel(
            spec.model, runs_dir=runs, timeout_s=_timeout(settings), binary=binary
        )
    from memoir.llm.agent_providers import CodexModel

    return CodexModel(spec.model, runs_dir=runs, timeout_s=_timeout(settings), binary=binary)


def agent_missing(provider: str, which: Callable[[str], str | None] = shutil.which) -> str | None:
    """The one line saying the agent CLI ``provider`` runs is not on PATH; None when it is
    (or ``provider`` is no agent)."""
    if provider not in _AGENTS:
        return None
    command, how = _AGENTS[provider]
    if which(command) is not None:
        return None
    return f"the {provider} model runs the {command} command, which is not on PATH: {how}"


def _needs_key(provider: str) -> bool:
    return provider != "offline" and provider not in _AGENTS


def sdk_missing(
    provider: str, find: Callable[[str], object] = importlib.util.find_spec
) -> str | None:
    """The one line saying which extra to install when ``provider``'s official SDK is not
    installed (the SDKs are extras: the default model is offline); None when it is."""
    if provider not in _KEY_VARS:
        return None
    try:
        if find(provider) is not None:
            return None
    except (ImportError, ValueError):  # a broken install counts as none
        pass
    return f"the {provider} model needs its SDK, which is not installed: {install_hint(provider)}"


def _require_sdk(provider: str) -> None:
    if (missing := sdk_missing(provider) or agent_missing(provider)) is not None:
        raise ConfigError(missing)


def check_settings(settings: Settings, env: Mapping[str, str] | None = None) -> None:
    """Fail at start-up, in one line naming the variable, on a bad model configuration."""
    env = os.environ if env is None else env
    primary = parse_spec(settings.llm, "MEMOIR_LLM")
    _require_sdk(primary.provider)
    if _needs_key(primary.provider) and not settings.llm_api_key:
        raise _missing_key(primary, "MEMOIR_LLM", fallback=False)
    if settings.llm_fallback:
        spec = parse_spec(settings.llm_fallback, "MEMOIR_LLM_FALLBACK")
        _require_sdk(spec.provider)
        if _needs_key(spec.provider) and _key_for(spec, settings, primary, env) is None:
            raise _missing_key(spec, "MEMOIR_LLM_FALLBACK", fallback=True)


def model_from_settings(settings: Settings) -> Model:
    """The configured primary model (unwrapped: no retries, no ledger)."""
    check_settings(settings)
    primary = parse_spec(settings.llm)
    return _build(primary, settings, settings.llm_api_key)


def fallback_from_settings(
    settings: Settings, env: Mapping[str, str] | None = None
) -> Model | None:
    """The refusal fallback model (``MEMOIR_LLM_FALLBACK``), or None when unset."""
    if not settings.llm_fallback:
        return None
    env = os.environ if env is None else env
    check_settings(settings, env)
    primary = parse_spec(settings.llm)
    spec = parse_spec(settings.llm_fallback, "MEMOIR_LLM_FALLBACK")
    if not _needs_key(spec.provider):
        return _build(spec, settings, None)
    key = _key_for(spec, settings, primary, env)
    # the base URL belongs to the primary provider; a fallback elsewhere uses its default
    base = settings.llm_base_url if spec.provider == primary.provider else None
    return _build(spec, _with_base(settings, base), key)


def _with_base(settings: Settings, base_url: str | None) -> Settings:
    from dataclasses import replace

    return replace(settings, llm_base_url=base_url)


def wrap(model: Model, sink: UsageSink, settings: Settings) -> Model:
    """Meter every call of ``model`` into ``sink``; retry within the settings' budget."""
    metered: Model = Metered(model, sink)
    if settings.redact == "on":
        metered = Redacting(metered)
    if model.name == "offline":
        return metered
    return Retrying(metered, RetryPolicy(attempts=max(1, settings.llm_retry_budget)))


def wrapped_model(settings: Settings, sink: UsageSink) -> Model:
    return wrap(model_from_settings(settings), sink, settings)


def wrapped_fallback(settings: Settings, sink: UsageSink) -> Model | None:
    fallback = fallback_from_settings(settings)
    return None if fallback is None else wrap(fallback, sink, settings)


def redact_request(request: ModelRequest) -> ModelRequest:
    """``request`` with its system prompt and every message redacted, the count on its meta."""
    total = 0
    system = request.system
    if system:
        done = redact(system)
        system, total = done.text, done.total
    messages: list[ChatMessage] = []
    for message in request.messages:
        done = redact(message.content)
        total += done.total
        messages.append(message if not done.total else replace(message, content=done.text))
    if not total:
        return request
    meta = replace(request.meta, redacted=request.meta.redacted + total)
    task = _redacted(request.task)
    return replace(request, system=system, messages=tuple(messages), meta=meta, task=task)


def _redacted(value: Any) -> Any:
    """``value`` with every string inside it redacted: a str (not a str enum), and the
    items of a tuple, list or dict and the fields of a dataclass, recursively."""
    if type(value) is str:
        return redact(value).text
    if isinstance(value, tuple | list):
        return type(value)(_redacted(v) for v in value)
    if isinstance(value, dict):
        return {k: _redacted(v) for k, v in value.items()}
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        changes = {f.name: _redacted(getattr(value, f.name)) for f in dataclasses.fields(value)}
        return replace(value, **changes)
    return value


class Redacting:
    """A Model that redacts every request before ``inner`` sees it."""

    def __init__(self, inner: Model) -> None:
        self.inner = inner
        self.name = inner.name

    def close(self) -> None:
        close = getattr(self.inner, "close", None)
        if callable(close):
            close()

    def complete(self, request: ModelRequest) -> Completion:
        return self.inner.complete(redact_request(request))


log = logging.getLogger(__name__)
T = TypeVar("T")


@dataclass(frozen=True, slots=True)
class RetryPolicy:
    attempts: int = 3
    base_s: float = 1.0
    cap_s: float = 30.0
    max_wait_s: float = 60.0

    def __post_init__(self) -> None:
        if self.attempts < 1:
            raise ValueError("attempts must be >= 1")


def backoff_delay(
    retry: int, policy: RetryPolicy, *, retry_after: float | None = None, rand: float = 1.0
) -> float | None:
    """Seconds to wait before retry number ``retry`` (1 = the first retry), or None when
    waiting is not worth it. "Full jitter": uniform in [0, min(cap, base·2^(retry-1))],
    ``rand`` in [0, 1]; a provider's retry_after is a floor."""
    ceiling = min(policy.cap_s, policy.base_s * (2 ** (retry - 1)))
    delay = ceiling * min(1.0, max(0.0, rand))
    if retry_after is not None:
        if retry_after > policy.max_wait_s:
            return None
        delay = max(delay, retry_after)
    return delay


def call_with_retries(
    fn: Callable[[], T],
    policy: RetryPolicy,
    *,
    sleep: Callable[[float], None] = time.sleep,
    rand: Callable[[], float] = random.random,
) -> T:
    """Call ``fn`` up to ``policy.attempts`` times, retrying retryable ModelErrors."""
    for attempt in range(1, policy.attempts + 1):
        try:
            return fn()
        except ModelError as exc:
            if not exc.retryable or attempt == policy.attempts:
                raise
            retry_after = exc.retry_after if isinstance(exc, RateLimited) else None
            delay = backoff_delay(attempt, policy, retry_after=retry_after, rand=rand())
            if delay is None:
                raise
            log.info(
                "model call failed (%s), retry %d/%d in %.1fs",
                type(exc).__name__,
                attempt,
                policy.attempts - 1,
                delay,
            )
            sleep(delay)
    raise AssertionError("unreachable")  # pragma: no cover


class Retrying:
    """A Model that retries another one under a policy. Same ``name`` as the inner."""

    def __init__(
        self,
        inner: Model,
        policy: RetryPolicy | None = None,
        *,
        sleep: Callable[[float], None] = time.sleep,
        rand: Callable[[], float] = random.random,
    ) -> None:
        self.inner = inner
        self.name = inner.name
        self.policy = policy or RetryPolicy()
        self._sleep = sleep
        self._rand = rand

    def close(self) -> None:
        """Close the wrapped model when it holds connections."""
        close = getattr(self.inner, "close", None)
        if callable(close):
            close()

    def complete(self, request: ModelRequest) -> Completion:
        return call_with_retries(
            lambda: self.inner.complete(request), self.policy, sleep=self._sleep, rand=self._rand
        )
