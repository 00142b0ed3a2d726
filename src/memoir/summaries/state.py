"""The summary-state value every adapter maps to, and the decision table's inputs.

A conversation's summary is in exactly one of five kinds:

============  =================================================================
``missing``   never processed: queue it
``empty``     the conversation had zero exchanges: skip it forever
``real``      a summary body with its coverage (and, after a failed re-summary,
              the failure state of the re-summary attempts)
``errored``   every attempt so far failed (the error sentinel): failure state
``legacy``    a body without a coverage header (episodic-memory ≤ 1.4.2, or a
              corrupt header): gets a current-size baseline stamped, no model call
============  =================================================================

Coverage counts archived JSONL bytes (archive-file adapter) or events (database adapter);
the decision table only compares numbers, so it does not care which.

The decision table, the quiescence gate and the shared failure policy. Pure functions.

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

The ``<session-id>-summary.txt`` format, compatible with episodic-memory.

Real summary (first line is the coverage header, the rest is the body)::

    __COVERAGE__ {"bytes":8237,"lastExchange":"2025-09-19T17:36:33.487Z","schema":1}
    <body>

after a failed re-summary the header gains ``"resummary":{"attempts":N,"lastAttempt":<ms>}``.

Error sentinel (no real summary yet)::

    __ERRORED__
    {"attempts":2,"lastAttempt":1718040000000}
    <message>

The legacy episodic-memory v1.4.2 sentinel's second line is an ISO timestamp (read as
attempts 0, lastAttempt from it); any other second line reads as ``{0, 0}`` (retried, never
lost). An empty file is a permanent skip. A body without a header (or with a header whose
JSON is corrupt, which is stripped) is a legacy summary. Pure: strings in, strings out.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from enum import StrEnum
from typing import Any

from memoir.config import Settings, hours_to_ms

__all__ = [
    "COVERAGE_PREFIX",
    "ERROR_MARKER",
    "FUTURE_SLACK_MS",
    "SUMMARY_FORMAT",
    "Coverage",
    "Failure",
    "SummaryAction",
    "SummaryKind",
    "SummaryPolicy",
    "SummaryState",
    "decide",
    "format_error_sentinel",
    "format_summary_file",
    "is_quiescent",
    "parse_summary_file",
    "parse_summary_header",
    "queue_rank",
    "should_retry_after_failure",
]

# The offline summary's format: 1 opened with a keyword list ("This conversation was
# about …", an episodic merge's "The conversation was about …"); 2 opens with the goal and
# how it ended (issue 38). A body of an older format is redone (policy.decide:
# RESUMMARIZE), bounded per run like any re-summary. The format is read from the body
# itself (its opening is unmistakable), so the episodic-memory-compatible file header and
# the database row need no new field, and summaries a remote model wrote are left alone.
SUMMARY_FORMAT = 2
_FORMAT_1_OPENINGS = ("This conversation was about ", "The conversation was about ")


class SummaryKind(StrEnum):
    MISSING = "missing"
    EMPTY = "empty"
    REAL = "real"
    ERRORED = "errored"
    LEGACY = "legacy"


@dataclass(frozen=True, slots=True)
class Failure:
    """Failed attempts so far and when the last one happened (epoch milliseconds)."""

    attempts: int = 0
    last_attempt_ms: int = 0


@dataclass(frozen=True, slots=True)
class Coverage:
    """How much of the transcript a summary reflects.

    ``amount`` is the archived JSONL byte size (files) or the event count (database).
    ``last_exchange`` is the ISO timestamp of the last exchange covered (diagnostic).
    """

    amount: int
    last_exchange: str | None = None
    schema: int = 1


@dataclass(frozen=True, slots=True)
class SummaryState:
    """One conversation's summary as the decision table sees it.

    ``failure`` is the error sentinel's state for ``errored`` and the re-summary state
    (``resummary`` in the file header) for ``real``; None when nothing has failed.
    """

    kind: SummaryKind
    body: str = ""
    coverage: Coverage | None = None
    failure: Failure | None = None
    message: str | None = None
    model: str | None = None
    written_format: int | None = None  # known without the body (the scan cache's rows)

    @classmethod
    def missing(cls) -> SummaryState:
        return cls(SummaryKind.MISSING)

    @classmethod
    def empty(cls) -> SummaryState:
        return cls(SummaryKind.EMPTY)

    @classmethod
    def real(
        cls,
        body: str,
        amount: int,
        last_exchange: str | None = None,
        *,
        model: str | None = None,
    ) -> SummaryState:
        return cls(
            SummaryKind.REAL, body=body, coverage=Coverage(amount, last_exchange), model=model
        )

    @classmethod
    def errored(cls, attempts: int, last_attempt_ms: int, message: str = "") -> SummaryState:
        return cls(SummaryKind.ERRORED, failure=Failure(attempts, last_attempt_ms), message=message)

    @property
    def format(self) -> int:
        """The summary format of the body (:data:`SUMMARY_FORMAT`): read from the body, or
        as recorded when the body was not kept (``written_format``)."""
        if self.written_format is not None:
            return self.written_format
        return 1 if self.body.lstrip().startswith(_FORMAT_1_OPENINGS) else SUMMARY_FORMAT

    @property
    def has_body(self) -> bool:
        """A real or legacy summary with text a person can read."""
        return self.kind in (SummaryKind.REAL, SummaryKind.LEGACY) and bool(self.body.strip())

    def failed_once_more(self, now_ms: int, message: str) -> SummaryState:
        """The state after one more failed attempt: a prior body is kept (the attempt is
        recorded in its re-summary state); otherwise an error sentinel with the count."""
        attempts = (self.failure.attempts if self.failure else 0) + 1
        if self.kind in (SummaryKind.REAL, SummaryKind.LEGACY):
            coverage = self.coverage if self.coverage is not None else Coverage(0)
            return replace(
                self, kind=SummaryKind.REAL, coverage=coverage, failure=Failure(attempts, now_ms)
            )
        return SummaryState.errored(attempts, now_ms, message)

    def with_baseline(self, amount: int) -> SummaryState:
        """A legacy body stamped with a current-size baseline (no model call)."""
        return SummaryState(SummaryKind.REAL, body=self.body, coverage=Coverage(amount))


COVERAGE_PREFIX = "__COVERAGE__ "
ERROR_MARKER = "__ERRORED__"
COVERAGE_SCHEMA = 1


def _int(value: Any) -> int | None:
    """A JSON number as a non-negative int (bools and non-finite values rejected)."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return max(0, int(value))


