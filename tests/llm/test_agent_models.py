"""``MEMOIR_LLM=claude-code`` / ``codex`` against fake ``claude`` / ``codex`` executables
on PATH that speak the real output formats (:mod:`tests.llm.agent_fakes` documents them):
what the CLI is asked (prompt on stdin, no tools, the model, Memoir's runs folder), what
comes back (answer, tokens into the ledger), and every way a run fails."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

from memoir.config import Settings
from memoir.errors import ConfigError
from memoir.llm.agent_providers import RUNS_FOLDER, ClaudeCodeModel, CodexModel
from memoir.llm.port import (
    BadResponse,
    ChatMessage,
    MemorySink,
    Model,
    ModelError,
    ModelRequest,
    Purpose,
    RateLimited,
    Refused,
    RequestMeta,
    StopReason,
    Transient,
    Unauthorized,
    UnknownModel,
)
from memoir.llm.wiring import (
    Retrying,
    RetryPolicy,
    check_settings,
    fallback_from_settings,
    model_from_settings,
    wrap,
)

from .agent_fakes import alive, calls, install
from .test_redaction_wire import SECRETS

TOOLS = {"claude-code": "claude", "codex": "codex"}


@pytest.fixture
def fake(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Both fakes first on PATH; returns the folder where their calls are logged."""
    bin_dir = tmp_path / "bin"
    install(bin_dir, "claude")
    install(bin_dir, "codex")
    monkeypatch.setenv("PATH", f"{bin_dir}:/usr/bin:/bin")
    log = tmp_path / "calls"
    monkeypatch.setenv("FAKE_AGENT_LOG", str(log))
    monkeypatch.setenv("FAKE_AGENT_MODE", "ok")
    monkeypatch.setenv("FAKE_AGENT_ANSWER", '{"narrative": "Fixed the flaky test."}')
    return log


def _settings(home: Path, **env: str) -> Settings:
    return Settings.from_env({"MEMOIR_HOME": str(home), **env}, sources=())


def _request(text: str = "Summarize this conversation: we fixed the flaky test.") -> ModelRequest:
    return ModelRequest(
        messages=(ChatMessage("user", text),),
        max_tokens=300,
        system="Answer with a JSON object.",
        json=True,
        meta=RequestMeta(purpose=Purpose.SUMMARY, session="s1", user="ann"),
    )


def _model(home: Path, spec: str, **env: str) -> Model:
    return model_from_settings(_settings(home, MEMOIR_LLM=spec, **env))


@pytest.mark.parametrize("spec", ["claude-code:sonnet", "codex:gpt-5-codex"])
def test_a_normal_answer(fake: Path, home: Path, spec: str) -> None:
    model = _model(home, spec)
    assert isinstance(model, ClaudeCodeModel | CodexModel) and model.name == spec
    done = model.complete(_request())
    assert done.text == '{"narrative": "Fixed the flaky test."}'
    assert done.stop_reason is StopReason.END and done.provider == spec.split(":")[0]
    assert done.request_id and len(done.request_id) == 36  # the CLI's session / thread id
    [call] = calls(fake)
    argv = call["argv"]
    assert isinstance(argv, list)
    assert call["cwd"] == str(home / RUNS_FOLDER)  # Memoir's own runs folder
    if spec.startswith("claude-code"):
        # the prompt on stdin, Memoir's system prompt in place of Claude Code's
        assert call["stdin"] == "Summarize this conversation: we fixed the flaky test."
        assert argv[:3] == ["-p", "--output-format", "json"]
        assert argv[argv.index("--tools") + 1] == ""  # no tools at all
        assert argv[argv.index("--model") + 1] == "sonnet"
        assert argv[argv.index("--system-prompt") + 1] == "Answer with a JSON object."
        assert "--no-session-persistence" in argv and "--strict-mcp-config" in argv
        assert json.loads(argv[argv.index("--settings") + 1]) == {"disableAllHooks": True}
        # all input the API counted: fresh, written to and read from the prompt cache
        assert (done.usage.input_tokens, done.usage.output_tokens) == (12 + 300 + 1000, 42)
        assert done.model == "claude-sonnet-4-5-20250929"  # modelUsage names the model
        assert done.extra["cost_usd"] == pytest.approx(0.0042)
    else:
        assert call["stdin"] == (
            "Instructions:\nAnswer with a JSON object.\n\n"
            "Summarize this conversation: we fixed the flaky test."
        )
        assert argv[:3] == ["exec", "--json", "--ephemeral"] and argv[-1] == "-"
        assert argv[argv.index("--sandbox") + 1] == "read-only"
        assert argv[argv.index("-m") + 1] == "gpt-5-codex"
        assert argv[argv.index("-C") + 1] == str(home / RUNS_FOLDER)
        assert "mcp_servers={}" in argv and "--skip-git-repo-check" in argv
        # cached_input_tokens is part of input_tokens: not added again
        assert (done.usage.input_tokens, done.usage.output_tokens) == (2400, 88)
        assert done.model == "gpt-5-codex"


