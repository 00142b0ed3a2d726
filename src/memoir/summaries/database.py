"""The database summary adapter: the same states in the store's summary rows.

For deployments whose replicas share no disk and for sessions fed through the API. Coverage
counts events instead of bytes; the decision table is the same.
"""

from __future__ import annotations

from datetime import datetime
from typing import TYPE_CHECKING

from memoir.model import Event
from memoir.store.values import SummaryRow
from memoir.summaries.port import Conversation
from memoir.summaries.state import Coverage, Failure, SummaryKind, SummaryState

if TYPE_CHECKING:
    from memoir.store import Store

__all__ = ["DatabaseSummaryStore", "row_to_state", "state_to_row"]


def row_to_state(row: SummaryRow | None) -> SummaryState:
    if row is None or row.kind == SummaryKind.MISSING.value:
        return SummaryState.missing()
    if row.kind == SummaryKind.EMPTY.value:
        return SummaryState.empty()
    if row.kind == SummaryKind.ERRORED.value:
        return SummaryState(
            SummaryKind.ERRORED,
            failure=Failure(row.attempts, row.last_attempt_ms),
            message=row.message or "",
            model=row.model,
        )
    failure = None
    if row.resummary_attempts is not None:
        failure = Failure(row.resummary_attempts, row.resummary_last_attempt_ms or 0)
    return SummaryState(
        SummaryKind.REAL,
        body=row.body,
        coverage=Coverage(row.covered, row.last_exchange),
        failure=failure,
        model=row.model,
    )


def state_to_row(session_id: str, state: SummaryState) -> SummaryRow:
    if state.kind is SummaryKind.ERRORED:
        failure = state.failure or Failure()
        return SummaryRow(
            session_id,
            "errored",
            attempts=failure.attempts,
            last_attempt_ms=failure.last_attempt_ms,
            message=state.message,
            model=state.model,
        )
    if state.kind in (SummaryKind.REAL, SummaryKind.LEGACY):
        coverage = state.coverage or Coverage(0)
        resummary = state.failure
        return SummaryRow(
            session_id,
            "real",
            body=state.body,
            covered=coverage.amount,
            last_exchange=coverage.last_exchange,
            resummary_attempts=resummary.attempts if resummary else None,
            resummary_last_attempt_ms=resummary.last_attempt_ms if resummary else None,
            model=state.model,
        )
    return SummaryRow(session_id, state.kind.value)


class DatabaseSummaryStore:
    unit = "events"

    def __init__(self, store: Store) -> None:
        self.store = store
        self._last: dict[str, datetime | None] = {}

    def scan(self, *, full: bool = False) -> list[Conversation]:
        rows = {row.session_id: row for row in self.store.summaries.all()}
        out = []
        for info in self.store.sessions.recent():
            sid = info.session.id
            self._last[sid] = info.last_at
            state = row_to_state(rows.get(sid))
            out.append(Conversation(sid, info.session.project, info.events, state))
        return out

    def find(self, session_id: str) -> Conversation | None:
        session = self.store.sessions.get(session_id)
        if session is None:
            return None
        return self.refresh(Conversation(session_id, session.project, 0, SummaryState.missing()))

    def refresh(self, conversation: Conversation) -> Conversation:
        sid = conversation.session_id
        events = self.store.events.of(sid)
        if events:
            stamps = [e.timestamp for e in events if e.timestamp is not None]
            self._last[sid] = max(stamps) if stamps else None
        state = row_to_state(self.store.summaries.get(sid))
        return Conversation(sid, conversation.project, len(events), state)

    def write(self, conversation: Conversation, state: SummaryState) -> None:
        self.store.summaries.put(state_to_row(conversation.session_id, state))

    def last_exchange(self, conversation: Conversation) -> datetime | None:
        sid = conversation.session_id
        if sid not in self._last:
            self.refresh(conversation)
        return self._last.get(sid)

    def events(self, conversation: Conversation) -> list[Event] | None:
        if self.store.sessions.get(conversation.session_id) is None:
            return None
        return self.store.events.of(conversation.session_id)
