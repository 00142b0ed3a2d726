"""`memoir sync` fails at start-up, before indexing anything, when the configured model
cannot be used; with --no-summaries it needs no model at all."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

CORPUS = Path(__file__).resolve().parents[2] / "src" / "memoir" / "demo" / "corpus"


def run(home: Path, *args: str, **env: str) -> subprocess.CompletedProcess[str]:
    full = {k: v for k, v in os.environ.items() if not k.startswith("MEMOIR_")}
    full.pop("OPENAI_API_KEY", None)
    full.update({"MEMOIR_HOME": str(home), **env})
    return subprocess.run(
        [sys.executable, "-m", "memoir.cli", *args],
        capture_output=True,
        text=True,
        env=full,
        timeout=120,
    )


def test_missing_key_fails_before_any_work(home: Path) -> None:
    out = run(home, "sync", "--source", str(CORPUS), MEMOIR_LLM="openai:gpt-4o-mini")
    assert out.returncode == 2
    assert "OPENAI_API_KEY" in out.stderr and "MEMOIR_LLM_API_KEY" in out.stderr
    assert "Traceback" not in out.stderr and out.stderr.strip().count("\n") == 0
    assert not (home / "archive").exists(), "nothing may be archived before the check"


def test_no_summaries_needs_no_model(home: Path) -> None:
    out = run(
        home,
        "sync",
        "--source",
        str(CORPUS),
        "--no-summaries",
        "--json",
        MEMOIR_LLM="openai:gpt-4o-mini",
    )
    assert out.returncode == 0, out.stderr
    assert any((home / "archive").rglob("*.jsonl"))
