"""The episodic summarizer: episodes in parallel, one-level truncation recovery, the
refusal fallback, one attempt budget, the episode cache, then one merge.

::

    history ──normalise──▶ items ──build_episodes──▶ episodes (token budget, tool pairs whole)
        │ run_scope (full: all or OversizedHistory; incremental: a bounded prefix)
        ▼
    episode i ── cache hit? ──▶ object
        │ miss: ModelCaller.ask (budget, retries, refusal → fallback once)
        ├─ ok ──▶ object (cached)
        └─ Truncated with text ──▶ split once (cached decision) ──▶ half A, half B
                                    (compact prompt, cached; a truncated half fails the run)
    objects (+ previous summary) ──merge──▶ EpisodicSummary
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Iterable, Mapping
from concurrent.futures import Future, ThreadPoolExecutor, as_completed
from dataclasses import dataclass, field
from typing import Any, Literal

from memoir.errors import BudgetExhausted, ConfigError, OversizedHistory, SummaryError
from memoir.llm import default_counter
from memoir.llm import port as llm_errors
from memoir.llm.port import Model, RequestMeta, TokenCounter
from memoir.model import Event
from memoir.summaries.calls import (
    Answer,
    AttemptBudget,
    Cancelled,
    ModelCaller,
    episode_request,
    half_request,
    merge_request,
)
from memoir.summaries.episodes import (
    Episode,
    build_episodes,
    full_run_refusal,
    normalise,
    run_scope,
    split_point,
)
from memoir.summaries.offline import render_summary
from memoir.summaries.port import (
    CACHE_TTL_S,
    CachedResult,
    CachedSplit,
    EpisodeCache,
    SafeCache,
    cache_key,
)

__all__ = [
    "EpisodicSummarizer",
    "EpisodicSummary",
    "Progress",
    "full_run_size",
]

Progress = Callable[[str, int, int], None]
EpisodicMode = Literal["full", "incremental"]

DEFAULT_EPISODE_TOKENS = 10_000
DEFAULT_MAX_FULL_TOKENS = 200_000
DEFAULT_MAX_EPISODES = 24  # the most episodes a full run takes (not a setting: see run_scope)


@dataclass(frozen=True, slots=True)
class EpisodicSummary:
    """The result of one run.

    ``model`` is the model that produced the summary: the fallback's name when the fallback
    produced any part of it. ``calls`` counts model calls actually made (cache hits are
    free). ``covered`` is how many entries of the given history the summary now covers and
    ``last_ordinal`` the last event ordinal covered (None for message dicts);
    ``complete`` is False when an incremental run took only a part (run again for the rest).
    """

    text: str
    data: dict[str, Any]
    model: str
    calls: int
    fallback_used: bool
    mode: str = "full"
    episodes: int = 0
    cache_hits: int = 0
    splits: int = 0
    covered: int = 0
    last_ordinal: int | None = None
    complete: bool = True
    input_tokens: int = 0
    output_tokens: int = 0

    def to_json(self) -> dict[str, Any]:
        return {name: getattr(self, name) for name in self.__dataclass_fields__}


@dataclass
class _Part:
    objects: list[dict[str, Any]] = field(default_factory=list)
    producers: list[str] = field(default_factory=list)
    split: bool = False


class EpisodicSummarizer:
    def __init__(
        self,
        model: Model,
        *,
        fallback: Model | None = None,
        cache: EpisodeCache | None = None,
        counter: TokenCounter | None = None,
        concurrency: int = 4,
        attempt_budget: int = 32,
        episode_tokens: int = DEFAULT_EPISODE_TOKENS,
        max_full_tokens: int = DEFAULT_MAX_FULL_TOKENS,
        max_episodes: int = DEFAULT_MAX_EPISODES,
        retries: int = 2,
        retry_backoff_s: float = 0.5,
        cache_ttl_s: float = CACHE_TTL_S,
    ) -> None:
        if concurrency < 1 or attempt_budget < 1 or episode_tokens < 1:
            raise ConfigError("concurrency, attempt_budget and episode_tokens must be positive")
        self.model = model
        self.fallback = fallback
        self.cache = cache
        self.counter = counter or default_counter()
        self.concurrency = concurrency
        self.attempt_budget = attempt_budget
        self.episode_tokens = episode_tokens
        self.max_full_tokens = max_full_tokens
        self.max_episodes = max_episodes
        self.retries = retries
        self.retry_backoff_s = retry_backoff_s
        self.cache_ttl_s = cache_ttl_s  # how long finished episodes wait for a retry

    def summarize(
        self,
        history: Iterable[Event | Mapping[str, Any]],
        *,
        previous: EpisodicSummary | Mapping[str, Any] | str | None = None,
        mode: EpisodicMode = "full",
        user: str | None = None,
        session: str | None = None,
        job_id: str | None = None,
        progress: Progress | None = None,
    ) -> EpisodicSummary:
        """Summarize ``history`` (full) or what follows ``previous`` (incremental: pass only
        the entries after the previous summary's coverage). Raises SummaryError,
        BudgetExhausted or OversizedHistory. An exception raised by ``progress`` stops the
        run (a job uses this to abort)."""
        if mode not in ("full", "incremental"):
            raise ConfigError(f"mode must be 'full' or 'incremental', not {mode!r}")
        entries = list(history)
        incremental = mode == "incremental"
        prev_text = _previous_text(previous) if incremental else None
        items = normalise(entries)
        episodes = build_episodes(items, self.counter, self.episode_tokens)
        if not episodes:
            if prev_text is not None:
                return self._unchanged(previous, entries)
            raise SummaryError("nothing to summarize: the history has no messages")
        episodes = self._scope(episodes, incremental)
        meta = RequestMeta(user=user, session=session, job_id=job_id)
        cancelled = threading.Event()
        caller = ModelCaller(
            self.model,
            self.fallback,
            AttemptBudget(self.attempt_budget),
            retries=self.retries,
            backoff_s=self.retry_backoff_s,
            cancelled=cancelled,
        )
        cache = SafeCache(self.cache, ttl_seconds=self.cache_ttl_s)
        parts = self._run_episodes(episodes, caller, cache, meta, progress)
        objects = [obj for part in parts for obj in part.objects]
        _report(progress, "merge", 0, 1)
        merged = caller.ask(merge_request(objects, prev_text, meta), "the merge", can_split=False)
        _report(progress, "merge", 1, 1)
        complete = episodes[-1].end >= len(items)
        return self._result(merged, parts, episodes, entries, caller, cache, mode, complete)

    def _scope(self, episodes: list[Episode], incremental: bool) -> list[Episode]:
        sizes = [e.tokens for e in episodes]
        take = run_scope(
            sizes,
            incremental=incremental,
            max_tokens=self.max_full_tokens,
            max_episodes=(
                min(self.max_episodes, max(1, self.attempt_budget - 1))
                if incremental
                else self.max_episodes
            ),
        )
        if take is None:
            why = full_run_refusal(
                sum(sizes),
                len(sizes),
                max_tokens=self.max_full_tokens,
                max_episodes=self.max_episodes,
                episode_tokens=self.episode_tokens,
                incremental="--incremental",
            )
            raise OversizedHistory(f"the history is {why}")
        if take + 1 > self.attempt_budget:
            raise BudgetExhausted(
                f"{take} episodes and a merge need at least {take + 1} calls but the attempt "
                f"budget is {self.attempt_budget}; raise MEMOIR_EPISODE_ATTEMPT_BUDGET"
            )
        return episodes[:take]

    def _run_episodes(
        self,
        episodes: list[Episode],
        caller: ModelCaller,
        cache: SafeCache,
        meta: RequestMeta,
        progress: Progress | None,
    ) -> list[_Part]:
        total = len(episodes)
        parts: list[_Part | None] = [None] * total
        failure: BaseException | None = None
        done = 0
        _report(progress, "episodes", 0, total)
        pool = ThreadPoolExecutor(max_workers=min(self.concurrency, total))
        try:
            futures: dict[Future[_Part], int] = {
                pool.submit(self._guarded, ep, total, caller, cache, meta): ep.index
                for ep in episodes
            }
            for future in as_completed(futures):
                try:
                    parts[futures[future]] = future.result()
                except Cancelled:
                    continue
                except BaseException as exc:
                    caller.cancelled.set()
                    failure = failure or exc
                    continue
                done += 1
                if failure is None:
                    _report(progress, "episodes", done, total)
        except BaseException:
            caller.cancelled.set()
            raise
        finally:
            pool.shutdown(wait=True, cancel_futures=True)
        if failure is not None:
            raise failure
        return [p for p in parts if p is not None]

    def _guarded(
        self, ep: Episode, total: int, caller: ModelCaller, cache: SafeCache, meta: RequestMeta
    ) -> _Part:
        """One episode; a failure stops the siblings before their next call."""
        try:
            return self._episode(ep, total, caller, cache, meta)
        except Cancelled:
            raise
        except BaseException:
            caller.cancelled.set()
            raise

    def _episode(
        self, ep: Episode, total: int, caller: ModelCaller, cache: SafeCache, meta: RequestMeta
    ) -> _Part:
        label = f"episode {ep.index + 1} of {total}"
        request = episode_request(ep.text, meta)
        key = cache_key(request, model=self.model.name)
        entry = cache.get(key)
        if isinstance(entry, CachedResult):
            return _Part([entry.data], [entry.model])
        at = entry.at if isinstance(entry, CachedSplit) and entry.at < len(ep.text) else None
        if at is None:
            try:
                answer = caller.ask(request, label, can_split=True)
            except llm_errors.Truncated as exc:
                at = split_point(ep.text, ep.preferred, ep.acceptable)
                if at is None:
                    raise SummaryError(
                        f"{label} was cut off at the output cutoff and is too short to split"
                    ) from exc
                cache.put(key, CachedSplit(at))
            else:
                cache.put(key, CachedResult(answer.data, answer.model))
                return _Part([answer.data], [answer.model])
        part = _Part(split=True)
        halves = [h for h in (ep.text[:at].strip(), ep.text[at:].strip()) if h]
        for number, half in enumerate(halves, start=1):
            done = self._half(half, f"half {number} of {label}", caller, cache, meta)
            part.objects.append(done.data)
            part.producers.append(done.model)
        return part

    def _half(
        self, text: str, label: str, caller: ModelCaller, cache: SafeCache, meta: RequestMeta
    ) -> Answer | CachedResult:
        request = half_request(text, meta)
        key = cache_key(request, model=self.model.name)
        entry = cache.get(key)
        if isinstance(entry, CachedResult):
            return entry
        answer = caller.ask(request, label, can_split=False)
        cache.put(key, CachedResult(answer.data, answer.model))
        return answer

    def _result(
        self,
        merged: Answer,
        parts: list[_Part],
        episodes: list[Episode],
        entries: list[Any],
        caller: ModelCaller,
        cache: SafeCache,
        mode: str,
        complete: bool,
    ) -> EpisodicSummary:
        producers = [p for part in parts for p in part.producers] + [merged.model]
        others = [p for p in producers if p != self.model.name]
        last = episodes[-1]
        if complete:
            covered = len(entries)
            ordinals = [e.ordinal for e in entries if isinstance(e, Event)]
            last_ordinal = max(ordinals) if ordinals else None
        else:
            covered, last_ordinal = last.last_index + 1, last.last_ordinal
        return EpisodicSummary(
            text=render_summary(merged.data),
            data=merged.data,
            model=others[0] if others else self.model.name,
            calls=caller.budget.used,
            fallback_used=bool(others),
            mode=mode,
            episodes=len(episodes),
            cache_hits=cache.hits,
            splits=sum(1 for part in parts if part.split),
            covered=covered,
            last_ordinal=last_ordinal,
            complete=complete,
            input_tokens=caller.input_tokens,
            output_tokens=caller.output_tokens,
        )

    def _unchanged(
        self, previous: EpisodicSummary | Mapping[str, Any] | str | None, entries: list[Any]
    ) -> EpisodicSummary:
        if isinstance(previous, EpisodicSummary):
            data = previous.data
            text, model = previous.text, previous.model
        elif isinstance(previous, Mapping):
            data, model = dict(previous), self.model.name
            text = render_summary(data)
        else:
            data, text, model = {}, str(previous or ""), self.model.name
        ordinals = [e.ordinal for e in entries if isinstance(e, Event)]
        return EpisodicSummary(
            text=text,
            data=data,
            model=model,
            calls=0,
            fallback_used=False,
            mode="incremental",
            covered=len(entries),
            last_ordinal=max(ordinals) if ordinals else None,
        )


def full_run_size(
    history: Iterable[Event | Mapping[str, Any]],
    *,
    episode_tokens: int = DEFAULT_EPISODE_TOKENS,
    max_full_tokens: int = DEFAULT_MAX_FULL_TOKENS,
    max_episodes: int = DEFAULT_MAX_EPISODES,
    counter: TokenCounter | None = None,
) -> tuple[int, int, bool]:
    """(tokens, episodes, within the guard) of a full run over ``history``, without a
    model call: what a job request checks before it is queued."""
    episodes = build_episodes(
        normalise(list(history)), counter or default_counter(), episode_tokens
    )
    sizes = [e.tokens for e in episodes]
    take = run_scope(
        sizes, incremental=False, max_tokens=max_full_tokens, max_episodes=max_episodes
    )
    return sum(sizes), len(sizes), take is not None


def _previous_text(previous: EpisodicSummary | Mapping[str, Any] | str | None) -> str | None:
    if previous is None:
        return None
    if isinstance(previous, EpisodicSummary):
        if previous.data:
            return json.dumps(previous.data, ensure_ascii=False)
        return previous.text.strip() or None
    if isinstance(previous, Mapping):
        return json.dumps(dict(previous), ensure_ascii=False) if previous else None
    return str(previous).strip() or None


def _report(progress: Progress | None, phase: str, completed: int, total: int) -> None:
    if progress is not None:
        progress(phase, completed, total)
