"""The summary pass ``memoir sync`` runs after indexing.

1. Scan every archived conversation (cheap: see :mod:`memoir.summaries.files`) and
   decide each one with the pure decision table.
2. Stamp legacy header-less summaries with a current-size baseline (no model call).
3. Gate every model-calling action on quiescence — idle since the last exchange — BEFORE
   the per-run limit, so conversations still in progress never use it up.
4. Order fairly (never-summarized before failed first summaries, before re-summaries,
   before failed re-summaries; oldest attempt first), then apply the limit.
5. Summarize; on failure keep any prior body and record the attempt (give up at the cap).

A caller that shows progress passes ``progress``: it is told (:class:`PassProgress`) which
conversation is being summarized before each one, and once more when the pass is done.

The pass's path for conversations beyond one request: :func:`summarize_session` in
``auto`` mode with the episodic summarizer — a first summary episode by episode, a refresh
merged incrementally into the previous summary (rounds when the new part is itself long).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from memoir.config import Settings
from memoir.errors import Busy, MemoirError, SummaryError
from memoir.llm.port import AuthError, Model, RateLimited
from memoir.llm.transcript import SentenceScorer
from memoir.model import Event
from memoir.store import ensure_writable
from memoir.store.db import summary_claim
from memoir.store.port import Store
from memoir.summaries.persist import coverage_after, coverage_before_reading
from memoir.summaries.port import (
    CACHE_TTL_S,
    Conversation,
    EpisodeCache,
    StoreEpisodeCache,
    SummaryStore,
)
from memoir.summaries.session import (
    EpisodeSettings,
    ModelSource,
    RunMode,
    episodic_summarizer,
    summarize_session,
)
from memoir.summaries.state import (
    SUMMARY_FORMAT,
    SummaryAction,
    SummaryKind,
    SummaryPolicy,
    SummaryState,
    decide,
    is_quiescent,
    queue_rank,
)
from memoir.summaries.summarizer import LongPath, SummaryText, summarize_conversation, tidy_summary

__all__ = [
    "PassProgress",
    "PassRow",
    "PassSettings",
    "SummaryPassReport",
    "episode_cache_ttl_s",
    "run_summary_pass",
    "session_long_path",
]


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
        body = tidy_summary(run.summary.text)
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


log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class PassRow:
    session_id: str
    project: str
    outcome: str  # summarized | resummarized | empty | failed | gave_up | stamped | unindexed
    detail: str = ""


@dataclass(frozen=True, slots=True)
class PassProgress:
    """Where a summary pass is: ``done`` of ``total`` conversations summarized, and the
    one being summarized now (``session_id`` empty once the pass is done). ``total`` is
    what the pass means to summarize (due, idle, within the limit); it shrinks when one
    turns out to need no summary (empty, not indexed yet, another process on it), so the
    two meet when the pass ends."""

    done: int
    total: int
    session_id: str = ""
    project: str = ""


@dataclass(slots=True)
class SummaryPassReport:
    summarized: int = 0
    resummarized: int = 0
    failed: int = 0
    gave_up: int = 0  # reached the attempt cap in this run
    skipped_not_idle: int = 0
    stamped: int = 0
    empty: int = 0
    deferred: int = 0  # idle and due, left for the next run by the limit
    backing_off: int = 0
    given_up_total: int = 0  # conversations already given up (skipped)
    unindexed: int = 0
    busy: int = 0  # being summarized by another process right now (skipped)
    model_calls: int = 0
    # the pass stopped: the model cannot be used now (a key, permission or credit error;
    # a rate limit that outlasted its retries) — no conversation is charged an attempt
    stopped: str = ""
    stopped_by_setting: bool = False
    rows: list[PassRow] = field(default_factory=list)

    def as_dict(self) -> dict[str, Any]:
        data = {k: getattr(self, k) for k in self.__slots__ if k != "rows"}
        data["rows"] = [
            {
                "session": r.session_id,
                "project": r.project,
                "outcome": r.outcome,
                "detail": r.detail,
            }
            for r in self.rows
        ]
        return data


@dataclass(frozen=True, slots=True)
class PassSettings:
    """What the pass reads of the settings: the decision table's knobs and how a long
    conversation's episodes are summarized (finished ones kept past the retry floor)."""

    policy: SummaryPolicy
    episodes: EpisodeSettings

    @classmethod
    def from_settings(cls, settings: Settings) -> PassSettings:
        episodes = EpisodeSettings.from_settings(settings)
        ttl = episode_cache_ttl_s(settings.summary_error_retry_hours)
        return cls(SummaryPolicy.from_settings(settings), replace(episodes, cache_ttl_s=ttl))


