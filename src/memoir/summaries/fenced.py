"""A summary store whose writes first ask ``check`` (which raises to refuse), inside
``hold`` (the session's summary claim, so no other writer is between the check and the
write): what a background job saves through, so a worker whose claim was taken over stops
before it writes over its replacement's summary. ``check`` is the job's fence; this
module knows nothing of jobs."""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Iterable
from contextlib import AbstractContextManager, nullcontext
from datetime import datetime

from memoir.model import Event
from memoir.summaries.port import Conversation, SummaryStore
from memoir.summaries.state import SummaryState

__all__ = ["FencedSummaryStore", "events_digest"]


def events_digest(events: Iterable[Event]) -> str:
    """A fingerprint of events (ordinal, kind, author, text): a background regeneration
    takes it when it starts and refuses to save when the events it read were edited or
    deleted meanwhile (events appended after them change nothing)."""
    digest = hashlib.sha256()
    for e in events:
        digest.update(f"{e.ordinal}\0{e.kind.value}\0{e.author.value}\0".encode())
        digest.update(e.text.encode("utf-8", "surrogatepass"))
        digest.update(b"\1")
    return digest.hexdigest()


class FencedSummaryStore:
    def __init__(
        self,
        inner: SummaryStore,
        check: Callable[[], None],
        hold: Callable[[], AbstractContextManager[None]] = nullcontext,
    ) -> None:
        self._inner = inner
        self._check = check
        self._hold = hold
        self.unit = inner.unit

    def scan(self, *, full: bool = False) -> list[Conversation]:
        return self._inner.scan(full=full)

    def find(self, session_id: str) -> Conversation | None:
        return self._inner.find(session_id)

    def refresh(self, conversation: Conversation) -> Conversation:
        return self._inner.refresh(conversation)

    def write(self, conversation: Conversation, state: SummaryState) -> None:
        with self._hold():
            self._check()
            self._inner.write(conversation, state)

    def last_exchange(self, conversation: Conversation) -> datetime | None:
        return self._inner.last_exchange(conversation)

    def events(self, conversation: Conversation) -> list[Event] | None:
        return self._inner.events(conversation)
