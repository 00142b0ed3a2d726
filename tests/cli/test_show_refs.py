"""`memoir show SESSION:N` reads as exchange N of SESSION before it reads as a session
whose id happens to be ``SESSION:N``; such an older id stays reachable when it names no
exchange."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from cli_run import run_cli
from mcp_server.ambiguous_home import SQUATTER_TEXT, build_ambiguous_home


@pytest.fixture
def ambiguous(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    home = build_ambiguous_home(tmp_path / "home")
    monkeypatch.setenv("MEMOIR_HOME", str(home))
    monkeypatch.setenv("MEMOIR_USER", "alice")  # many and solo:7 are hers
    return home


def _show(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    return run_cli(["show", *args], capsys)


def test_an_exchange_id_wins_over_a_session_of_that_id(
    ambiguous: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, err = _show(capsys, "many:3", "--context", "0", "--json")
    assert code == 0, err
    data = json.loads(out)
    assert data["session"]["id"] == "many" and data["exchange"] == "many:3"
    assert [e["text"] for e in data["events"]] == ["question number 1", "answer number 1"]
    code, out, err = _show(capsys, "many:3")
    assert code == 0, err
    assert "exchange many:3" in out and SQUATTER_TEXT not in out


def test_an_older_id_with_a_colon_is_still_shown(
    ambiguous: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, err = _show(capsys, "solo:7", "--json")
    assert code == 0, err
    data = json.loads(out)
    assert data["session"]["id"] == "solo:7" and "exchange" not in data


@pytest.mark.parametrize(
    ("ref", "says"),
    [
        ("many:999", "no exchange 'many:999': session many has no exchange :999"),
        ("nosuch:3", "no session 'nosuch'"),
    ],
)
def test_a_missing_exchange_is_one_line(
    ambiguous: Path, capsys: pytest.CaptureFixture[str], ref: str, says: str
) -> None:
    code, _, err = _show(capsys, ref)
    assert code == 1 and says in err and "Traceback" not in err
