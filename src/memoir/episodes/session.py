"""Summarize one stored session end to end: find what the previous summary covered, run the
summarizer (full, incremental, or auto), persist the result through the summary port.

This is what ``memoir summarize`` and, later, a background job call. The episodic
summarizer's own coverage (the last event ordinal it covered and the structured summary)
is kept as a ``episodic_summary`` trace row, so an incremental run merges into the
structured object rather than into display text. Without such a row, the coverage of the
session's existing summary (from :mod:`memoir.summaries.persist`) is used: archive bytes
(matched against each event's source offset) or an event count.

An incremental run beyond the size guard is done in rounds within one call (each round
has its own attempt budget and merges into the previous round's result); the summary is
persisted once, when it covers everything.
"""

from __future__ import annotations

import hashlib
import logging
from collections.abc import Sequence
from contextlib import nullcontext
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any, Literal

from memoir.episodes.cache import StoreEpisodeCache
from memoir.episodes.summarizer import EpisodicSummarizer, EpisodicSummary, Progress
from memoir.errors import NotFound, OversizedHistory
from memoir.llm.port import Model
from memoir.model import Event
from memoir.store.claims import summary_claim
from memoir.store.values import TraceRow

if TYPE_CHECKING:
    from memoir.app import Memoir

__all__ = [
    "TRACE_KIND",
    "Previous",
    "RunMode",
    "SessionRun",
    "find_previous",
    "summarize_session",
]

log = logging.getLogger(__name__)

TRACE_KIND = "episodic_summary"
RunMode = Literal["auto", "full", "incremental"]


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


def _unretried(model: Model | None) -> Model | None:
    """The facade's model without its retry wrapper (the ledger wrapper stays): the
    summarizer retries itself so that every provider attempt counts in the run budget."""
    try:
        from memoir.llm.retry import Retrying
    except ImportError:
        return model
    return model.inner if isinstance(model, Retrying) else model


def _models(memoir: Memoir) -> tuple[Model, Model | None]:
    model_fn = getattr(memoir, "model", None)
    if callable(model_fn):
        fallback_fn = getattr(memoir, "fallback_model", None)
        fallback = fallback_fn() if callable(fallback_fn) else None
        primary: Model = model_fn()
        return _unretried(primary) or primary, _unretried(fallback)
    from memoir.llm.offline import OfflineModel  # before the facade grew .model()

    return OfflineModel(), None


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


def _coverage_before_reading(memoir: Memoir, session_id: str) -> int | None:
    try:
        from memoir.summaries.persist import coverage_before_reading
    except ImportError:
        return None
    return coverage_before_reading(memoir, session_id)


def find_previous(memoir: Memoir, session_id: str, events: Sequence[Event]) -> Previous | None:
    """The previous summary and its coverage, or None when the session has none.

    The structured data of the newest episodic trace is used only while the saved summary
    is still the one that run wrote and still covers something: a rewritten transcript
    (its summary marked stale), a summary deleted by hand or replaced by the summary pass
    all make it history, and the saved summary (if any) is the starting point instead."""
    try:
        from memoir.summaries.persist import read_summary_state
    except ImportError:
        return None
    state = read_summary_state(memoir, session_id)
    if not getattr(state, "has_body", False) or state.coverage is None:
        return None
    if state.coverage.amount <= 0:
        return None
    last = events[-1].ordinal if events else 0
    traces = memoir.store.traces.find(session_id, TRACE_KIND)
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
    by_bytes = memoir.settings.summary_store == "files" and any(
        e.source_offset is not None for e in events
    )
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
    memoir: Memoir,
    session_id: str,
    *,
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
    mode)."""
    from memoir.store import ensure_writable

    ensure_writable(memoir.store, "memoir summarize")  # before any model call
    held = memoir.store.claims.hold(*summary_claim(session_id)) if claim else nullcontext()
    with held:
        return _summarize(memoir, session_id, mode, use_cache, progress, job_id, summarizer)


def _summarize(
    memoir: Memoir,
    session_id: str,
    mode: RunMode,
    use_cache: bool,
    progress: Progress | None,
    job_id: str | None,
    summarizer: EpisodicSummarizer | None,
) -> SessionRun:
    session = memoir.store.sessions.get(session_id)
    if session is None:
        raise NotFound(f"no session {session_id!r} in this Memoir home (run memoir sync?)")
    if summarizer is None:
        model, fallback = _models(memoir)
        settings = memoir.settings
        summarizer = EpisodicSummarizer(
            model,
            fallback=fallback,
            cache=StoreEpisodeCache(memoir.store.cache) if use_cache else None,
            concurrency=settings.episode_concurrency,
            attempt_budget=settings.episode_attempt_budget,
            episode_tokens=settings.episode_tokens,
            max_full_tokens=settings.episode_max_full_tokens,
            retries=max(0, settings.llm_retry_budget - 1),
        )
    covered = _coverage_before_reading(memoir, session_id)
    events = memoir.store.events.of(session_id)
    common: dict[str, Any] = {"user": session.user, "session": session_id, "job_id": job_id}
    previous = find_previous(memoir, session_id, events) if mode != "full" else None
    if mode == "full" or (mode == "auto" and previous is None):
        try:
            result = summarizer.summarize(events, mode="full", progress=progress, **common)
            return _finish(memoir, session_id, "full", result, 1, result.calls, job_id, covered)
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
    return _finish(memoir, session_id, "incremental", result, rounds, calls, job_id, covered)


def _finish(
    memoir: Memoir,
    session_id: str,
    mode: str,
    result: EpisodicSummary,
    rounds: int,
    calls: int,
    job_id: str | None,
    covered: int | None = None,
) -> SessionRun:
    try:
        from memoir.summaries.persist import save_summary
    except ImportError:
        note = "the summary was NOT saved: memoir.summaries.persist is not available"
        return SessionRun(session_id, mode, result, rounds, calls, saved=False, note=note)
    save_summary(
        memoir, session_id, result.text, model=result.model, data=result.data, covered=covered
    )
    try:
        from memoir.summaries.persist import read_summary_state

        saved = read_summary_state(memoir, session_id)
        memoir.store.traces.record(
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