def run_summary_pass(
    store: Store,
    summaries: SummaryStore,
    settings: PassSettings,
    models: ModelSource,
    *,
    limit: int,
    now_ms: int | None = None,
    progress: Callable[[PassProgress], None] | None = None,
) -> SummaryPassReport:
    """Scan ``summaries``, decide, gate, order, limit, summarize (the events from ``store``;
    ``models`` asked for only when a conversation needs a model call). Returns what
    happened; ``progress`` is told of each conversation before it is summarized."""
    ensure_writable(store, "the summary pass")  # before any model call
    now = int(time.time() * 1000) if now_ms is None else now_ms

    def clock() -> int:  # a failure is stamped when it happens, not when the pass began
        return int(time.time() * 1000) if now_ms is None else now_ms

    policy = settings.policy
    report = SummaryPassReport()
    due: list[tuple[SummaryAction, Conversation]] = []
    for conv in summaries.scan():
        action = decide(conv.state, conv.current, policy, now)
        if action is SummaryAction.STAMP_BASELINE:
            _stamp(summaries, conv, report)
        elif action is SummaryAction.GIVE_UP:
            report.given_up_total += 1
        elif action is SummaryAction.BACKOFF:
            report.backing_off += 1
        elif action.calls_model:
            if is_quiescent(summaries.last_exchange(conv), policy, now):
                due.append((action, conv))
            else:
                report.skipped_not_idle += 1
    due.sort(key=lambda item: (*queue_rank(item[0], item[1].state), item[1].session_id))
    tools = _Tools(models, store)
    used, budget = 0, min(max(0, limit), len(due))
    for index, (_, conv) in enumerate(due):
        if used >= budget:
            report.deferred = len(due) - index
            break
        if progress is not None:
            total = min(budget, used + len(due) - index)
            progress(PassProgress(used, total, conv.session_id, conv.project))
        # only real summarization work counts against the limit (not empty/unindexed ones,
        # nor one another process is summarizing right now: one writer per session)
        try:
            with store.claims.hold(*summary_claim(conv.session_id)):
                worked = _summarize_one(store, summaries, conv, settings, now, tools, report, clock)
        except _ModelUnusable as stop:
            cause = stop.__cause__ or stop
            report.stopped = f"{type(cause).__name__}: {cause}".splitlines()[0][:500]
            report.stopped_by_setting = isinstance(cause, AuthError)
            report.deferred = len(due) - index
            break
        except Busy:
            report.busy += 1
            report.rows.append(PassRow(conv.session_id, conv.project, "busy", "another process"))
            worked = False
        if worked:
            used += 1
    if progress is not None and due:
        progress(PassProgress(used, used))
    return report


def _stamp(summaries: SummaryStore, conv: Conversation, report: SummaryPassReport) -> None:
    fresh = summaries.refresh(conv)
    if fresh.state.kind is not SummaryKind.LEGACY:
        return
    summaries.write(fresh, fresh.state.with_baseline(fresh.current))
    report.stamped += 1
    report.rows.append(PassRow(conv.session_id, conv.project, "stamped", f"{fresh.current}"))


