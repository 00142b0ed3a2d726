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
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from enum import StrEnum

__all__ = ["SUMMARY_FORMAT", "Coverage", "Failure", "SummaryKind", "SummaryState"]

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
