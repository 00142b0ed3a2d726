"""Summarize one stored session end to end with the episodic summarizer: find what the
previous summary covered, run the summarizer (full, incremental, or auto), persist the
result through the summary port.

This is what ``memoir summarize`` and the summary pass's long path (and, later, a
background job) call. The episodic summarizer's own coverage (the last event ordinal it
covered and the structured summary) is kept as a ``episodic_summary`` trace row, so an
incremental run merges into the structured object rather than into display text. Without
such a row, the coverage of the session's existing summary (from
:mod:`memoir.summaries.persist`) is used: archive bytes (matched against each event's
source offset) or an event count.

An incremental run beyond the size guard is done in rounds within one call (each round
has its own attempt budget and merges into the previous round's result); the summary is
persisted once, when it covers everything.

Where the summaries engine gets its models: asked for only once a model call is due.

A home with nothing to summarize never needs a usable model, so a missing key or a bad
``MEMOIR_LLM`` surfaces where a summary is about to be written (after the read-only check,
the session's claim and its lookup), never as a failure charged to a conversation. The
composition root hands in its own factories (``ModelSource(memoir.model,
memoir.fallback_model)``); a caller that has its models at hand uses :meth:`ModelSource.of`.
"""

from __future__ import annotations

import hashlib
import logging
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager, nullcontext
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, Literal

from memoir.config import Settings
from memoir.errors import NotFound, OversizedHistory
from memoir.llm.port import Model
from memoir.llm.transcript import SentenceScorer
from memoir.llm.wiring import Retrying
from memoir.model import Event
from memoir.store import ensure_writable
from memoir.store.db import summary_claim
from memoir.store.port import Store
from memoir.store.values import TraceRow
from memoir.summaries.episodes import full_run_refusal
from memoir.summaries.episodic import (
    DEFAULT_EPISODE_TOKENS,
    DEFAULT_MAX_EPISODES,
    DEFAULT_MAX_FULL_TOKENS,
    EpisodicSummarizer,
    EpisodicSummary,
    Progress,
    full_run_size,
)
from memoir.summaries.persist import coverage_before_reading, read_summary_state, save_summary
from memoir.summaries.port import CACHE_TTL_S, EpisodeCache, StoreEpisodeCache, SummaryStore

__all__ = [
    "TRACE_KIND",
    "EpisodeSettings",
    "ModelSource",
    "Previous",
    "RunMode",
    "SessionRun",
    "check_full_regeneration",
    "closing_source",
    "episodic_summarizer",
    "find_previous",
    "summarize_session",
]


def _no_fallback() -> Model | None:
    return None


def _no_scorer() -> SentenceScorer | None:
    return None


@dataclass(frozen=True, slots=True)
class ModelSource:
    """The model a summary is written with, the refusal fallback (None: none) and the
    sentence scorer an offline summary ranks by (None: lexically)."""

    model: Callable[[], Model]
    fallback: Callable[[], Model | None] = _no_fallback
    scorer: Callable[[], SentenceScorer | None] = _no_scorer

    @classmethod
    def of(cls, model: Model, fallback: Model | None = None) -> ModelSource:
        """Models already built (tests, a caller that resolved them itself)."""
        return cls(lambda: model, lambda: fallback)


@contextmanager
def closing_source(
    model: Callable[[], Model],
    fallback: Callable[[], Model | None] = _no_fallback,
    scorer: Callable[[], SentenceScorer | None] = _no_scorer,
) -> Iterator[ModelSource]:
    """A :class:`ModelSource` over these factories whose models, those it built, are
    closed when the block ends (a remote model holds an HTTP client's connections)."""
    built: list[Model] = []

    def kept(factory: Callable[[], Model | None]) -> Model | None:
        made = factory()
        if made is not None:
            built.append(made)
        return made

    def first() -> Model:
        made = model()
        built.append(made)
        return made

    try:
        yield ModelSource(first, lambda: kept(fallback), scorer)
    finally:
        for made in built:
            close = getattr(made, "close", None)
            if callable(close):
                close()


log = logging.getLogger(__name__)

TRACE_KIND = "episodic_summary"
RunMode = Literal["auto", "full", "incremental"]


@dataclass(frozen=True, slots=True)
class EpisodeSettings:
    """How an episodic summarizer is built (``MEMOIR_EPISODE_*``); ``retries`` per call
    after the first, ``cache_ttl_s`` how long finished episodes are kept. ``max_episodes``,
    the most episodes a full run takes, is no setting: it keeps a full run's calls within
    the attempt budget, and ``MEMOIR_EPISODE_TOKENS`` (fewer, larger episodes) moves it."""

    concurrency: int = 4
    attempt_budget: int = 32
    episode_tokens: int = DEFAULT_EPISODE_TOKENS
    max_full_tokens: int = DEFAULT_MAX_FULL_TOKENS
    max_episodes: int = DEFAULT_MAX_EPISODES
    retries: int = 2
    cache_ttl_s: float = CACHE_TTL_S

    @classmethod
    def from_settings(cls, settings: Settings) -> EpisodeSettings:
        return cls(
            concurrency=settings.episode_concurrency,
            attempt_budget=settings.episode_attempt_budget,
            episode_tokens=settings.episode_tokens,
            max_full_tokens=settings.episode_max_full_tokens,
            retries=max(0, settings.llm_retry_budget - 1),  # the model's budget, less one
        )


