"""Where summaries live: one narrow port, two adapters sharing the decision table.

* :class:`memoir.summaries.files.FileSummaryStore` — ``<home>/archive/<project>/
  <session-id>-summary.txt`` beside the archived transcript (episodic-memory compatible;
  coverage counts archived JSONL bytes).
* :class:`memoir.summaries.database.DatabaseSummaryStore` — the same states in the
  store's summary rows (coverage counts events), for replicas that share no disk and
  sessions fed through the API.

This module defines the port and its values only; :mod:`memoir.summaries.stores` picks
the adapter from ``settings.summary_store`` ("files" | "database").
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Protocol

from memoir.model import Event
from memoir.summaries.state import SummaryState

__all__ = ["Conversation", "SummaryStore"]


@dataclass(frozen=True, slots=True)
class Conversation:
    """One conversation as a scan saw it: its size now and its summary state.

    ``current`` is the archived JSONL size in bytes (files) or the event count
    (database). ``state`` may come from a partial read (the body is not needed to decide);
    :meth:`SummaryStore.refresh` re-reads it in full before anything is written.
    """

    session_id: str
    project: str
    current: int
    state: SummaryState
    archive_path: Path | None = None


class SummaryStore(Protocol):
    unit: str  # "bytes" | "events"

    def scan(self, *, full: bool = False) -> list[Conversation]:
        """Every conversation that may need work (with ``full``, every conversation)."""
        ...

    def find(self, session_id: str) -> Conversation | None: ...

    def refresh(self, conversation: Conversation) -> Conversation:
        """The same conversation re-measured, its state read in full."""
        ...

    def write(self, conversation: Conversation, state: SummaryState) -> None: ...

    def last_exchange(self, conversation: Conversation) -> datetime | None: ...

    def events(self, conversation: Conversation) -> list[Event] | None:
        """The conversation's events, or None when it is not indexed yet."""
        ...
