"""`memoir users key local` through the real entry point: a key for the owner of the
synced sessions, printed alone on stdout; `users add local` is refused naming it; another
name must exist first."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import memoir.cli.cmd_admin  # noqa: F401  (registers the command)
from cli_run import run_cli
from memoir.app import Memoir
from memoir.config import Settings


@pytest.fixture(autouse=True)
def _home(home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MEMOIR_HOME", str(home))
    Memoir.open(Settings.from_env({"MEMOIR_HOME": str(home)}, sources=())).close()


def test_a_key_for_local_and_the_refusals(home: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run_cli(["users", "add", "local"], capsys)
    assert code != 0 and "memoir users key local" in err and "Traceback" not in err
    code, out, err = run_cli(["users", "key", "ghost"], capsys)
    assert code != 0 and "no user 'ghost'" in err and out == ""
    code, out, err = run_cli(["users", "key", "local", "--label", "laptop"], capsys)
    assert code == 0 and "shown once" in err
    key = out.strip()
    assert out == key + "\n" and key.startswith("mk_") and len(key) > 40
    code, out, _ = run_cli(["users", "list", "--json"], capsys)
    assert [(u["name"], u["keys"]) for u in json.loads(out)] == [("local", 1)]
    with Memoir.open(Settings.from_env({"MEMOIR_HOME": str(home)}, sources=())) as memoir:
        assert memoir.store.users.user_for(key) == "local"
    code, out, _ = run_cli(["users", "revoke", "local"], capsys)
    assert code == 0 and "Revoked 1 key(s) of local" in out
