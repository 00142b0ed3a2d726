"""The decision table, the quiescence gate and the shared failure policy. Pure functions.

``decide(state, current, policy, now_ms)`` says what a sync does with one conversation:

=============================================  =================
state                                          action
=============================================  =================
missing                                        SUMMARIZE
empty (zero exchanges)                         SKIP_EMPTY (forever)
errored, attempts ≥ max                        GIVE_UP
errored, floor elapsed since lastAttempt       RETRY
errored, floor not elapsed                     BACKOFF
legacy (no header, or corrupt header JSON)     STAMP_BASELINE (no model call)
real, resummary attempts ≥ max                 GIVE_UP (permanent, body kept)
real, older summary format, no resummary       RESUMMARIZE (even without growth)
real, older format, resummary floor elapsed    RETRY_RESUMMARY
real, older format, floor not elapsed          BACKOFF
real, current ≤ covered (no growth / shrink)   CURRENT
real, grown, no resummary state                RESUMMARIZE
real, grown, floor elapsed since lastAttempt   RETRY_RESUMMARY
real, grown, floor not elapsed                 BACKOFF
=============================================  =================

Every action that calls a model is further gated by :func:`is_quiescent` (idle for the
window since the last exchange; a missing timestamp counts as idle) before the per-run
limit is applied, and ordered by :func:`queue_rank` (never-summarized first).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from enum import StrEnum

from memoir.config import Settings, hours_to_ms
from memoir.summaries.state import SUMMARY_FORMAT, Failure, SummaryKind, SummaryState

__all__ = [
    "FUTURE_SLACK_MS",
    "Action",
    "SummaryPolicy",
    "decide",
    "is_quiescent",
    "queue_rank",
    "should_retry_after_failure",
]


class Action(StrEnum):
    SUMMARIZE = "summarize"
    RETRY = "retry"
    RESUMMARIZE = "resummarize"
    RETRY_RESUMMARY = "retry_resummary"
    STAMP_BASELINE = "stamp_baseline"
    CURRENT = "current"
    SKIP_EMPTY = "skip_empty"
    BACKOFF = "backoff"
    GIVE_UP = "give_up"

    @property
    def calls_model(self) -> bool:
        return self in _MODEL_ACTIONS


_MODEL_ACTIONS = frozenset(
    {Action.SUMMARIZE, Action.RETRY, Action.RESUMMARIZE, Action.RETRY_RESUMMARY}
)


@dataclass(frozen=True, slots=True)
class SummaryPolicy:
    """The three knobs, already in milliseconds (converted once, by ``hours_to_ms``)."""

    quiescence_ms: int = 3_600_000
    retry_floor_ms: int = 3_600_000
    max_attempts: int = 5

    @classmethod
    def from_settings(cls, settings: Settings) -> SummaryPolicy:
        return cls(
            quiescence_ms=hours_to_ms(settings.summary_quiescence_hours),
            retry_floor_ms=hours_to_ms(settings.summary_error_retry_hours),
            max_attempts=settings.summary_max_attempts,
        )


def should_retry_after_failure(failure: Failure, policy: SummaryPolicy, now_ms: int) -> Action:
    """The one failure policy for first failures and re-summary failures alike:
    give up at the attempt cap (permanent), otherwise wait out the retry floor."""
    if failure.attempts >= policy.max_attempts:
        return Action.GIVE_UP
    if now_ms - failure.last_attempt_ms >= policy.retry_floor_ms:
        return Action.RETRY
    return Action.BACKOFF


def decide(state: SummaryState, current: int, policy: SummaryPolicy, now_ms: int) -> Action:
    """What to do with a conversation whose transcript now measures ``current``."""
    kind = state.kind
    if kind is SummaryKind.MISSING:
        return Action.SUMMARIZE
    if kind is SummaryKind.EMPTY:
        return Action.SKIP_EMPTY
    if kind is SummaryKind.LEGACY:
        return Action.STAMP_BASELINE
    if kind is SummaryKind.ERRORED:
        return should_retry_after_failure(state.failure or Failure(), policy, now_ms)
    # real
    failure = state.failure
    if failure is not None and failure.attempts >= policy.max_attempts:
        return Action.GIVE_UP
    covered = state.coverage.amount if state.coverage is not None else 0
    outdated = state.format < SUMMARY_FORMAT
    if current <= covered and not outdated:
        return Action.CURRENT
    if failure is None:
        return Action.RESUMMARIZE
    verdict = should_retry_after_failure(failure, policy, now_ms)
    return Action.RETRY_RESUMMARY if verdict is Action.RETRY else verdict


# a last exchange further ahead than this is a wrong clock or bogus data, not activity
FUTURE_SLACK_MS = 24 * 3_600_000


def is_quiescent(last_exchange: datetime | None, policy: SummaryPolicy, now_ms: int) -> bool:
    """Idle for the quiescence window since the last exchange (never file mtime).
    A missing timestamp counts as idle so it never blocks summarization, and so does one
    more than a day in the future (else a transcript stamped 2099 would wait forever; a
    few minutes of clock skew still waits)."""
    if last_exchange is None:
        return True
    try:
        last_ms = int(last_exchange.timestamp() * 1000)
    except (OverflowError, OSError, ValueError):
        return True
    if last_ms - now_ms > FUTURE_SLACK_MS:
        return True
    return now_ms - last_ms >= policy.quiescence_ms


def queue_rank(action: Action, state: SummaryState) -> tuple[int, int]:
    """Sort key: never-summarized first, then failed first summaries, then re-summaries,
    then failed re-summaries; oldest attempt first within a tier."""
    tier = {
        Action.SUMMARIZE: 0,
        Action.RETRY: 1,
        Action.RESUMMARIZE: 2,
        Action.RETRY_RESUMMARY: 3,
    }.get(action, 9)
    last = state.failure.last_attempt_ms if state.failure is not None else 0
    return tier, last
