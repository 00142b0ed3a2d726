"""The remember-path bench (issue 36, point 3) as a test: it follows a real
``Memoir.remember`` and its counts agree with one another."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[2]


def _measured(*args: str) -> Any:
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src")}
    done = subprocess.run(
        [sys.executable, str(ROOT / "bench" / "remember_path.py"), "--json", *args],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
        check=True,
    )
    return json.loads(done.stdout)


@pytest.mark.postgres
def test_on_postgres_the_spine_is_the_same_six_modules() -> None:
    from conftest import fresh_pg_schema

    with fresh_pg_schema() as url:
        out = _measured("--database-url", url)
    assert out["outcome"] == "remembered" and out["items"] == 1
    assert set(out["to_store"]["entered"]) == {
        "memoir.app",
        "memoir.memory.memories",
        "memoir.memory.runner",
        "memoir.memory.lane_store",
        "memoir.store.db",
        "memoir.store.postgres_store",
    }


def test_remember_path_counts_the_modules_it_enters() -> None:
    out = _measured()
    assert out["outcome"] == "remembered" and out["items"] == 1
    entered = out["entered"]
    assert out["modules"] == len(entered)
    assert {"memoir.app", "memoir.memory.memories", "memoir.memory.runner"} <= set(entered)
    assert any(name.startswith("memoir.store.") for name in entered)
    # every call into another module returns to it once the call is done
    assert out["transitions"] == out["crossing_returns"] > out["modules"]
    # the spine to the store is a part of the path: the front door, the engine, the store
    spine = out["to_store"]
    assert spine["modules"] == len(spine["entered"]) < out["modules"]
    assert set(spine["entered"]) <= set(entered)
    assert {"memoir.app", "memoir.memory.runner"} <= set(spine["entered"])
    assert any(name.startswith("memoir.store.") for name in spine["entered"])
    assert not any(name.startswith("memoir.secrets") for name in spine["entered"])  # no SQL
    assert 0 < spine["transitions"] < out["transitions"]
    # issue 36: at most six modules from Memoir to the database and back. Everything the
    # engine reads and writes runs through the lane's module and the store's plumbing;
    # the SQL of the other parts is in plans (generators), off the stack while it runs,
    # and the model's usage is written after the call, not inside it
    assert set(spine["entered"]) == {
        "memoir.app",
        "memoir.memory.memories",
        "memoir.memory.runner",
        "memoir.memory.lane_store",
        "memoir.store.db",
        "memoir.store.sqlite_store",
    }
