from __future__ import annotations

import logging
from pathlib import Path

import pytest

from memoir import config
from memoir.config import MS_PER_HOUR, Settings, hours_to_ms
from memoir.errors import ConfigError


def test_defaults() -> None:
    s = Settings.from_env({})
    assert s.llm == "offline"
    assert s.summary_quiescence_hours == 1.0
    assert s.summary_error_retry_hours == 1.0
    assert s.summary_max_attempts == 5
    assert s.compact_threshold_ratio == 0.75
    assert s.origins["compact_threshold_ratio"] == "default"
    assert s.database_url is None


@pytest.mark.parametrize(
    ("env", "field", "expected", "origin"),
    [
        ({"MEMOIR_SUMMARY_QUIESCENCE_HOURS": "0.5"}, "summary_quiescence_hours", 0.5, "env"),
        (
            {"EPISODIC_MEMORY_SUMMARY_QUIESCENCE_HOURS": "2.25"},
            "summary_quiescence_hours",
            2.25,
            "env EPISODIC_MEMORY_SUMMARY_QUIESCENCE_HOURS",
        ),
        (
            {
                "MEMOIR_SUMMARY_ERROR_RETRY_HOURS": "3",
                "EPISODIC_MEMORY_SUMMARY_ERROR_RETRY_HOURS": "9",
            },
            "summary_error_retry_hours",
            3.0,
            "env MEMOIR_SUMMARY_ERROR_RETRY_HOURS",
        ),
        ({"MEMOIR_SUMMARY_QUIESCENCE_HOURS": "-1"}, "summary_quiescence_hours", 1.0, "default"),
        ({"MEMOIR_SUMMARY_QUIESCENCE_HOURS": "soon"}, "summary_quiescence_hours", 1.0, "default"),
        ({"MEMOIR_SUMMARY_QUIESCENCE_HOURS": "nan"}, "summary_quiescence_hours", 1.0, "default"),
        ({"MEMOIR_SUMMARY_QUIESCENCE_HOURS": "0"}, "summary_quiescence_hours", 0.0, "env"),
        ({"EPISODIC_MEMORY_SUMMARY_MAX_ATTEMPTS": "7"}, "summary_max_attempts", 7, "env"),
        ({"MEMOIR_SUMMARY_MAX_ATTEMPTS": "0"}, "summary_max_attempts", 5, "default"),
        ({"MEMOIR_SUMMARY_MAX_ATTEMPTS": "x"}, "summary_max_attempts", 5, "default"),
        ({"MEMOIR_COMPACT_THRESHOLD_RATIO": "0.5"}, "compact_threshold_ratio", 0.5, "env"),
        ({"MEMOIR_COMPACT_THRESHOLD_RATIO": "1.5"}, "compact_threshold_ratio", 0.75, "default"),
        ({"MEMOIR_SUMMARY_LIMIT": "0"}, "summary_limit", 0, "env"),  # index, summarize nothing
        ({"MEMOIR_SUMMARY_LIMIT": "-1"}, "summary_limit", 10, "default"),
        ({"MEMOIR_EPISODE_CONCURRENCY": "0"}, "episode_concurrency", 4, "default"),
        ({"MEMOIR_PG_POOL_SIZE": "20"}, "pg_pool_size", 20, "env"),
        ({"MEMOIR_PG_POOL_SIZE": "0"}, "pg_pool_size", 8, "default"),
        ({"MEMOIR_PG_POOL_TIMEOUT_S": "2.5"}, "pg_pool_timeout_s", 2.5, "env"),
        ({"MEMOIR_PG_POOL_TIMEOUT_S": "0"}, "pg_pool_timeout_s", 10.0, "default"),
        ({"MEMOIR_PG_POOL_TIMEOUT_S": "-3"}, "pg_pool_timeout_s", 10.0, "default"),
        ({"MEMOIR_PG_STATEMENT_TIMEOUT_S": "5"}, "pg_statement_timeout_s", 5.0, "env"),
        ({"MEMOIR_PG_STATEMENT_TIMEOUT_S": "0"}, "pg_statement_timeout_s", 0.0, "env"),  # none
        ({"MEMOIR_PG_STATEMENT_TIMEOUT_S": "x"}, "pg_statement_timeout_s", 30.0, "default"),
    ],
)
def test_numeric_settings(
    env: dict[str, str],
    field: str,
    expected: float,
    origin: str,
    caplog: pytest.LogCaptureFixture,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(config, "_warned", set())
    with caplog.at_level(logging.WARNING):
        s = Settings.from_env(env)
    assert getattr(s, field) == expected
    assert s.origins[field].startswith(origin)
    if origin == "default":
        assert caplog.records, "an ignored value must warn"


def test_hours_to_ms_is_the_one_conversion() -> None:
    assert MS_PER_HOUR == 3_600_000
    assert hours_to_ms(1) == 3_600_000
    assert hours_to_ms(0.25) == 900_000


def test_api_key_fallback_by_provider() -> None:
    s = Settings.from_env({"MEMOIR_LLM": "openai:gpt-4o-mini", "OPENAI_API_KEY": "sk-abc"})
    assert s.llm_api_key == "sk-abc"
    assert s.origins["llm_api_key"] == "env OPENAI_API_KEY"
    s = Settings.from_env({"MEMOIR_LLM": "anthropic:claude", "OPENAI_API_KEY": "sk-abc"})
    assert s.llm_api_key is None
    s = Settings.from_env(
        {"MEMOIR_LLM": "anthropic:claude", "ANTHROPIC_API_KEY": "a", "MEMOIR_LLM_API_KEY": "b"}
    )
    assert s.llm_api_key == "b"


def test_sources_split_on_pathsep(tmp_path: Path) -> None:
    import os

    raw = os.pathsep.join([str(tmp_path / "a"), str(tmp_path / "b")])
    s = Settings.from_env({"MEMOIR_SOURCES": raw})
    assert s.sources == (tmp_path / "a", tmp_path / "b")


def test_overrides_win_and_unknown_rejected(tmp_path: Path) -> None:
    s = Settings.from_env({"MEMOIR_HOME": "/nope"}, home=tmp_path)
    assert s.home == tmp_path and s.origins["home"] == "argument"
    with pytest.raises(ConfigError):
        Settings.from_env({}, not_a_setting=1)
    with pytest.raises(ConfigError, match="MEMOIR_SUMMARY_STORE"):
        Settings.from_env({"MEMOIR_SUMMARY_STORE": "cloud"})


def test_describe_masks_secrets() -> None:
    s = Settings.from_env(
        {
            "MEMOIR_LLM_API_KEY": "sk-verysecretvalue",
            "MEMOIR_DATABASE_URL": "postgresql://bob:hunter2@db:5432/m",
        }
    )
    shown = {name: value for name, value, _ in s.describe()}
    assert "verysecret" not in shown["llm_api_key"]
    assert "hunter2" not in shown["database_url"] and "bob" in shown["database_url"]


@pytest.mark.parametrize(
    ("url", "shown"),
    [
        (
            "postgresql://memoir:hunter2@127.0.0.1:5432/db",
            "postgresql://memoir:***@127.0.0.1:5432/db",
        ),
        ("postgresql://memoir@127.0.0.1/db", "postgresql://memoir@127.0.0.1/db"),  # none to hide
        ("postgresql://u:p@ss@host/db", "postgresql://u:***@host/db"),
        ("postgresql://127.0.0.1/db", "postgresql://127.0.0.1/db"),
        ("memoir.db", "memoir.db"),
        (
            "postgresql://nobody@127.0.0.1/big?password=hunter2",  # libpq's other form
            "postgresql://nobody@127.0.0.1/big?password=***",
        ),
        (
            "postgresql://h/db?sslmode=require&PASSWORD=x&application_name=m",
            "postgresql://h/db?sslmode=require&PASSWORD=***&application_name=m",
        ),
        ("postgresql://h/db?passwordless=1", "postgresql://h/db?passwordless=1"),
    ],
)
def test_mask_url_hides_a_password_and_invents_none(url: str, shown: str) -> None:
    from memoir.config import mask_url

    assert mask_url(url) == shown


def test_a_home_that_cannot_be_one_is_a_clear_error(tmp_path: Path) -> None:
    from memoir.errors import ConfigError

    afile = tmp_path / "a-file"
    afile.write_text("x")
    with pytest.raises(ConfigError, match=r"^MEMOIR_HOME .*a-file is a file, not a folder$"):
        Settings.from_env({"MEMOIR_HOME": str(afile)}).ensure_home()
    with pytest.raises(ConfigError, match=r"^MEMOIR_HOME .* cannot be created: "):
        Settings.from_env({"MEMOIR_HOME": str(afile / "below")}).ensure_home()
    fine = Settings.from_env({"MEMOIR_HOME": str(tmp_path / "new" / "home")})
    assert fine.ensure_home().is_dir()


def test_config_says_job_admission_is_in_process_without_redis() -> None:
    rows = {name: origin for name, _, origin in Settings.from_env({}).describe()}
    assert "in-process" in rows["redis_url"]
    set_rows = Settings.from_env({"MEMOIR_REDIS_URL": "redis://h:1/0"}).describe()
    origin = next(o for n, _, o in set_rows if n == "redis_url")
    assert origin == "env MEMOIR_REDIS_URL"


def test_job_intervals_are_read_and_checked() -> None:
    s = Settings.from_env(
        {
            "MEMOIR_JOB_HEARTBEAT_S": "0.5",
            "MEMOIR_JOB_ABORT_S": "3",
            "MEMOIR_JOB_CLAIM_S": "4",
            "MEMOIR_JOB_ABANDON_S": "5",
        }
    )
    assert (s.job_heartbeat_s, s.job_abort_s, s.job_claim_s, s.job_abandon_s) == (0.5, 3, 4, 5)
    defaults = Settings.from_env({})
    assert (defaults.job_heartbeat_s, defaults.job_abort_s) == (10.0, 600.0)
    assert (defaults.job_claim_s, defaults.job_abandon_s) == (900.0, 930.0)
    with pytest.raises(ConfigError, match="a claim expires before its job is abandoned"):
        Settings.from_env({"MEMOIR_JOB_CLAIM_S": "1000"})  # past the abandonment
    with pytest.raises(ConfigError, match="job_abort_s"):
        Settings.from_env({"MEMOIR_JOB_ABORT_S": "901"})  # after the claim expired
    with pytest.raises(ConfigError, match="job_heartbeat_s must be a number"):
        Settings.from_env({"MEMOIR_JOB_HEARTBEAT_S": "0"})
    with pytest.raises(ConfigError, match="job_heartbeat_s"):
        Settings(job_heartbeat_s=931.0)


def test_memoir_at_reads_a_home_under_the_users_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from memoir.app import Memoir

    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.chdir(tmp_path)
    with Memoir.at("~/.memoir-test") as m:
        assert m.settings.home == tmp_path / ".memoir-test"
    assert (tmp_path / ".memoir-test" / "memoir.db").exists()
    assert not (tmp_path / "~").exists()  # not a folder literally named "~"


def test_an_ignored_value_warns_once_per_process(
    caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(config, "_warned", set())
    with caplog.at_level(logging.WARNING):
        for _ in range(3):  # a sync reads its settings three times
            assert Settings.from_env({"MEMOIR_SUMMARY_LIMIT": "lots"}).summary_limit == 10
    assert [r.getMessage() for r in caplog.records] == [
        "MEMOIR_SUMMARY_LIMIT='lots' is not an integer of at least 0; using the default 10"
    ]


def test_a_string_of_sources_is_one_folder_not_its_characters(tmp_path: Path) -> None:
    folder = tmp_path / "chats"
    assert Settings(home=tmp_path, sources=str(folder)).sources == (folder,)  # type: ignore[arg-type]
    assert Settings(home=tmp_path, sources=folder).sources == (folder,)  # type: ignore[arg-type]
    both = Settings.from_env({}, home=tmp_path, sources=[str(folder), folder / "b"])
    assert both.sources == (folder, folder / "b")
    assert Settings(home=tmp_path, sources=iter([folder])).sources == (folder,)  # type: ignore[arg-type]


def test_relative_paths_are_made_absolute(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    s = Settings.from_env({"MEMOIR_HOME": "rel-home", "MEMOIR_SOURCES": "src"})
    assert (s.home, s.sources) == (tmp_path / "rel-home", (tmp_path / "src",))
    monkeypatch.chdir("/")  # a thread that opens the database later finds the same file
    assert s.sqlite_path == tmp_path / "rel-home" / "memoir.db"


@pytest.mark.parametrize(
    ("override", "says"),
    [
        ({"sources": 3}, "sources must be a path or a list of paths"),
        ({"sources": [None]}, "sources must be a path or a list of paths"),
        ({"home": None}, "home must be a path"),
        ({"summary_store": "db"}, "summary_store must be 'files' or 'database'"),
        ({"summary_limit": -1}, "summary_limit must be a whole number of at least 0"),
        ({"episode_concurrency": 0}, "episode_concurrency must be a whole number of at least 1"),
        ({"llm_retry_budget": True}, "llm_retry_budget must be a whole number"),
        ({"summary_quiescence_hours": -1.0}, "summary_quiescence_hours must be a number"),
        ({"compact_threshold_ratio": 5}, r"compact_threshold_ratio must be in \(0, 1\]"),
        ({"compact_threshold_ratio": "0.5"}, r"compact_threshold_ratio must be in \(0, 1\]"),
        ({"exclude_projects": "secret"}, "exclude_projects must be a tuple of project names"),
        ({"pg_pool_size": 0}, "pg_pool_size must be a whole number of at least 1"),
        ({"pg_pool_timeout_s": 0}, "pg_pool_timeout_s must be seconds above 0"),
        ({"pg_statement_timeout_s": -1}, "pg_statement_timeout_s must be a number of 0 or more"),
    ],
)
def test_settings_made_in_code_are_checked_like_the_environment(
    tmp_path: Path, override: dict[str, object], says: str
) -> None:
    with pytest.raises(ConfigError, match=says):
        Settings.from_env({"MEMOIR_HOME": str(tmp_path)}, **override)


def test_summary_limit_zero_is_allowed_in_code(tmp_path: Path) -> None:
    assert Settings(home=tmp_path, summary_limit=0).summary_limit == 0
