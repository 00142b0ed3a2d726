"""Long-history summarization, the summaries engine's path for a conversation beyond one
request: episodes, merge, truncation recovery, refusal fallback, one attempt budget per
run, and the episode cache. It knows nothing of where summaries are kept
(:mod:`memoir.summaries.session` runs it over a stored session and saves the result).

::

    from memoir.summaries.episodic import EpisodicSummarizer, MemoryEpisodeCache

    summarizer = EpisodicSummarizer(model, fallback=fallback, cache=MemoryEpisodeCache())
    summary = summarizer.summarize(events, session="s1", progress=print)
    summary.text, summary.data, summary.model, summary.calls
"""

from memoir.summaries.episodic.cache import (
    CACHE_TTL_S,
    EpisodeCache,
    MemoryEpisodeCache,
    StoreEpisodeCache,
    cache_key,
)
from memoir.summaries.episodic.shape import FACT_LISTS, parse_summary, render_summary
from memoir.summaries.episodic.summarizer import EpisodicSummarizer, EpisodicSummary, Progress

__all__ = [
    "CACHE_TTL_S",
    "FACT_LISTS",
    "EpisodeCache",
    "EpisodicSummarizer",
    "EpisodicSummary",
    "MemoryEpisodeCache",
    "Progress",
    "StoreEpisodeCache",
    "cache_key",
    "parse_summary",
    "render_summary",
]