def _unretried(model: Model) -> Model:
    """The model without its retry wrapper (the ledger wrapper stays): the summarizer
    retries itself so that every provider attempt counts in the run budget."""
    return model.inner if isinstance(model, Retrying) else model


def episodic_summarizer(
    model: Model,
    fallback: Model | None,
    cache: EpisodeCache | None,
    settings: EpisodeSettings,
) -> EpisodicSummarizer:
    """The episodic summarizer of ``model`` (and ``fallback``), their retry wrappers
    peeled: it retries itself, inside its attempt budget."""
    return EpisodicSummarizer(
        _unretried(model),
        fallback=_unretried(fallback) if fallback is not None else None,
        cache=cache,
        concurrency=settings.concurrency,
        attempt_budget=settings.attempt_budget,
        episode_tokens=settings.episode_tokens,
        max_full_tokens=settings.max_full_tokens,
        max_episodes=settings.max_episodes,
        retries=settings.retries,
        cache_ttl_s=settings.cache_ttl_s,
    )


@dataclass(frozen=True, slots=True)
class Previous:
    """What an earlier summary covered: events up to ``last_ordinal``."""

    summary: dict[str, Any] | str
    last_ordinal: int
    source: str  # "trace" | "summary"


@dataclass(frozen=True, slots=True)
class SessionRun:
    session_id: str
    mode: str  # the mode actually used: "full" | "incremental"
    summary: EpisodicSummary | None  # None when already up to date
    rounds: int = 0
    calls: int = 0
    saved: bool = False
    note: str | None = None

    def to_json(self) -> dict[str, Any]:
        return {
            "session": self.session_id,
            "mode": self.mode,
            "rounds": self.rounds,
            "calls": self.calls,
            "saved": self.saved,
            "note": self.note,
            "summary": self.summary.to_json() if self.summary else None,
        }


def _summary_digest(body: str) -> str:
    """A short fingerprint of a saved summary's text (ties a trace to the summary it wrote)."""
    return hashlib.sha256(body.strip().encode("utf-8", "surrogatepass")).hexdigest()[:16]


# a token is rarely longer than this many characters: a window of max_tokens × this
# many characters holds more than one round's worth of tokens
_CHARS_PER_TOKEN_BOUND = 12


def _round_window(pending: list[Event], max_tokens: int) -> list[Event]:
    """The start of ``pending`` that surely holds more than one round (``max_tokens``): a
    round reads its scope from the front, so handing it only this much keeps a long
    history linear — each round used to re-read (normalise, split) all that was left."""
    limit = max(1, max_tokens) * _CHARS_PER_TOKEN_BOUND
    chars = 0
    for n, event in enumerate(pending):
        chars += len(event.text) + 64  # the framing each entry gets
        if chars > limit:
            return pending[: n + 1]
    return pending


def check_full_regeneration(
    store: Store, session_id: str, episodes: EpisodeSettings = EpisodeSettings()
) -> None:
    """Raise ``OversizedHistory`` when a full regeneration of the session is beyond what one
    full run takes — ``MEMOIR_EPISODE_MAX_FULL_TOKENS``, or more episodes than
    ``EpisodeSettings.max_episodes`` — naming the limit passed and pointing to incremental
    summarization: checked before a regeneration job is queued, with no model call."""
    tokens, count, _ = full_run_size(
        store.events.of(session_id),
        episode_tokens=episodes.episode_tokens,
        max_full_tokens=episodes.max_full_tokens,
        max_episodes=episodes.max_episodes,
    )
    why = full_run_refusal(
        tokens,
        count,
        max_tokens=episodes.max_full_tokens,
        max_episodes=episodes.max_episodes,
        episode_tokens=episodes.episode_tokens,
        incremental="memoir summarize --incremental",
    )
    if why is not None:
        raise OversizedHistory(f"session {session_id} is {why}")


def find_previous(
    summaries: SummaryStore, store: Store, session_id: str, events: Sequence[Event]
) -> Previous | None:
    """The previous summary and its coverage, or None when the session has none.

    The structured data of the newest episodic trace is used only while the saved summary
    is still the one that run wrote and still covers something: a rewritten transcript
    (its summary marked stale), a summary deleted by hand or replaced by the summary pass
    all make it history, and the saved summary (if any) is the starting point instead."""
    state = read_summary_state(summaries, store, session_id)
    if not state.has_body or state.coverage is None:
        return None
    if state.coverage.amount <= 0:
        return None
    last = events[-1].ordinal if events else 0
    traces = store.traces.find(session_id, TRACE_KIND)
    if traces:
        row = traces[-1]
        ordinal, data = row.data.get("last_ordinal"), row.data.get("data")
        if (
            isinstance(ordinal, int)
            and 0 < ordinal <= last
            and isinstance(data, dict)
            and row.data.get("summary_sha") == _summary_digest(state.body)
        ):
            return Previous(data, ordinal, "trace")
    amount = state.coverage.amount
    # the home's summary store counts archive bytes (files) or events (database)
    by_bytes = summaries.unit == "bytes" and any(e.source_offset is not None for e in events)
    if by_bytes:
        covered = [
            e.ordinal for e in events if e.source_offset is not None and e.source_offset < amount
        ]
    else:
        covered = [e.ordinal for e in events if e.ordinal <= amount]
    if not covered:
        return None
    return Previous(state.body.strip(), max(covered), "summary")


