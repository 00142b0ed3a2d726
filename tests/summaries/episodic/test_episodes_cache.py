"""The episode cache: reuse on re-runs, misses on prompt changes, compact halves kept
apart, failures degrading to uncached work, and the adapters."""

from __future__ import annotations

from typing import Any

import pytest

from memoir.errors import SummaryError
from memoir.llm import ScriptedModel
from memoir.llm.port import Purpose, Refused, RequestMeta, Transient, Truncated
from memoir.model import EventKind
from memoir.summaries import calls as prompts_module
from memoir.summaries.calls import episode_request, half_request
from memoir.summaries.episodic import EpisodicSummarizer
from memoir.summaries.port import (
    CachedResult,
    CachedSplit,
    MemoryEpisodeCache,
    SafeCache,
    StoreEpisodeCache,
    cache_key,
    decode_entry,
    encode_entry,
)

from .episode_helpers import Oracle, episode_json, event, marked_history, transcript_of


def make(model: ScriptedModel, cache: Any, **kw: Any) -> EpisodicSummarizer:
    kw.setdefault("episode_tokens", 300)
    return EpisodicSummarizer(model, cache=cache, retry_backoff_s=0, **kw)


def test_a_rerun_reuses_every_episode_and_pays_only_the_merge() -> None:
    cache = MemoryEpisodeCache()
    model = ScriptedModel(default=Oracle())
    first = make(model, cache).summarize(marked_history(4), user="u", session="s1")
    assert first.calls == 5 and first.cache_hits == 0
    second = make(model, cache).summarize(marked_history(4), user="u", session="s1")
    assert second.calls == 1 and second.cache_hits == 4
    assert model.calls == 6
    assert second.data == first.data


@pytest.mark.parametrize(
    "change", [{"user": "other"}, {"session": "s2"}, {"model_name": "scripted:other"}]
)
def test_user_session_and_model_are_part_of_the_key(change: dict[str, str]) -> None:
    cache = MemoryEpisodeCache()
    make(ScriptedModel(default=Oracle()), cache).summarize(
        marked_history(2), user="u", session="s1"
    )
    name = change.get("model_name", "scripted:test")
    model = ScriptedModel(default=Oracle(), name=name)
    again = make(model, cache).summarize(
        marked_history(2), user=change.get("user", "u"), session=change.get("session", "s1")
    )
    assert again.calls == 3 and again.cache_hits == 0


def test_a_retry_after_a_failed_merge_costs_only_the_merge() -> None:
    cache = MemoryEpisodeCache()
    oracle = Oracle({(Purpose.MERGE, None): [Transient("503")] * 3})
    model = ScriptedModel(default=oracle)
    with pytest.raises(SummaryError):
        make(model, cache).summarize(marked_history(3))
    assert model.calls == 3 + 3
    summary = make(model, cache).summarize(marked_history(3))
    assert summary.calls == 1


def test_split_decisions_and_finished_halves_are_reused() -> None:
    cache = MemoryEpisodeCache()
    oracle = Oracle(
        {
            (Purpose.EPISODE, "MARK1"): [Truncated("cut", partial="{")],
            (Purpose.HALF, "answer about MARK1"): [Truncated("cut", partial="{")],
        }
    )
    model = ScriptedModel(default=oracle)
    with pytest.raises(SummaryError):
        make(model, cache, concurrency=1).summarize(marked_history(2))
    before = model.calls
    summary = make(model, cache, concurrency=1).summarize(marked_history(2))
    retried = model.requests[before:]
    # only the failed half and the merge: the episode (split decision), its first half
    # and the sibling episode all come from the cache
    assert [r.meta.purpose for r in retried] == [Purpose.HALF, Purpose.MERGE]
    assert "answer about MARK1" in transcript_of(retried[0])
    assert summary.calls == 2 and summary.splits == 1 and summary.cache_hits == 3


def test_a_changed_prompt_misses(monkeypatch: pytest.MonkeyPatch) -> None:
    cache = MemoryEpisodeCache()
    model = ScriptedModel(default=Oracle())
    make(model, cache).summarize(marked_history(3))
    monkeypatch.setattr(prompts_module, "EPISODE_SYSTEM", prompts_module.EPISODE_SYSTEM + " v2")
    again = make(model, cache).summarize(marked_history(3))
    assert again.calls == 4 and again.cache_hits == 0


def test_a_compact_half_never_reuses_a_normal_result_for_the_same_text() -> None:
    meta = RequestMeta(user="u", session="s1")
    text = "User: the same transcript"
    normal = cache_key(episode_request(text, meta), model="m")
    compact = cache_key(half_request(text, meta), model="m")
    assert normal != compact
    # end to end: episode A's transcript is cached with the normal prompt ...
    cache = MemoryEpisodeCache()
    short = [event(1, EventKind.USER_TEXT, "MARK1 alpha " * 80)]
    first = ScriptedModel(default=Oracle())
    make(first, cache).summarize(short)
    cached_text = transcript_of(first.requests[0])
    # ... then the same text becomes the first half of a truncated episode
    longer = [*short, event(2, EventKind.ASSISTANT_TEXT, "MARK2 beta " * 80)]
    oracle = Oracle({(Purpose.EPISODE, "MARK2"): [Truncated("cut", partial="{")]})
    model = ScriptedModel(default=oracle)
    summary = make(model, cache, episode_tokens=1000).summarize(longer)
    halves = [r for r in model.requests if r.meta.purpose is Purpose.HALF]
    assert len(halves) == 2 and transcript_of(halves[0]) == cached_text
    assert summary.cache_hits == 0