@pytest.mark.parametrize("spec", ["claude-code", "codex"])
def test_no_model_uses_the_cli_default(fake: Path, home: Path, spec: str) -> None:
    model = _model(home, spec)
    assert model.name == spec
    model.complete(_request())
    argv = calls(fake)[0]["argv"]
    assert isinstance(argv, list) and "--model" not in argv and "-m" not in argv


@pytest.mark.parametrize("spec", ["claude-code:haiku", "codex:gpt-5"])
def test_tokens_go_into_the_ledger(fake: Path, home: Path, spec: str) -> None:
    settings = _settings(home, MEMOIR_LLM=spec)
    sink = MemorySink()
    model = wrap(model_from_settings(settings), sink, settings)
    model.complete(_request())
    [row] = sink.records
    assert row.provider == spec.split(":")[0] and row.outcome == "ok"
    assert row.purpose == "summary" and row.session == "s1" and row.user == "ann"
    if spec.startswith("claude-code"):
        assert (row.model, row.input_tokens, row.output_tokens) == (
            "claude-haiku-4-5-20251001",
            1312,
            42,
        )
    else:
        assert (row.model, row.input_tokens, row.output_tokens) == ("gpt-5", 2400, 88)
    assert row.request_id is not None


# mode → (error class, retried by the retry loop)
FAILURES: list[tuple[str, type[ModelError], bool]] = [
    ("logged_out", Unauthorized, False),
    ("rate_limit", RateLimited, False),  # a usage window hours away: no retry waits for it
    ("api_429", RateLimited, True),
    ("overloaded", Transient, True),
    ("refused", Refused, False),
    ("partial", BadResponse, False),
    ("partial_crash", ModelError, False),
    ("crash", ModelError, False),
]


@pytest.mark.parametrize("spec", ["claude-code", "codex"])
@pytest.mark.parametrize(("mode", "kind", "retried"), FAILURES)
def test_failures_map_onto_the_error_tree(
    fake: Path,
    home: Path,
    monkeypatch: pytest.MonkeyPatch,
    spec: str,
    mode: str,
    kind: type[ModelError],
    retried: bool,
) -> None:
    monkeypatch.setenv("FAKE_AGENT_MODE", mode)
    settings = _settings(home, MEMOIR_LLM=spec, MEMOIR_LLM_RETRY_BUDGET="2")
    sink = MemorySink()
    model = wrap(model_from_settings(settings), sink, settings)
    assert isinstance(model, Retrying)
    model.policy = RetryPolicy(attempts=2, base_s=0.0, cap_s=0.0, max_wait_s=60.0)
    with pytest.raises(ModelError) as info:
        model.complete(_request())
    error = info.value
    assert type(error) is kind, (mode, error)
    assert error.provider == spec and "\n" not in str(error) and str(error).strip()
    assert len(calls(fake)) == (2 if retried else 1)  # retryable ones were tried again
    assert [r.outcome for r in sink.records] == [kind.__name__] * len(calls(fake))
    if mode == "logged_out":
        assert "log the CLI in" in str(error)
    if mode == "rate_limit":
        assert isinstance(error, RateLimited)
        expected = 7200 if spec == "claude-code" else 4800
        assert error.retry_after == pytest.approx(expected, abs=5)
    if mode == "crash":
        assert "unknown option '--tools'" in str(error) or "--ephemeral" in str(error)


