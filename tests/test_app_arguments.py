"""The library's front door refuses bad arguments with MemoirError subclasses."""

from __future__ import annotations

from pathlib import Path

import pytest

from memoir import service
from memoir.app import Memoir
from memoir.errors import ConfigError
from memoir.llm import ScriptedModel
from memoir.summaries.episodic import EpisodicSummarizer


@pytest.mark.parametrize("limit", ["3", -5, 2.5, True])
def test_summarize_pending_limit_is_checked(tmp_path: Path, limit: object) -> None:
    with Memoir.at(tmp_path) as memoir, pytest.raises(ConfigError, match="limit must be"):
        service.summarize_pending(memoir, limit=limit)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("options", "says"),
    [({"batch": -3}, "batch"), ({"batch": 0}, "batch"), ({"max_items": -1}, "max_items")],
)
def test_embed_pending_sizes_are_checked(
    tmp_path: Path, options: dict[str, int], says: str
) -> None:
    with Memoir.at(tmp_path, embedder="hash") as memoir:
        with pytest.raises(ConfigError, match=f"{says} must be a whole number"):
            service.embed_pending(memoir, **options)
        assert service.embed_pending(memoir, max_items=0).embedded == 0  # zero is a size


def test_episode_settings_are_config_errors() -> None:
    with pytest.raises(ConfigError, match="must be positive"):
        EpisodicSummarizer(ScriptedModel(), concurrency=0)
    summarizer = EpisodicSummarizer(ScriptedModel(default="S."))
    with pytest.raises(ConfigError, match="mode must be 'full' or 'incremental'"):
        summarizer.summarize([], mode="fast")  # type: ignore[arg-type]


def test_a_home_that_is_not_a_path_is_a_config_error() -> None:
    with pytest.raises(ConfigError, match="home must be a path"):
        Memoir.at(None)  # type: ignore[arg-type]


def test_embed_is_one_at_a_time_per_database_not_only_per_home(tmp_path: Path) -> None:
    from memoir.errors import Busy

    shared = f"sqlite:///{tmp_path / 'shared.db'}"
    with (
        Memoir.at(tmp_path / "a", embedder="hash", database_url=shared) as a,
        Memoir.at(tmp_path / "b", embedder="hash", database_url=shared) as b,
    ):
        with a.store.claims.hold("embed", "a"), pytest.raises(Busy, match="another memoir embed"):
            service.embed_pending(b)
        assert service.embed_pending(b).complete
