"""The settings of memory from sync: MEMOIR_MEMORY_FROM_SYNC, MEMOIR_MEMORY_LIMIT, and the
switch `memoir memories off` stores in the home (the environment outranks it)."""

from __future__ import annotations

from pathlib import Path

import pytest

from memoir import Memoir, service
from memoir.config import MEMORY_SYNC_OFF, Settings
from memoir.errors import ConfigError


@pytest.mark.parametrize(
    ("raw", "value", "source"),
    [
        (None, True, "default"),
        ("off", False, "env MEMOIR_MEMORY_FROM_SYNC"),
        ("0", False, "env MEMOIR_MEMORY_FROM_SYNC"),
        ("No", False, "env MEMOIR_MEMORY_FROM_SYNC"),
        ("false", False, "env MEMOIR_MEMORY_FROM_SYNC"),
        ("on", True, "env MEMOIR_MEMORY_FROM_SYNC"),
        ("YES", True, "env MEMOIR_MEMORY_FROM_SYNC"),
        ("1", True, "env MEMOIR_MEMORY_FROM_SYNC"),
        ("maybe", True, "default (MEMOIR_MEMORY_FROM_SYNC='maybe' ignored)"),
        ("  ", True, "default"),
    ],
)
def test_memory_from_sync_from_the_environment(
    tmp_path: Path, raw: str | None, value: bool, source: str
) -> None:
    env = {"MEMOIR_HOME": str(tmp_path)}
    if raw is not None:
        env["MEMOIR_MEMORY_FROM_SYNC"] = raw
    settings = Settings.from_env(env)
    assert (settings.memory_from_sync, settings.origins["memory_from_sync"]) == (value, source)


@pytest.mark.parametrize(
    ("raw", "value", "source"),
    [
        (None, 10, "default"),
        ("0", 0, "env MEMOIR_MEMORY_LIMIT"),
        ("25", 25, "env MEMOIR_MEMORY_LIMIT"),
        ("-1", 10, "default (MEMOIR_MEMORY_LIMIT='-1' ignored)"),
        ("lots", 10, "default (MEMOIR_MEMORY_LIMIT='lots' ignored)"),
    ],
)
def test_memory_limit_from_the_environment(
    tmp_path: Path, raw: str | None, value: int, source: str
) -> None:
    env = {"MEMOIR_HOME": str(tmp_path)}
    if raw is not None:
        env["MEMOIR_MEMORY_LIMIT"] = raw
    settings = Settings.from_env(env)
    assert (settings.memory_limit, settings.origins["memory_limit"]) == (value, source)


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        ({"memory_limit": -1}, "memory_limit must be a whole number of at least 0"),
        ({"memory_limit": True}, "memory_limit must be a whole number of at least 0"),
        ({"memory_from_sync": "off"}, "memory_from_sync must be True or False"),
    ],
)
def test_settings_in_code_are_checked(tmp_path: Path, fields: dict, message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        Settings(home=tmp_path, **fields)


@pytest.mark.parametrize(
    ("env", "stored", "expected"),
    [
        ({}, False, (True, "default")),
        ({}, True, (False, "stored by `memoir memories off`")),
        ({"MEMOIR_MEMORY_FROM_SYNC": "on"}, True, (True, "env MEMOIR_MEMORY_FROM_SYNC")),
        ({"MEMOIR_MEMORY_FROM_SYNC": "off"}, False, (False, "env MEMOIR_MEMORY_FROM_SYNC")),
    ],
)
def test_the_stored_switch_and_the_environment(
    tmp_path: Path, env: dict[str, str], stored: bool, expected: tuple[bool, str]
) -> None:
    if stored:
        (tmp_path / MEMORY_SYNC_OFF).write_text("off\n")
    settings = Settings.from_env({"MEMOIR_HOME": str(tmp_path), **env})
    assert (settings.memory_from_sync, settings.origins["memory_from_sync"]) == expected
    with Memoir(settings, _store(tmp_path)) as m:
        assert service.memory_from_sync(m) == expected


def test_switching_in_one_process_is_seen_at_once(tmp_path: Path) -> None:
    with Memoir.at(tmp_path / "home", sources=(), embedder="none") as m:
        assert service.memory_from_sync(m) == (True, "default")
        assert service.set_memory_from_sync(m, False) == (False, "stored by `memoir memories off`")
        assert (tmp_path / "home" / MEMORY_SYNC_OFF).stat().st_mode & 0o077 == 0  # private
        report = service.remember_from_sync(m)
        assert (report.off, report.mined) == ("stored by `memoir memories off`", 0)
        assert service.set_memory_from_sync(m, True) == (True, "default")
        assert not (tmp_path / "home" / MEMORY_SYNC_OFF).exists()
        assert service.remember_from_sync(m).off == ""


def _store(home: Path):  # type: ignore[no-untyped-def]
    from memoir.store.sqlite_store import SQLiteStore

    return SQLiteStore(home / "memoir.db")