def _failure(value: Any) -> Failure | None:
    if not isinstance(value, dict):
        return None
    return Failure(_int(value.get("attempts")) or 0, _int(value.get("lastAttempt")) or 0)


def parse_summary_header(line: str) -> tuple[Coverage, Failure | None] | None:
    """Coverage (and re-summary failure state) from a header line; None when corrupt."""
    if not line.startswith(COVERAGE_PREFIX):
        return None
    try:
        data = json.loads(line[len(COVERAGE_PREFIX) :])
    except ValueError:
        return None
    if not isinstance(data, dict) or (amount := _int(data.get("bytes"))) is None:
        return None
    last = data.get("lastExchange")
    schema = _int(data.get("schema"))
    coverage = Coverage(amount, last if isinstance(last, str) else None, schema or COVERAGE_SCHEMA)
    failure = _failure(data["resummary"]) if "resummary" in data else None
    if "resummary" in data and failure is None:
        failure = Failure(0, 0)  # unreadable failure state: retried, never lost
    return coverage, failure


def _parse_sentinel(content: str) -> SummaryState:
    rest = content[len(ERROR_MARKER) + 1 :] if content != ERROR_MARKER else ""
    second, _, message = rest.partition("\n")
    second = second.strip()
    message = message[:-1] if message.endswith("\n") else message
    failure = Failure(0, 0)
    if second.startswith("{"):
        try:
            failure = _failure(json.loads(second)) or Failure(0, 0)
        except ValueError:
            failure = Failure(0, 0)
    elif second:
        failure = Failure(0, _iso_to_ms(second) or 0)
    return SummaryState(SummaryKind.ERRORED, failure=failure, message=message)


def _iso_to_ms(text: str) -> int | None:
    try:
        moment = datetime.fromisoformat(text.strip())
    except ValueError:
        return None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    return int(moment.timestamp() * 1000)


