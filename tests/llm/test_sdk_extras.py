"""The provider SDKs are extras (``[openai]``, ``[anthropic]``, ``[all]``): the base install
runs offline without them, and choosing a provider whose SDK is missing says, in one line,
which extra to install — at start-up, before any work."""

from __future__ import annotations

import os
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from memoir.llm.wiring import sdk_missing

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize(
    ("provider", "installed", "expected"),
    [
        ("openai", set(), "pip install 'memoir-engine[openai]'"),
        ("anthropic", set(), "pip install 'memoir-engine[anthropic]'"),
        ("openai", {"openai"}, None),
        ("anthropic", {"anthropic"}, None),
        ("offline", set(), None),  # the default needs no SDK
    ],
)
def test_which_extra_a_provider_needs(
    provider: str, installed: set[str], expected: str | None
) -> None:
    said = sdk_missing(provider, find=lambda name: object() if name in installed else None)
    if expected is None:
        assert said is None
    else:
        assert said is not None and said.endswith(expected) and "\n" not in said
        assert said.startswith(f"the {provider} model needs its SDK")


def test_the_sdks_are_extras_not_dependencies() -> None:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    base = " ".join(project["dependencies"])
    assert "openai" not in base and "anthropic" not in base
    extras = project["optional-dependencies"]
    assert [d.split(">")[0] for d in extras["openai"]] == ["openai"]
    assert [d.split(">")[0] for d in extras["anthropic"]] == ["anthropic"]
    assert "openai" in extras["all"][0] and "anthropic" in extras["all"][0]


# hides one top-level package from the interpreter, as an install without that extra has it
HIDE = """
import sys
sys.modules[sys.argv.pop(1)] = None  # import raises ModuleNotFoundError; find_spec says None
from memoir.cli.app import main
sys.argv[0] = "memoir"
main()
"""


@pytest.mark.parametrize("provider", ["openai", "anthropic"])
def test_a_missing_sdk_is_one_line_naming_the_extra(provider: str, tmp_path: Path) -> None:
    sources = tmp_path / "transcripts"
    sources.mkdir()
    env = {
        "HOME": str(tmp_path),
        "PATH": os.defpath,
        "MEMOIR_HOME": str(tmp_path / "home"),
        "MEMOIR_SOURCES": str(sources),
        "MEMOIR_LLM": f"{provider}:some-model",
        "MEMOIR_LLM_API_KEY": "sk-test",
    }
    if pythonpath := os.environ.get("PYTHONPATH"):
        env["PYTHONPATH"] = pythonpath
    done = subprocess.run(
        [sys.executable, "-c", HIDE, provider, "sync"],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 2, done.stdout + done.stderr
    lines = [line for line in done.stderr.splitlines() if line.strip()]
    assert len(lines) == 1, done.stderr
    assert f"pip install 'memoir-engine[{provider}]'" in lines[0]
    assert "Traceback" not in done.stderr
