"""`memoir hook install / uninstall / status` on Claude Code's settings file."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from memoir.cli.app import main
from memoir.mcp import add_hook, hook_command, is_memoir_hook, remove_hook

OTHER = {"type": "command", "command": "echo other"}


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> dict:
    main([*argv, "--json"])
    return json.loads(capsys.readouterr().out)


def test_install_merges_keeps_others_and_is_idempotent(tmp_path: Path, capsys) -> None:
    path = tmp_path / "claude" / "settings.json"
    path.parent.mkdir()
    original = {
        "model": "opus",
        "hooks": {
            "SessionStart": [{"hooks": [OTHER]}],
            "Stop": [{"hooks": [{"type": "command", "command": "say done"}]}],
        },
    }
    path.write_text(json.dumps(original))
    first = run(capsys, "hook", "install", "--settings", str(path))
    assert first["changed"] is True
    assert first["command"].endswith(" sync --background >/dev/null 2>&1")
    data = json.loads(path.read_text())
    assert data["model"] == "opus"
    assert data["hooks"]["Stop"] == original["hooks"]["Stop"]
    groups = data["hooks"]["SessionStart"]
    assert groups[0] == {"hooks": [OTHER]}
    assert groups[1]["hooks"] == [{"type": "command", "command": first["command"]}]
    assert Path(first["command"].split(" ")[0]).is_absolute()

    second = run(capsys, "hook", "install", "--settings", str(path))
    assert second["changed"] is False
    assert json.loads(path.read_text()) == data
    assert run(capsys, "hook", "status", "--settings", str(path))["installed"] is True

    removed = run(capsys, "hook", "uninstall", "--settings", str(path))
    assert removed["removed"] == 1
    assert json.loads(path.read_text()) == original
    assert run(capsys, "hook", "status", "--settings", str(path))["installed"] is False


def test_install_creates_the_default_settings_file(tmp_path: Path, capsys) -> None:
    result = run(capsys, "hook", "install")  # HOME is a temp dir in tests
    path = Path(result["settings"])
    assert path == Path.home() / ".claude" / "settings.json"
    data = json.loads(path.read_text())
    assert data["hooks"]["SessionStart"][0]["matcher"] == "startup|resume"
    run(capsys, "hook", "uninstall")
    assert json.loads(path.read_text()) == {}


def test_install_through_a_symlink_keeps_the_link_and_the_mode(tmp_path: Path, capsys) -> None:
    real = tmp_path / "dotfiles" / "settings.json"
    real.parent.mkdir()
    real.write_text(json.dumps({"env": {"SOME_KEY": "secret"}}))
    real.chmod(0o600)
    link = tmp_path / "claude" / "settings.json"
    link.parent.mkdir()
    link.symlink_to(real)
    for verb in ("install", "uninstall"):
        run(capsys, "hook", verb, "--settings", str(link))
        assert link.is_symlink() and link.resolve() == real
        assert real.stat().st_mode & 0o777 == 0o600
    assert json.loads(real.read_text()) == {"env": {"SOME_KEY": "secret"}}
    assert not list(real.parent.glob(".*tmp")) and not list(link.parent.glob(".*tmp"))


def test_broken_settings_file_is_one_clear_error(tmp_path: Path, capsys) -> None:
    path = tmp_path / "settings.json"
    path.write_text("{ not json")
    with pytest.raises(SystemExit) as exit_info:
        main(["hook", "install", "--settings", str(path)])
    assert exit_info.value.code == 2
    err = capsys.readouterr().err
    assert "not valid JSON" in err and "Traceback" not in err
    assert path.read_text() == "{ not json"


def test_moved_executable_is_updated_in_place() -> None:
    settings = {
        "hooks": {
            "SessionStart": [
                {"hooks": [{"type": "command", "command": "/old/bin/memoir sync --background"}]}
            ]
        }
    }
    updated, changed = add_hook(settings, "/new/bin/memoir sync --background")
    assert changed
    entries = [e for g in updated["hooks"]["SessionStart"] for e in g["hooks"]]
    assert entries == [{"type": "command", "command": "/new/bin/memoir sync --background"}]


@pytest.mark.parametrize(
    ("command", "ours"),
    [
        ("/home/u/.venv/bin/memoir sync --background", True),
        ("'/path with space/memoir' sync --background", True),
        ("/usr/bin/python3 -m memoir.cli sync --background", True),
        ("episodic-memory sync --background", False),
        ("/bin/memoir sync", False),
        ("/bin/memoir sync --background >/dev/null 2>&1", True),
        ("/bin/memoir sync --background > /tmp/x", False),
        ("echo memoir", False),
    ],
)
def test_only_our_hook_is_recognised(command: str, ours: bool) -> None:
    assert is_memoir_hook({"type": "command", "command": command}) is ours


def test_uninstall_without_ours_changes_nothing() -> None:
    settings = {"hooks": {"SessionStart": [{"hooks": [OTHER]}]}}
    assert remove_hook(json.loads(json.dumps(settings))) == (settings, 0)


def test_hook_command_is_absolute() -> None:
    command = hook_command()
    assert command.endswith("sync --background >/dev/null 2>&1")
    assert command.startswith("/") or command.startswith("'/")


@pytest.mark.parametrize(
    ("command", "ours"),
    [
        ("MEMOIR_HOME=/srv/mem /bin/memoir sync --background >/dev/null 2>&1", True),
        ("MEMOIR_HOME='/a b' MEMOIR_SOURCES=/x:/y /bin/memoir sync --background", True),
    ],
)
def test_a_hook_with_pinned_settings_is_ours(command: str, ours: bool) -> None:
    assert is_memoir_hook({"type": "command", "command": command}) is ours


def test_install_pins_an_explicit_home_and_sources(
    tmp_path: Path, capsys, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The hook runs in Claude Code's environment, which may not carry the shell's
    MEMOIR_HOME: a home chosen for the install goes into the command itself."""
    home, src = tmp_path / "my home", tmp_path / "transcripts"
    monkeypatch.setenv("MEMOIR_HOME", str(home))
    monkeypatch.setenv("MEMOIR_SOURCES", str(src))
    monkeypatch.setenv("MEMOIR_DATABASE_URL", "postgresql://u:secret@h/db")
    path = tmp_path / "settings.json"
    command = run(capsys, "hook", "install", "--settings", str(path))["command"]
    assert command.startswith(f"MEMOIR_HOME='{home}' MEMOIR_SOURCES={src} /")
    assert "secret" not in command and "DATABASE" not in command
    assert run(capsys, "hook", "status", "--settings", str(path))["installed"] is True
    monkeypatch.delenv("MEMOIR_HOME")
    monkeypatch.delenv("MEMOIR_SOURCES")
    plain = run(capsys, "hook", "install", "--settings", str(path))
    assert plain["changed"] is True and plain["command"].startswith("/")  # updated in place
    entries = [e for g in json.loads(path.read_text())["hooks"]["SessionStart"] for e in g["hooks"]]
    assert entries == [{"type": "command", "command": plain["command"]}]
