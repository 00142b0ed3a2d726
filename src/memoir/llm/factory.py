"""Models from settings: ``MEMOIR_LLM`` = ``offline`` | ``openai:<model>`` |
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
login it already has (:mod:`memoir.llm.agent_cli`): they need no key, but their command
(``claude`` / ``codex``) must be on PATH; without a model they use the CLI's default.
"""

from __future__ import annotations

import importlib.util
import os
import shutil
from collections.abc import Callable, Mapping
from dataclasses import dataclass

from memoir.config import Settings
from memoir.errors import ConfigError, install_hint
from memoir.llm.port import Model

__all__ = [
    "PROVIDERS",
    "ModelSpec",
    "agent_missing",
    "check_settings",
    "fallback_from_settings",
    "model_from_settings",
    "parse_spec",
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
        from memoir.llm.offline import OfflineModel

        return OfflineModel()
    if spec.provider in _AGENTS:
        return _agent(spec, settings)
    if key is None:  # pragma: no cover - check_settings runs first
        raise _missing_key(spec, "MEMOIR_LLM", fallback=False)
    _require_sdk(spec.provider)
    if spec.provider == "openai":
        from memoir.llm.openai_provider import OpenAIModel

        return OpenAIModel(
            spec.model,
            api_key=key,
            base_url=settings.llm_base_url,
            timeout_s=_timeout(settings),
        )
    from memoir.llm.anthropic_provider import AnthropicModel

    return AnthropicModel(
        spec.model, api_key=key, base_url=settings.llm_base_url, timeout_s=_timeout(settings)
    )


def _agent(spec: ModelSpec, settings: Settings) -> Model:
    from memoir.llm.agent_cli import runs_folder

    command, _ = _AGENTS[spec.provider]
    binary = shutil.which(command) or command
    runs = runs_folder(settings.home)
    if spec.provider == "claude-code":
        from memoir.llm.claude_code_provider import ClaudeCodeModel

        return ClaudeCodeModel(
            spec.model, runs_dir=runs, timeout_s=_timeout(settings), binary=binary
        )
    from memoir.llm.codex_provider import CodexModel

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
