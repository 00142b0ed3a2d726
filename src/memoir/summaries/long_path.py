"""The pass's path for conversations beyond one request: :func:`summarize_session` in
``auto`` mode with the episodic summarizer — a first summary episode by episode, a refresh
merged incrementally into the previous summary (rounds when the new part is itself long).
"""

from __future__ import annotations

from collections.abc import Sequence

from memoir.errors import SummaryError
from memoir.llm.port import Model
from memoir.model import Event
from memoir.store.port import Store
from memoir.summaries.episodic.cache import CACHE_TTL_S, EpisodeCache
from memoir.summaries.port import SummaryStore
from memoir.summaries.session import (
    EpisodeSettings,
    RunMode,
    episodic_summarizer,
    summarize_session,
)
from memoir.summaries.state import SUMMARY_FORMAT, SummaryState
from memoir.summaries.summarizer import LongPath, SummaryText, clean_summary

__all__ = ["episode_cache_ttl_s", "session_long_path"]


def session_long_path(
    store: Store,
    summaries: SummaryStore,
    session_id: str,
    state: SummaryState,
    model: Model,
    fallback: Model | None,
    cache: EpisodeCache | None,
    episodes: EpisodeSettings,
) -> LongPath:
    """The long path for one conversation of the pass (which holds its summary claim):
    ``state`` is its summary as the pass found it; ``episodes`` the pass's episode
    settings (their cache TTL from :func:`episode_cache_ttl_s`)."""

    # a summary of an older format is written afresh, never merged into
    outdated = state.format < SUMMARY_FORMAT
    mode: RunMode = "full" if outdated else "auto"

    def run(events: Sequence[Event]) -> SummaryText:
        # it retries itself, inside its attempt budget, as `memoir summarize` does
        summarizer = episodic_summarizer(model, fallback, cache, episodes)
        # the summary pass already holds this session's summary claim
        run = summarize_session(
            store, summaries, session_id, mode=mode, summarizer=summarizer, claim=False
        )
        if run.summary is None:  # the growth held no new event: keep the body, restamp
            if state.has_body:
                return SummaryText(state.body.strip(), state.model or "unchanged", 0)
            raise SummaryError("the episodic summarizer found nothing to summarize")
        body = clean_summary(run.summary.text)
        if not body:
            raise SummaryError("the episodic summarizer produced an empty summary")
        return SummaryText(body, run.summary.model, run.calls)

    return run


def episode_cache_ttl_s(retry_floor_hours: float) -> float:
    """How long the summary pass keeps finished episodes: past the retry floor (when a
    failed long summary is tried again) by an hour, and never less than an hour. Finished
    episodes must outlive the floor, or the sync that retries a failed long summary (not
    before the floor) finds none of them and redoes them all."""
    return max(CACHE_TTL_S, (retry_floor_hours + 1.0) * 3600.0)