def summarize_session(
    store: Store,
    summaries: SummaryStore,
    session_id: str,
    *,
    models: ModelSource | None = None,
    episodes: EpisodeSettings = EpisodeSettings(),
    mode: RunMode = "auto",
    use_cache: bool = True,
    progress: Progress | None = None,
    job_id: str | None = None,
    summarizer: EpisodicSummarizer | None = None,
    claim: bool = True,
) -> SessionRun:
    """Summarize, persist, and record coverage, holding the session's summary claim (one
    writer per session, across processes and PostgreSQL replicas; ``claim=False`` for a
    caller that holds it already, the summary pass). Raises Busy when another process
    holds it, NotFound, SummaryError and its subclasses (OversizedHistory only in ``full``
    mode).

    The summarizer is ``summarizer`` when given; else one of ``models`` (asked for once the
    session is found), built as ``episodes`` says, with the store's episode cache unless
    ``use_cache`` is False."""
    if summarizer is None and models is None:
        raise TypeError("summarize_session needs models or a summarizer")
    ensure_writable(store, "memoir summarize")  # before any model call
    held = store.claims.hold(*summary_claim(session_id)) if claim else nullcontext()
    with held:
        session = store.sessions.get(session_id)
        if session is None:
            raise NotFound(f"no session {session_id!r} in this Memoir home (run memoir sync?)")
        if summarizer is None:
            assert models is not None
            summarizer = episodic_summarizer(
                models.model(),
                models.fallback(),
                StoreEpisodeCache(store.cache) if use_cache else None,
                episodes,
            )
        return _summarize(
            store, summaries, session_id, mode, summarizer, progress, session.user, job_id
        )


def _summarize(
    store: Store,
    summaries: SummaryStore,
    session_id: str,
    mode: RunMode,
    summarizer: EpisodicSummarizer,
    progress: Progress | None,
    user: str | None,
    job_id: str | None,
) -> SessionRun:
    common: dict[str, Any] = {"user": user, "session": session_id, "job_id": job_id}
    covered = coverage_before_reading(summaries, store, session_id)
    events = store.events.of(session_id)
    previous = find_previous(summaries, store, session_id, events) if mode != "full" else None
    if mode == "full" or (mode == "auto" and previous is None):
        try:
            result = summarizer.summarize(events, mode="full", progress=progress, **common)
            return _finish(
                store, summaries, session_id, "full", result, 1, result.calls, job_id, covered
            )
        except OversizedHistory:
            if mode == "full":
                raise
    pending = [e for e in events if previous is None or e.ordinal > previous.last_ordinal]
    if previous is not None and not pending:
        return SessionRun(session_id, "incremental", None, note="already up to date")
    prior: EpisodicSummary | dict[str, Any] | str | None = previous.summary if previous else None
    rounds = calls = 0
    while True:
        window = _round_window(pending, summarizer.max_full_tokens)
        result = summarizer.summarize(
            window, previous=prior, mode="incremental", progress=progress, **common
        )
        rounds += 1
        calls += result.calls
        if result.complete and len(window) == len(pending):
            break
        prior, pending = result, pending[result.covered :]
    return _finish(
        store, summaries, session_id, "incremental", result, rounds, calls, job_id, covered
    )


def _finish(
    store: Store,
    summaries: SummaryStore,
    session_id: str,
    mode: str,
    result: EpisodicSummary,
    rounds: int,
    calls: int,
    job_id: str | None,
    covered: int | None,
) -> SessionRun:
    save_summary(
        summaries,
        store,
        session_id,
        result.text,
        model=result.model,
        data=result.data,
        covered=covered,
    )
    try:
        saved = read_summary_state(summaries, store, session_id)
        store.traces.record(
            TraceRow(
                session_id=session_id,
                kind=TRACE_KIND,
                at=datetime.now(UTC),
                data={
                    "last_ordinal": result.last_ordinal,
                    "data": result.data,
                    "model": result.model,
                    "mode": mode,
                    "calls": calls,
                    "job_id": job_id,
                    "summary_sha": _summary_digest(saved.body) if saved.has_body else None,
                },
            )
        )
    except Exception as exc:  # coverage for the next incremental run only; summary saved
        log.warning("could not record episodic coverage for %s: %s", session_id, exc)
    return SessionRun(session_id, mode, result, rounds, calls, saved=True)
