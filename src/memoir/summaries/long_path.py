"""The pass's path for conversations beyond one request: the episodes package's
``summarize_session`` in ``auto`` mode — a first summary episode by episode, a refresh
merged incrementally into the previous summary (rounds when the new part is itself long).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from memoir.episodes.cache import CACHE_TTL_S
from memoir.errors import SummaryError
from memoir.llm.port import Model
from memoir.model import Event
from memoir.summaries.state import SummaryState
from memoir.summaries.summarizer import LongPath, SummaryText, clean_summary

if TYPE_CHECKING:
    from memoir.app import Memoir

__all__ = ["episode_cache_ttl_s", "session_long_path"]


def _unretried(model: Model) -> Model:
    try:
        from memoir.llm.retry import Retrying
    except ImportError:
        return model
    inner = model.inner if isinstance(model, Retrying) else model
    return inner if isinstance(inner, Model) else model


def session_long_path(
    memoir: Memoir,
    session_id: str,
    state: SummaryState,
    model: Model,
    fallback: Model | None,
    cache: Any,
) -> LongPath:
    def run(events: Sequence[Event]) -> SummaryText:
        from memoir.episodes import EpisodicSummarizer
        from memoir.episodes.session import summarize_session

        settings = memoir.settings
        summarizer = EpisodicSummarizer(  # it retries itself, inside its attempt budget
            _unretried(model),
            fallback=_unretried(fallback) if fallback is not None else None,
            cache=cache,
            concurrency=settings.episode_concurrency,
            attempt_budget=settings.episode_attempt_budget,
            episode_tokens=settings.episode_tokens,
            max_full_tokens=settings.episode_max_full_tokens,
            retries=max(0, settings.llm_retry_budget - 1),  # as `memoir summarize` does
            # finished episodes must outlive the retry floor, or the sync that retries a
            # failed long summary (not before the floor) finds none of them and redoes all
            cache_ttl_s=episode_cache_ttl_s(settings.summary_error_retry_hours),
        )
        # the summary pass already holds this session's summary claim
        run = summarize_session(memoir, session_id, mode="auto", summarizer=summarizer, claim=False)
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
    failed long summary is tried again) by an hour, and never less than an hour."""
    return max(CACHE_TTL_S, (retry_floor_hours + 1.0) * 3600.0)