def test_a_result_made_by_the_fallback_keeps_its_model_when_reused() -> None:
    cache = MemoryEpisodeCache()
    oracle = Oracle({(Purpose.EPISODE, "MARK0"): [Refused("no")]})
    fallback = ScriptedModel(default=Oracle(), name="fb:model")
    make(ScriptedModel(default=oracle), cache, fallback=fallback).summarize(marked_history(1))
    again = make(ScriptedModel(default=Oracle()), cache).summarize(marked_history(1))
    assert again.calls == 1 and again.model == "fb:model" and again.fallback_used


class BrokenCache:
    def __init__(self, *, get: bool = True, put: bool = True) -> None:
        self.fail_get, self.fail_put = get, put
        self.inner = MemoryEpisodeCache()

    def get(self, key: str) -> str | None:
        if self.fail_get:
            raise ConnectionError("cache down")
        return self.inner.get(key)

    def put(self, key: str, value: str, ttl_seconds: float) -> None:
        if self.fail_put:
            raise ConnectionError("cache down")
        self.inner.put(key, value, ttl_seconds)


@pytest.mark.parametrize(("get", "put"), [(True, True), (True, False), (False, True)])
def test_a_failing_cache_degrades_to_uncached_work(get: bool, put: bool) -> None:
    model = ScriptedModel(default=Oracle())
    summary = make(model, BrokenCache(get=get, put=put)).summarize(marked_history(3))
    assert summary.calls == 4 and summary.data["narrative"] == "summary of merge of 3"


def test_a_failing_cache_write_never_discards_a_valid_result() -> None:
    safe = SafeCache(BrokenCache(get=False, put=True))
    safe.put("k", CachedResult({"narrative": "x"}, "m"))
    assert safe.errors == 1 and safe.get("k") is None


def test_garbage_in_the_cache_is_a_miss() -> None:
    cache = MemoryEpisodeCache()
    model = ScriptedModel(default=Oracle())
    make(model, cache).summarize(marked_history(1))
    for key in list(cache._data):
        cache.put(key, "not json", 60)
    again = make(model, cache).summarize(marked_history(1))
    assert again.calls == 2


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        (encode_entry(CachedSplit(12)), CachedSplit(12)),
        (
            encode_entry(CachedResult({"narrative": "n"}, "m")),
            CachedResult({"narrative": "n"}, "m"),
        ),
        ('{"v": 2, "split": 3}', None),
        ('{"v": 1, "split": 0}', None),
        ('{"v": 1, "split": true}', None),
        ('{"v": 1, "data": [], "model": "m"}', None),
        ("[]", None),
        ("", None),
    ],
)
def test_entry_round_trip_and_rejection(raw: str, expected: object) -> None:
    assert decode_entry(raw) == expected


def test_memory_cache_expires_and_evicts() -> None:
    now = [100.0]
    cache = MemoryEpisodeCache(max_entries=2, clock=lambda: now[0])
    cache.put("a", "1", 10)
    cache.put("b", "2", 3600)
    assert cache.get("a") == "1"
    now[0] = 111.0
    assert cache.get("a") is None and cache.get("b") == "2"
    cache.put("c", "3", 60)
    cache.put("d", "4", 60)
    assert cache.get("b") is None and len(cache) == 2


def test_store_adapter_uses_cache_get_and_put_with_one_hour() -> None:
    class FakeCache:
        def __init__(self) -> None:
            self.rows: dict[str, tuple[str, float]] = {}

        def get(self, key: str) -> str | None:
            row = self.rows.get(key)
            return row[0] if row else None

        def put(self, key: str, value: str, ttl_seconds: float) -> None:
            self.rows[key] = (value, ttl_seconds)

    store = FakeCache()
    model = ScriptedModel(default=Oracle())
    make(model, StoreEpisodeCache(store)).summarize(marked_history(2))
    assert len(store.rows) == 2 and {ttl for _, ttl in store.rows.values()} == {3600.0}
    assert all(key.startswith("memoir:episode:") for key in store.rows)
    again = make(model, StoreEpisodeCache(store)).summarize(marked_history(2))
    assert again.calls == 1


def test_no_cache_means_every_call_is_made() -> None:
    model = ScriptedModel(default=episode_json("x"))
    make(model, None).summarize(marked_history(2))
    again = make(model, None).summarize(marked_history(2))
    assert again.calls == 3 and again.cache_hits == 0


@pytest.mark.parametrize(("ttl", "reused"), [(7_200.0, True), (3_600.0, False)])
def test_finished_episodes_outlive_the_retry_floor_when_told_to(ttl: float, reused: bool) -> None:
    """A failed long summary is retried by the next sync after the retry floor (an hour by
    default): its finished episodes must still be there then."""
    now = [0.0]
    cache = MemoryEpisodeCache(clock=lambda: now[0])
    model = ScriptedModel(default=Oracle())
    make(model, cache, cache_ttl_s=ttl).summarize(marked_history(4), user="u", session="s1")
    now[0] = 3_600.0 + 60.0  # the retry floor has passed
    again = make(model, cache, cache_ttl_s=ttl).summarize(marked_history(4), user="u", session="s1")
    assert again.cache_hits == (4 if reused else 0)


@pytest.mark.parametrize(("floor_hours", "ttl"), [(1.0, 7_200.0), (0.0, 3_600.0), (5.0, 21_600.0)])
def test_the_summary_pass_keeps_episodes_past_its_retry_floor(
    floor_hours: float, ttl: float
) -> None:
    from memoir.summaries.summary_pass import episode_cache_ttl_s

    assert episode_cache_ttl_s(floor_hours) == ttl
