"""A poll of a session's summary, answered from what one statement read
(:meth:`memoir.store.parts.SummariesPart.poll`) wherever the summary lives in the
database: the state, when it was written, and how much of the session there is now.

Where summaries are kept as files beside archived transcripts (``MEMOIR_SUMMARY_STORE``
``files``, the default) a session synced from a transcript has its summary on disk and its
coverage in bytes of that file; only such a session needs the disk. A session fed through
the API has no transcript file, so its summary is a database row there too.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from memoir.model import Harness
from memoir.store.parts.summaries import SummaryPoll
from memoir.summaries.database import row_to_state
from memoir.summaries.state import SummaryState

__all__ = ["PolledSummary", "answered_from_row", "polled_summary"]


def answered_from_row(summary_store: str, harness: Harness) -> bool:
    """Does the poll's row hold the session's whole summary state (else: read the summary
    file beside its archived transcript)? Pure."""
    return summary_store == "database" or harness is Harness.API


@dataclass(frozen=True, slots=True)
class PolledSummary:
    state: SummaryState
    updated_at: datetime | None
    unit: str  # what coverage counts: "events"
    current: int  # how many of them the session has now (0 without a coverage)


def polled_summary(poll: SummaryPoll) -> PolledSummary:
    """The summary a poll read (its session owned by the caller and
    :func:`answered_from_row`)."""
    state = row_to_state(poll.summary)
    updated = poll.summary.updated_at if poll.summary is not None else None
    current = poll.last_ordinal if state.coverage is not None else 0
    return PolledSummary(state, updated, "events", current)
