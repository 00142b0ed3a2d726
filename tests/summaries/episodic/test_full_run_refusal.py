"""Why a full regeneration is refused: the message names the limit actually passed (the
token guard, the fixed episode cap, or both) and what to do instead."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from memoir import service
from memoir.app import Memoir
from memoir.config import Settings
from memoir.errors import OversizedHistory
from memoir.model import Harness, Session
from memoir.store.values import IngestBatch
from memoir.summaries.episodes import full_run_refusal, run_scope
from memoir.summaries.session import EpisodeSettings, check_full_regeneration

from .episode_helpers import marked_history

GUARD = "beyond the full-regeneration guard of "
CAP = "more than the 24 episodes a full regeneration takes at most"
INCREMENTAL = "use incremental compression instead (--incremental)"


@pytest.mark.parametrize(
    ("tokens", "episodes", "max_tokens", "episode_tokens", "says", "not_said"),
    [
        (1_000, 4, 200_000, 10_000, None, ()),  # within both
        (200_000, 24, 200_000, 10_000, None, ()),  # at both limits: still within
        (
            200_001,
            21,
            200_000,
            10_000,
            (f"{GUARD}200,000 tokens (MEMOIR_EPISODE_MAX_FULL_TOKENS)", INCREMENTAL),
            (CAP, "MEMOIR_EPISODE_TOKENS="),
        ),
        (
            418_857,
            210,
            10_000_000,
            2_000,
            (
                "418,857 tokens in 210 episodes, " + CAP,
                "a fixed cap; the tokens are within MEMOIR_EPISODE_MAX_FULL_TOKENS=10,000,000",
                INCREMENTAL,
                "MEMOIR_EPISODE_TOKENS=20,000 (now 2,000)",
            ),
            (GUARD,),
        ),
        (
            30_000,
            25,
            200_000,
            1_200,
            (CAP, "MEMOIR_EPISODE_TOKENS=2,200 (now 1,200)"),  # more than the current size
            (GUARD,),
        ),
        (
            500_000,
            50,
            200_000,
            10_000,
            (f"{GUARD}200,000 tokens (MEMOIR_EPISODE_MAX_FULL_TOKENS) and {CAP}", INCREMENTAL),
            ("MEMOIR_EPISODE_TOKENS=",),  # larger episodes would not do
        ),
    ],
)
def test_full_run_refusal_table(
    tokens: int,
    episodes: int,
    max_tokens: int,
    episode_tokens: int,
    says: tuple[str, ...] | None,
    not_said: tuple[str, ...],
) -> None:
    why = full_run_refusal(
        tokens,
        episodes,
        max_tokens=max_tokens,
        max_episodes=24,
        episode_tokens=episode_tokens,
        incremental="--incremental",
    )
    sizes = [tokens // episodes] * (episodes - 1) + [tokens - tokens // episodes * (episodes - 1)]
    refused = run_scope(sizes, incremental=False, max_tokens=max_tokens, max_episodes=24) is None
    assert (why is not None) == refused  # refused exactly when run_scope refuses
    if says is None:
        assert why is None
        return
    assert why is not None
    for part in says:
        assert part in why
    for part in not_said:
        assert part not in why


def _memoir(tmp_path: Path, **env: str) -> Memoir:
    return Memoir.open(Settings.from_env({"MEMOIR_HOME": str(tmp_path / "h"), **env}, sources=()))


def _add(memoir: Memoir, turns: int) -> None:
    events = [dataclasses.replace(e, session_id="long-1") for e in marked_history(turns)]
    session = Session(id="long-1", project="p", harness=Harness.API, user="alice")
    memoir.store.ingest.apply(IngestBatch(session=session, events=tuple(events)))


def test_regenerate_names_the_episode_cap_not_the_token_guard(tmp_path: Path) -> None:
    env = {"MEMOIR_EPISODE_MAX_FULL_TOKENS": "10000000", "MEMOIR_EPISODE_TOKENS": "300"}
    with _memoir(tmp_path, **env) as memoir:
        _add(memoir, 30)  # one episode per turn at 300 tokens: 30 episodes
        with pytest.raises(OversizedHistory) as info:
            service.regenerate_summary(memoir, "alice", "long-1")
        reason = info.value.reason
        assert "in 30 episodes, more than the 24 episodes" in reason
        assert "the tokens are within MEMOIR_EPISODE_MAX_FULL_TOKENS=10,000,000" in reason
        assert "memoir summarize --incremental" in reason and "MEMOIR_EPISODE_TOKENS=" in reason
        assert GUARD not in reason
        assert memoir.store.jobs.find() == []


def test_the_suggested_episode_size_makes_the_regeneration_fit(tmp_path: Path) -> None:
    with _memoir(tmp_path, MEMOIR_EPISODE_MAX_FULL_TOKENS="10000000") as memoir:
        _add(memoir, 30)
        small = EpisodeSettings(episode_tokens=300, max_full_tokens=10_000_000)
        with pytest.raises(OversizedHistory) as info:
            check_full_regeneration(memoir.store, "long-1", small)
        suggested = info.value.reason.split("MEMOIR_EPISODE_TOKENS=")[1].split(" ")[0]
        larger = dataclasses.replace(small, episode_tokens=int(suggested.replace(",", "")))
        check_full_regeneration(memoir.store, "long-1", larger)  # no longer refused


def test_the_token_guard_is_still_named_when_it_is_passed(tmp_path: Path) -> None:
    with _memoir(tmp_path) as memoir:
        _add(memoir, 4)
        tight = EpisodeSettings(episode_tokens=300, max_full_tokens=400)
        with pytest.raises(OversizedHistory, match="incremental compression") as info:
            check_full_regeneration(memoir.store, "long-1", tight)
        assert f"{GUARD}400 tokens" in info.value.reason and CAP not in info.value.reason
