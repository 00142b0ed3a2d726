"""Configuration: MEMOIR_LLM / _BASE_URL / _API_KEY / _FALLBACK → models; bad settings
fail at start-up with one line naming the variable."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from memoir import service
from memoir.app import Memoir
from memoir.config import Settings
from memoir.errors import ConfigError
from memoir.llm import OfflineModel
from memoir.llm.port import ChatMessage, Metered, ModelRequest, Purpose, RequestMeta
from memoir.llm.sdk_providers import AnthropicModel, OpenAIModel
from memoir.llm.wiring import (
    ModelSpec,
    Redacting,
    Retrying,
    check_settings,
    fallback_from_settings,
    model_from_settings,
    parse_spec,
)
from memoir.summaries.offline import SummaryTask


def _settings(home: Path, **env: str) -> Settings:
    return Settings.from_env({"MEMOIR_HOME": str(home), **env}, sources=())


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ("offline", ModelSpec("offline", "offline")),
        (" OFFLINE ", ModelSpec("offline", "offline")),
        ("openai:gpt-4o-mini", ModelSpec("openai", "gpt-4o-mini")),
        (
            "openai:meta-llama/llama-3.1-8b:free",
            ModelSpec("openai", "meta-llama/llama-3.1-8b:free"),
        ),
        ("anthropic:claude-sonnet-4", ModelSpec("anthropic", "claude-sonnet-4")),
    ],
)
def test_parse_spec(raw: str, expected: ModelSpec) -> None:
    assert parse_spec(raw) == expected


@pytest.mark.parametrize("raw", ["openai", "openai:", "gemini:pro", "", "offline:x"])
def test_parse_spec_rejects(raw: str) -> None:
    with pytest.raises(ConfigError, match="MEMOIR_LLM"):
        parse_spec(raw)


def test_default_is_offline(home: Path) -> None:
    model = model_from_settings(_settings(home))
    assert isinstance(model, OfflineModel) and model.name == "offline"
    assert fallback_from_settings(_settings(home)) is None


def test_openai_with_base_url_and_key(home: Path) -> None:
    s = _settings(
        home,
        MEMOIR_LLM="openai:llama3",
        MEMOIR_LLM_BASE_URL="http://127.0.0.1:11434/v1",
        MEMOIR_LLM_API_KEY="sk-x",
    )
    model = model_from_settings(s)
    assert isinstance(model, OpenAIModel)
    assert model.name == "openai:llama3" and model.base_url == "http://127.0.0.1:11434/v1"
    model.close()


def test_provider_key_variable_is_accepted(home: Path) -> None:
    s = _settings(home, MEMOIR_LLM="anthropic:claude-x", ANTHROPIC_API_KEY="ak")
    model = model_from_settings(s)
    assert isinstance(model, AnthropicModel)
    model.close()


@pytest.mark.parametrize(
    ("env", "message"),
    [
        (
            {"MEMOIR_LLM": "openai:gpt-x"},
            "MEMOIR_LLM=openai:gpt-x needs an API key: set MEMOIR_LLM_API_KEY or OPENAI_API_KEY",
        ),
        (
            {"MEMOIR_LLM": "anthropic:claude-x", "OPENAI_API_KEY": "wrong-provider"},
            "set MEMOIR_LLM_API_KEY or ANTHROPIC_API_KEY",
        ),
        (
            {"MEMOIR_LLM_FALLBACK": "anthropic:claude-x"},
            "MEMOIR_LLM_FALLBACK=anthropic:claude-x needs an API key: set ANTHROPIC_API_KEY",
        ),
        ({"MEMOIR_LLM": "gpt-4"}, "MEMOIR_LLM='gpt-4' is not a model"),
        ({"MEMOIR_LLM_FALLBACK": "openai"}, "MEMOIR_LLM_FALLBACK='openai' names no model"),
    ],
)
def test_check_settings_names_the_variable(home: Path, env: dict[str, str], message: str) -> None:
    with pytest.raises(ConfigError) as info:
        check_settings(_settings(home, **env), env={})
    assert message in str(info.value)
    assert "\n" not in str(info.value)


def test_fallback_of_another_provider_uses_its_own_key(home: Path) -> None:
    s = _settings(
        home,
        MEMOIR_LLM="openai:gpt-x",
        MEMOIR_LLM_API_KEY="sk",
        MEMOIR_LLM_BASE_URL="http://127.0.0.1:1/v1",
        MEMOIR_LLM_FALLBACK="anthropic:claude-x",
    )
    fallback = fallback_from_settings(s, env={"ANTHROPIC_API_KEY": "ak"})
    assert isinstance(fallback, AnthropicModel) and fallback.name == "anthropic:claude-x"
    fallback.close()
    same = fallback_from_settings(
        _settings(
            home, MEMOIR_LLM="openai:a", MEMOIR_LLM_API_KEY="sk", MEMOIR_LLM_FALLBACK="openai:b"
        ),
        env={},
    )
    assert isinstance(same, OpenAIModel) and same.name == "openai:b"
    same.close()
    offline = fallback_from_settings(_settings(home, MEMOIR_LLM_FALLBACK="offline"), env={})
    assert isinstance(offline, OfflineModel)


def test_facade_model_is_metered_into_the_store(home: Path) -> None:
    with Memoir.open(_settings(home)) as memoir:
        model = service.model(memoir)
        assert isinstance(model, Redacting) and model.name == "offline"  # derived text too
        assert isinstance(model.inner, Metered)
        request = ModelRequest(
            messages=(ChatMessage("user", "<transcript>User: We chose SQLite.</transcript>"),),
            max_tokens=200,
            meta=RequestMeta(purpose=Purpose.SUMMARY, session="s1"),
            task=SummaryTask("User: We chose SQLite."),
        )
        assert model.complete(request).offline
        records = memoir.store.usage.records()
        assert [(r.model, r.outcome, r.session) for r in records] == [("offline", "ok", "s1")]
        assert service.fallback_model(memoir) is None


def test_facade_remote_model_is_retried_and_metered(home: Path) -> None:
    s = _settings(home, MEMOIR_LLM="openai:gpt-x", MEMOIR_LLM_API_KEY="sk")
    with Memoir.open(s) as memoir:
        model = service.model(memoir)
        assert isinstance(model, Retrying) and isinstance(model.inner, Redacting)
        assert isinstance(model.inner.inner, Metered)  # every attempt's row counts secrets
        assert model.policy.attempts == s.llm_retry_budget
        model.close()


def test_cli_missing_key_is_one_line_without_traceback(tmp_path: Path) -> None:
    env = {
        "HOME": str(tmp_path),
        "MEMOIR_HOME": str(tmp_path / "h"),
        "MEMOIR_LLM": "openai:gpt-x",
        "PATH": "/usr/bin:/bin",
    }
    code = (
        "import sys; from memoir.cli.app import main; from memoir.app import Memoir\n"
        "from memoir.config import Settings\n"
        "from memoir.llm.wiring import check_settings\n"
        "from memoir.cli.app import app\n"
        "@app.command('llm-check')\n"
        "def _c() -> None:\n"
        "    check_settings(Settings.from_env())\n"
        "main(['llm-check'])\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=60
    )
    assert result.returncode == 2
    assert "Traceback" not in result.stderr
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and "OPENAI_API_KEY" in lines[0]


def test_timeout_and_retry_budget_settings(home: Path) -> None:
    s = _settings(
        home,
        MEMOIR_LLM="openai:gpt-x",
        MEMOIR_LLM_API_KEY="sk",
        MEMOIR_LLM_TIMEOUT_S="7.5",
        MEMOIR_LLM_RETRY_BUDGET="5",
    )
    model = model_from_settings(s)
    assert isinstance(model, OpenAIModel)
    assert model._client.timeout == 7.5
    model.close()
    with Memoir.open(s) as memoir:
        wrapped = service.model(memoir)
        assert isinstance(wrapped, Retrying) and wrapped.policy.attempts == 5
        wrapped.close()
    unlimited = model_from_settings(
        _settings(
            home, MEMOIR_LLM="openai:gpt-x", MEMOIR_LLM_API_KEY="sk", MEMOIR_LLM_TIMEOUT_S="0"
        )
    )
    assert isinstance(unlimited, OpenAIModel) and unlimited._client.timeout is None
    unlimited.close()
