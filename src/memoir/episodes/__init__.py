"""Long-history summarization: episodes, merge, truncation recovery, refusal fallback,
one attempt budget per run, and the episode cache.

::

    from memoir.episodes import EpisodicSummarizer, MemoryEpisodeCache

    summarizer = EpisodicSummarizer(model, fallback=fallback, cache=MemoryEpisodeCache())
    summary = summarizer.summarize(events, session="s1", progress=print)
    summary.text, summary.data, summary.model, summary.calls
"""

from memoir.episodes.cache import (
    CACHE_TTL_S,
    EpisodeCache,
    MemoryEpisodeCache,
    StoreEpisodeCache,
    cache_key,
)
from memoir.episodes.session import SessionRun, summarize_session
from memoir.episodes.shape import FACT_LISTS, parse_summary, render_summary
from memoir.episodes.summarizer import EpisodicSummarizer, EpisodicSummary, Progress

__all__ = [
    "CACHE_TTL_S",
    "FACT_LISTS",
    "EpisodeCache",
    "EpisodicSummarizer",
    "EpisodicSummary",
    "MemoryEpisodeCache",
    "Progress",
    "SessionRun",
    "StoreEpisodeCache",
    "cache_key",
    "parse_summary",
    "render_summary",
    "summarize_session",
]
