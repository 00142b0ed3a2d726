"""`memoir usage [--json]`: totals by day and model from the store's ledger."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from datetime import UTC, datetime
from pathlib import Path

import pytest

from memoir import service
from memoir.app import Memoir
from memoir.config import Settings
from memoir.llm import ScriptedModel
from memoir.llm.port import (
    ChatMessage,
    Metered,
    ModelRequest,
    Purpose,
    Refused,
    RequestMeta,
    UsageRecord,
)
from memoir.summaries.offline import SummaryTask


def run(args: list[str], home: Path) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("MEMOIR_")}
    env["MEMOIR_HOME"] = str(home)
    return subprocess.run(
        [sys.executable, "-m", "memoir.cli", *args],
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
    )


def _fill(home: Path) -> None:
    settings = Settings.from_env({"MEMOIR_HOME": str(home)}, sources=())
    request = ModelRequest(
        messages=(ChatMessage("user", "<transcript>User: We picked Redis.</transcript>"),),
        max_tokens=200,
        meta=RequestMeta(purpose=Purpose.SUMMARY),
        task=SummaryTask("User: We picked Redis."),
    )
    with Memoir.open(settings) as memoir:
        service.model(memoir).complete(request)
        service.model(memoir).complete(request)
        remote = Metered(
            ScriptedModel(["ok", Refused("no")], name="openai:gpt-x"), memoir.store.usage
        )
        remote.complete(request)
        with pytest.raises(Refused):
            remote.complete(request)
        memoir.store.usage.record(
            UsageRecord(
                at=datetime(2025, 12, 31, 12, tzinfo=UTC),
                provider="anthropic",
                model="claude-x",
                purpose="merge",
                outcome="Truncated",
                input_tokens=1000,
                output_tokens=2400,
                latency_ms=5.0,
            )
        )


def test_usage_json_lists_calls_by_day_and_model(home: Path) -> None:
    _fill(home)
    out = run(["usage", "--json"], home)
    assert out.returncode == 0, out.stderr
    data = json.loads(out.stdout)
    today = datetime.now(UTC).date().isoformat()
    rows = {(r["day"], r["model"]): r for r in data["totals"]}
    assert set(rows) == {
        ("2025-12-31", "anthropic:claude-x"),
        (today, "offline"),
        (today, "openai:gpt-x"),
    }
    assert rows[(today, "offline")]["calls"] == 2 and rows[(today, "offline")]["ok"] == 2
    assert rows[(today, "openai:gpt-x")]["failed"] == 1
    assert rows[("2025-12-31", "anthropic:claude-x")]["output_tokens"] == 2400
    assert data["calls"] == 5
    assert [r["day"] for r in data["totals"]] == sorted(r["day"] for r in data["totals"])


def test_usage_table_and_days_filter(home: Path) -> None:
    _fill(home)
    out = run(["usage"], home)
    assert out.returncode == 0, out.stderr
    assert "openai:gpt-x" in out.stdout and "total" in out.stdout
    recent = json.loads(run(["usage", "--json", "--days", "1"], home).stdout)
    assert {r["model"] for r in recent["totals"]} == {"offline", "openai:gpt-x"}


def test_usage_when_empty(home: Path) -> None:
    out = run(["usage"], home)
    assert out.returncode == 0, out.stderr
    assert "No model calls recorded yet." in out.stdout
    assert json.loads(run(["usage", "--json"], home).stdout)["totals"] == []
    assert not (home / "memoir.db").exists()  # asking made no archive