@pytest.mark.parametrize("spec", ["claude-code", "codex"])
def test_a_hang_is_killed_at_the_timeout(
    fake: Path, home: Path, monkeypatch: pytest.MonkeyPatch, spec: str
) -> None:
    monkeypatch.setenv("FAKE_AGENT_MODE", "hang")
    model = _model(home, spec, MEMOIR_LLM_TIMEOUT_S="1.5")
    started = time.monotonic()
    with pytest.raises(Transient, match=r"did not answer within 1.5s \(MEMOIR_LLM_TIMEOUT_S\)"):
        model.complete(_request())
    assert time.monotonic() - started < 10
    child = int((fake / "child.pid").read_text())
    deadline = time.monotonic() + 5
    while alive(child) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not alive(child)  # the whole process group went, not only the CLI


@pytest.mark.parametrize("spec", ["claude-code", "codex"])
def test_a_missing_binary(
    home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, spec: str
) -> None:
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    command = TOOLS[spec]
    with pytest.raises(ConfigError) as info:  # at start-up, one line
        check_settings(_settings(home, MEMOIR_LLM=spec), env={})
    assert f"runs the {command} command, which is not on PATH" in str(info.value)
    assert "\n" not in str(info.value)
    with pytest.raises(ConfigError, match="not on PATH"):
        check_settings(_settings(home, MEMOIR_LLM_FALLBACK=spec), env={})
    # gone after start-up: a setting to fix, never retried
    cls = ClaudeCodeModel if spec == "claude-code" else CodexModel
    model = cls(runs_dir=home / RUNS_FOLDER, binary=str(tmp_path / "nowhere" / command))
    with pytest.raises(UnknownModel, match=f"the {command} command is not installed") as info2:
        model.complete(_request())
    assert not info2.value.retryable


def test_agents_need_no_key_and_serve_as_the_fallback(fake: Path, home: Path) -> None:
    check_settings(_settings(home, MEMOIR_LLM="claude-code"), env={})  # no key asked for
    settings = _settings(
        home,
        MEMOIR_LLM="openai:gpt-x",
        MEMOIR_LLM_API_KEY="sk",
        MEMOIR_LLM_BASE_URL="http://127.0.0.1:1/v1",
        MEMOIR_LLM_FALLBACK="codex:gpt-5",
    )
    fallback = fallback_from_settings(settings, env={})
    assert isinstance(fallback, CodexModel) and fallback.name == "codex:gpt-5"
    assert fallback.complete(_request()).text.startswith('{"narrative"')


@pytest.mark.parametrize("spec", ["claude-code", "codex"])
def test_a_pasted_secret_never_reaches_the_cli(fake: Path, home: Path, spec: str) -> None:
    settings = _settings(home, MEMOIR_LLM=spec)
    sink = MemorySink()
    model = wrap(model_from_settings(settings), sink, settings)
    lines = [context.format(secret=secret) for _kind, secret, context in SECRETS]
    model.complete(_request("Summarize: I pasted these by mistake:\n" + "\n".join(lines)))
    [call] = calls(fake)
    seen = json.dumps(call)  # stdin and the whole command line
    assert "I pasted these by mistake" in seen
    for _kind, secret, _context in SECRETS:
        for part in secret.splitlines()[-2:]:
            assert part.rsplit(".", 1)[-1] not in seen, part
    assert "[redacted:" in str(call["stdin"])
    assert sink.records[0].redacted >= len(SECRETS) - 1


def test_claude_code_runs_from_inside_a_claude_code_session(
    fake: Path, home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Memoir's MCP server and the hook's sync run under Claude Code, whose environment
    marks a session; the CLI refuses to start "nested" under that mark."""
    monkeypatch.setenv("CLAUDECODE", "1")
    monkeypatch.setenv("CLAUDE_CODE_ENTRYPOINT", "cli")
    done = _model(home, "claude-code").complete(_request())
    assert done.text.startswith('{"narrative"')
    assert calls(fake)[0]["nested"] is None