def parse_summary_file(content: str | None) -> SummaryState:
    """The state of a summary file's content (None: the file does not exist)."""
    if content is None:
        return SummaryState.missing()
    if content == "":
        return SummaryState.empty()
    if content == ERROR_MARKER or content.startswith(ERROR_MARKER + "\n"):
        return _parse_sentinel(content)
    if not content.startswith(COVERAGE_PREFIX):
        return SummaryState(SummaryKind.LEGACY, body=content)
    header, _, body = content.partition("\n")
    parsed = parse_summary_header(header.rstrip("\r"))
    if parsed is None:  # corrupt header: stripped, never leaked into the body
        return SummaryState(SummaryKind.LEGACY, body=body)
    coverage, failure = parsed
    return SummaryState(SummaryKind.REAL, body=body, coverage=coverage, failure=failure)


def format_error_sentinel(failure: Failure, message: str) -> str:
    line = json.dumps(
        {"attempts": failure.attempts, "lastAttempt": failure.last_attempt_ms},
        separators=(",", ":"),
    )
    return f"{ERROR_MARKER}\n{line}\n{message}\n"


def format_summary_file(state: SummaryState) -> str:
    """Serialise a state as a file (``missing`` has no file and is rejected)."""
    if state.kind is SummaryKind.EMPTY:
        return ""
    if state.kind is SummaryKind.ERRORED:
        return format_error_sentinel(state.failure or Failure(), state.message or "")
    if state.kind is SummaryKind.LEGACY:
        return state.body
    if state.kind is SummaryKind.REAL:
        coverage = state.coverage or Coverage(0)
        header: dict[str, Any] = {"bytes": coverage.amount}
        if coverage.last_exchange is not None:
            header["lastExchange"] = coverage.last_exchange
        header["schema"] = coverage.schema
        if state.failure is not None:
            header["resummary"] = {
                "attempts": state.failure.attempts,
                "lastAttempt": state.failure.last_attempt_ms,
            }
        text = json.dumps(header, separators=(",", ":"), ensure_ascii=False)
        return f"{COVERAGE_PREFIX}{text}\n{state.body}"
    raise ValueError(f"a {state.kind} summary has no file")


class SummaryAction(StrEnum):
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
    {
        SummaryAction.SUMMARIZE,
        SummaryAction.RETRY,
        SummaryAction.RESUMMARIZE,
        SummaryAction.RETRY_RESUMMARY,
    }
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


def should_retry_after_failure(
    failure: Failure, policy: SummaryPolicy, now_ms: int
) -> SummaryAction:
    """The one failure policy for first failures and re-summary failures alike:
    give up at the attempt cap (permanent), otherwise wait out the retry floor."""
    if failure.attempts >= policy.max_attempts:
        return SummaryAction.GIVE_UP
    if now_ms - failure.last_attempt_ms >= policy.retry_floor_ms:
        return SummaryAction.RETRY
    return SummaryAction.BACKOFF


def decide(state: SummaryState, current: int, policy: SummaryPolicy, now_ms: int) -> SummaryAction:
    """What to do with a conversation whose transcript now measures ``current``."""
    kind = state.kind
    if kind is SummaryKind.MISSING:
        return SummaryAction.SUMMARIZE
    if kind is SummaryKind.EMPTY:
        return SummaryAction.SKIP_EMPTY
    if kind is SummaryKind.LEGACY:
        return SummaryAction.STAMP_BASELINE
    if kind is SummaryKind.ERRORED:
        return should_retry_after_failure(state.failure or Failure(), policy, now_ms)
    # real
    failure = state.failure
    if failure is not None and failure.attempts >= policy.max_attempts:
        return SummaryAction.GIVE_UP
    covered = state.coverage.amount if state.coverage is not None else 0
    outdated = state.format < SUMMARY_FORMAT
    if current <= covered and not outdated:
        return SummaryAction.CURRENT
    if failure is None:
        return SummaryAction.RESUMMARIZE
    verdict = should_retry_after_failure(failure, policy, now_ms)
    return SummaryAction.RETRY_RESUMMARY if verdict is SummaryAction.RETRY else verdict


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


def queue_rank(action: SummaryAction, state: SummaryState) -> tuple[int, int]:
    """Sort key: never-summarized first, then failed first summaries, then re-summaries,
    then failed re-summaries; oldest attempt first within a tier."""
    tier = {
        SummaryAction.SUMMARIZE: 0,
        SummaryAction.RETRY: 1,
        SummaryAction.RESUMMARIZE: 2,
        SummaryAction.RETRY_RESUMMARY: 3,
    }.get(action, 9)
    last = state.failure.last_attempt_ms if state.failure is not None else 0
    return tier, last
