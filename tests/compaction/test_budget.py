"""The numbers: threshold, output budget, per-message cap, ladder."""

from __future__ import annotations

import pytest

from memoir.compaction import (
    LADDER,
    MESSAGE_CAP_FLOOR,
    Budget,
    ladder_after,
    message_cap,
    output_budget,
    threshold_for,
)
from memoir.compaction.request import ladder_step
from memoir.errors import CompactionError
from memoir.llm.port import OutputBudgetRejected, Transient, Truncated


@pytest.mark.parametrize(
    ("window", "ratio", "threshold"),
    [
        (32_000, 0.75, 24_000),
        (128_000, 0.75, 96_000),
        (200_000, 0.75, 150_000),
        (32_000, 0.5, 16_000),
        (10, 1.0, 10),
        (1, 0.1, 1),
    ],
)
def test_threshold(window: int, ratio: float, threshold: int) -> None:
    assert threshold_for(window, ratio) == threshold


@pytest.mark.parametrize(("window", "ratio"), [(0, 0.75), (-5, 0.75), (1000, 0.0), (1000, 1.5)])
def test_threshold_rejects_nonsense(window: int, ratio: float) -> None:
    with pytest.raises(CompactionError):
        threshold_for(window, ratio)


# the seed's table: window, threshold, summary output
@pytest.mark.parametrize(
    ("threshold", "budget"),
    [
        (24_000, 6000),
        (96_000, 8192),
        (150_000, 8192),
        (1000, 256),
        (0, 256),
        (1024, 256),
        (1028, 257),
        (32_768, 8192),
        (32_764, 8191),
    ],
)
def test_output_budget_is_clamped(threshold: int, budget: int) -> None:
    assert output_budget(threshold) == budget


@pytest.mark.parametrize(
    ("threshold", "cap"),
    [(24_000, 6000), (8192, 2048), (8188, 2048), (1000, 2048), (600_000, 150_000), (8196, 2049)],
)
def test_message_cap_has_a_floor_and_no_ceiling(threshold: int, cap: int) -> None:
    assert message_cap(threshold) == cap
    assert MESSAGE_CAP_FLOOR == 2048


@pytest.mark.parametrize(
    ("rejected", "next_budget"),
    [
        (8192, 4096),
        (6000, 4096),
        (4096, 2048),
        (3000, 2048),
        (2048, 1024),
        (1024, 256),
        (500, 256),
        (256, None),
        (100, None),
    ],
)
def test_ladder_only_steps_down(rejected: int, next_budget: int | None) -> None:
    assert ladder_after(rejected) == next_budget
    assert LADDER == (4096, 2048, 1024, 256)


@pytest.mark.parametrize(
    ("error", "budget", "step"),
    [
        (OutputBudgetRejected("x"), 6000, 4096),
        (OutputBudgetRejected("x"), 256, None),
        (Transient("x"), 6000, None),
        (Truncated("x"), 6000, None),
        (None, 6000, None),
    ],
)
def test_ladder_step_decision(error: BaseException | None, budget: int, step: int | None) -> None:
    assert ladder_step(error, budget) == step


def test_budget_of_records_source_and_tail() -> None:
    b = Budget.of(32_000, 0.8, "env MEMOIR_COMPACT_THRESHOLD_RATIO")
    assert (b.threshold, b.output_budget, b.message_cap, b.tail_budget) == (
        25_600,
        6400,
        6400,
        12_800,  # issue 26: half the threshold by default (a quarter before)
    )
    assert b.ratio_source == "env MEMOIR_COMPACT_THRESHOLD_RATIO"
    assert Budget.of(1000, tail_budget=5000).tail_budget == 749  # always below the threshold


@pytest.mark.parametrize(
    ("window", "tail_ratio", "tail_budget", "tail"),
    [
        (32_000, 0.5, None, 12_000),
        (32_000, 0.4, None, 9_600),
        (32_000, 0.0, None, 0),
        (8_000, 0.5, None, 3_000),
        (128_000, 0.5, None, 48_000),
        (32_000, 0.4, 500, 500),  # tokens given outright win over the ratio
    ],
)
def test_tail_budget_is_a_share_of_the_threshold(
    window: int, tail_ratio: float, tail_budget: int | None, tail: int
) -> None:
    assert Budget.of(window, tail_budget=tail_budget, tail_ratio=tail_ratio).tail_budget == tail


@pytest.mark.parametrize("tail_ratio", [-0.1, 1.0, 2.0])
def test_tail_ratio_out_of_range_is_refused(tail_ratio: float) -> None:
    with pytest.raises(CompactionError, match="tail ratio"):
        Budget.of(32_000, tail_ratio=tail_ratio)


@pytest.mark.parametrize(
    ("env", "ratio", "origin"),
    [
        ({}, 0.5, "default"),
        ({"MEMOIR_COMPACT_TAIL_RATIO": "0.4"}, 0.4, "env MEMOIR_COMPACT_TAIL_RATIO"),
        ({"MEMOIR_COMPACT_TAIL_RATIO": "0.9"}, 0.5, "default (invalid value ignored)"),
        (
            {"MEMOIR_COMPACT_TAIL_RATIO": "x"},
            0.5,
            "default (MEMOIR_COMPACT_TAIL_RATIO='x' ignored)",
        ),
    ],
)
def test_tail_ratio_setting(env: dict[str, str], ratio: float, origin: str) -> None:
    from memoir.compaction import Compactor
    from memoir.config import Settings

    settings = Settings.from_env(env)
    assert settings.compact_tail_ratio == ratio
    assert settings.origins["compact_tail_ratio"] == origin
    compactor = Compactor.from_settings(settings, None)
    assert compactor.budget(32_000).tail_budget == int(24_000 * ratio)
