"""The summary settings: env names, episodic-memory aliases, bad values, hours → ms."""

from __future__ import annotations

import logging

import pytest

from memoir.config import MS_PER_HOUR, Settings, hours_to_ms
from memoir.summaries.state import SummaryPolicy

Q = "MEMOIR_SUMMARY_QUIESCENCE_HOURS"
R = "MEMOIR_SUMMARY_ERROR_RETRY_HOURS"
M = "MEMOIR_SUMMARY_MAX_ATTEMPTS"


def test_defaults() -> None:
    s = Settings.from_env({})
    assert (s.summary_quiescence_hours, s.summary_error_retry_hours) == (1.0, 1.0)
    assert (s.summary_max_attempts, s.summary_limit, s.summary_store) == (5, 10, "files")
    assert SummaryPolicy.from_settings(s) == SummaryPolicy(3_600_000, 3_600_000, 5)


@pytest.mark.parametrize(
    ("env", "field", "value"),
    [
        ({Q: "2"}, "summary_quiescence_hours", 2.0),
        ({Q: "0.25"}, "summary_quiescence_hours", 0.25),
        ({Q: "0"}, "summary_quiescence_hours", 0.0),
        ({"EPISODIC_MEMORY_SUMMARY_QUIESCENCE_HOURS": "3"}, "summary_quiescence_hours", 3.0),
        (
            {Q: "2", "EPISODIC_MEMORY_SUMMARY_QUIESCENCE_HOURS": "3"},
            "summary_quiescence_hours",
            2.0,
        ),
        ({R: "1.5"}, "summary_error_retry_hours", 1.5),
        ({"EPISODIC_MEMORY_SUMMARY_ERROR_RETRY_HOURS": "4"}, "summary_error_retry_hours", 4.0),
        ({M: "3"}, "summary_max_attempts", 3),
        ({"EPISODIC_MEMORY_SUMMARY_MAX_ATTEMPTS": "7"}, "summary_max_attempts", 7),
        ({"MEMOIR_SUMMARY_LIMIT": "25"}, "summary_limit", 25),
        ({"MEMOIR_SUMMARY_STORE": "database"}, "summary_store", "database"),
    ],
)
def test_values_and_aliases(env: dict[str, str], field: str, value: object) -> None:
    s = Settings.from_env(env)
    assert getattr(s, field) == value
    assert s.origins[field].startswith("env ")


@pytest.mark.parametrize(
    ("key", "raw", "field", "default"),
    [
        (Q, "-1", "summary_quiescence_hours", 1.0),
        (Q, "soon", "summary_quiescence_hours", 1.0),
        (Q, "nan", "summary_quiescence_hours", 1.0),
        (Q, "inf", "summary_quiescence_hours", 1.0),
        (R, "-0.5", "summary_error_retry_hours", 1.0),
        ("EPISODIC_MEMORY_SUMMARY_ERROR_RETRY_HOURS", "x", "summary_error_retry_hours", 1.0),
        (M, "0", "summary_max_attempts", 5),
        (M, "-3", "summary_max_attempts", 5),
        (M, "2.5", "summary_max_attempts", 5),
        ("MEMOIR_SUMMARY_LIMIT", "lots", "summary_limit", 10),
    ],
)
def test_bad_values_fall_back_with_a_warning(
    caplog: pytest.LogCaptureFixture, key: str, raw: str, field: str, default: object
) -> None:
    with caplog.at_level(logging.WARNING, logger="memoir.config"):
        s = Settings.from_env({key: raw})
    assert getattr(s, field) == default
    assert key in caplog.text
    assert "ignored" in s.origins[field]


@pytest.mark.parametrize(
    ("hours", "ms"), [(1, 3_600_000), (0.5, 1_800_000), (0, 0), (1 / 3600, 1000), (24, 86_400_000)]
)
def test_hours_to_ms_is_the_one_conversion(hours: float, ms: int) -> None:
    assert MS_PER_HOUR == 3_600_000
    assert hours_to_ms(hours) == ms


def test_fractional_hours_reach_the_policy_in_ms() -> None:
    s = Settings.from_env({Q: "0.5", R: "0.1"})
    policy = SummaryPolicy.from_settings(s)
    assert (policy.quiescence_ms, policy.retry_floor_ms) == (1_800_000, 360_000)