def _summarize_one(
    store: Store,
    summaries: SummaryStore,
    conv: Conversation,
    settings: PassSettings,
    now: int,
    tools: _Tools,
    report: SummaryPassReport,
    clock: Callable[[], int] | None = None,
) -> bool:
    """Summarize one conversation (the caller holds its summary claim); True when that
    was summarization work (success or failure), False when there was nothing to do (not
    due any more, unindexed, empty). A key, permission or credit error, or a rate limit
    its retries did not outlast, is the account's, not the conversation's: it raises
    :class:`_ModelUnusable` and charges no attempt."""
    policy = settings.policy
    fresh = summaries.refresh(conv)  # full state (the body must survive a failure)
    action = decide(fresh.state, fresh.current, policy, now)
    if not action.calls_model:
        return False
    cap = coverage_before_reading(summaries, store, conv.session_id)  # a sync may append now
    events = summaries.events(fresh)
    if events is None or (not events and summaries.unit == "events"):
        # not indexed yet — or an API session with no event so far, which is not "empty
        # forever": it may be fed later
        report.unindexed += 1
        report.rows.append(PassRow(conv.session_id, conv.project, "unindexed"))
        return False
    had_body = fresh.state.kind is SummaryKind.REAL
    model, fallback, cache = tools.get()  # configuration errors surface, never "failures"
    long = session_long_path(
        store, summaries, conv.session_id, fresh.state, model, fallback, cache, settings.episodes
    )
    try:
        result = summarize_conversation(
            events,
            model,
            session=conv.session_id,
            user=_user_of(store, conv.session_id),
            fallback=fallback,
            cache=cache,
            long=long,
            scorer=tools.scorer(),
        )
    except (AuthError, RateLimited) as exc:
        raise _ModelUnusable() from exc
    except Exception as exc:  # recorded and bounded like any failure, never a crash loop
        if _account_problem(exc):
            raise _ModelUnusable() from exc
        if not isinstance(exc, MemoirError):  # the traceback with --debug, not in the way
            log.debug("unexpected error summarizing %s", conv.session_id, exc_info=True)
        _record_failure(summaries, fresh, clock() if clock else now, exc, policy, report)
        return True
    if result is None:
        summaries.write(fresh, SummaryState.empty())
        report.empty += 1
        report.rows.append(PassRow(conv.session_id, conv.project, "empty", "no exchanges"))
        return False
    report.model_calls += result.calls
    amount, last_exchange = coverage_after(summaries.unit, fresh.current, events)
    if cap is not None:
        amount = min(amount, cap)
    summaries.write(
        fresh, SummaryState.real(result.body, amount, last_exchange, model=result.model)
    )
    outcome = "resummarized" if had_body else "summarized"
    setattr(report, outcome, getattr(report, outcome) + 1)
    report.rows.append(PassRow(conv.session_id, conv.project, outcome, result.model))
    return True


class _ModelUnusable(Exception):
    """Stops the pass; its ``__cause__`` is the model error."""


def _account_problem(exc: BaseException) -> bool:
    """A failure the episodic summarizer wrapped (its SummaryError) whose cause is the
    account's: authentication, permission, credit, an unknown model (a wrong name or base
    URL), or a rate limit."""
    seen: set[int] = set()
    cause: BaseException | None = exc
    while cause is not None and id(cause) not in seen:
        if isinstance(cause, (AuthError, RateLimited)):
            return True
        seen.add(id(cause))
        cause = cause.__cause__
    return False


def _record_failure(
    summaries: SummaryStore,
    conv: Conversation,
    now: int,
    exc: Exception,
    policy: SummaryPolicy,
    report: SummaryPassReport,
) -> None:
    message = f"{type(exc).__name__}: {exc}".splitlines()[0][:500]
    log.warning("summary of %s failed: %s", conv.session_id, message)
    new_state = conv.state.failed_once_more(now, message)
    summaries.write(conv, new_state)
    attempts = new_state.failure.attempts if new_state.failure else 0
    report.failed += 1
    outcome = "failed"
    if attempts >= policy.max_attempts:
        report.gave_up += 1
        outcome = "gave_up"
    report.rows.append(
        PassRow(conv.session_id, conv.project, outcome, f"attempt {attempts}: {message}")
    )


class _Tools:
    """The model, refusal fallback and episode cache, resolved once and only when needed."""

    def __init__(self, models: ModelSource, store: Store) -> None:
        self.models = models
        self.store = store
        self._resolved: tuple[Model, Model | None, StoreEpisodeCache] | None = None
        self._scorer: SentenceScorer | None = None
        self._scored = False

    def get(self) -> tuple[Model, Model | None, StoreEpisodeCache]:
        if self._resolved is None:
            model = self.models.model()
            self._resolved = (model, self.models.fallback(), StoreEpisodeCache(self.store.cache))
        return self._resolved

    def scorer(self) -> SentenceScorer | None:
        """The offline summary's sentence scorer, resolved once (None: lexical)."""
        if not self._scored:
            self._scorer, self._scored = self.models.scorer(), True
        return self._scorer


def _user_of(store: Store, session_id: str) -> str | None:
    try:
        session = store.sessions.get(session_id)
    except MemoirError:
        return None
    return session.user if session is not None else None
