"""One memory operation, run to its settlement: the I/O around the pure decisions.

:class:`Runner` takes a :class:`Task` (a queued operation or a pending failure's retry) and
the session's lane state, and ends in exactly one of: a settlement (receipt + items +
cursor, one transaction), a recorded pending failure, a durable denial, or nothing at all
when policy is transiently unavailable (the operation stays queued and eligible).

Order of a run: policy before reading events → read ``(cursor, context_through]`` → the
evidence slice → no-op without a model call when there is no user text (or a remember's
text carries a secret) → the envelope (latest policy-safe prior compaction summary + the
slice + the prompt) preflighted whole against the frozen window, split once in two when it
does not fit → per segment at most three model calls → validation → policy again before
commit → settle. The lane (:mod:`memoir.memory.memories`) holds the session's claim around it.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from typing import TYPE_CHECKING

from memoir.errors import MemoirError
from memoir.llm import request_tokens
from memoir.llm.port import AuthError, Model, TokenCounter, holding_usage
from memoir.memory.decisions import (
    OVERSIZED,
    VALIDATION,
    FailureAction,
    PolicyAction,
    PolicyStage,
    after_failure,
    failure_class,
    on_denied,
    policy_decision,
    precheck,
    receipt_of,
    skip_denied,
)
from memoir.memory.evidence import (
    EvidenceSlice,
    build_slice,
    coverage_hash,
    exchange_end,
    turn_text,
)
from memoir.memory.item_rows import (
    DenialRow,
    MemoryItemRow,
    ReceiptRow,
    Settlement,
    evidence_fingerprint,
)
from memoir.memory.item_sql import by_operation_plan, project_disabled_plan, put_vectors_plan
from memoir.memory.prompt import PROMPT_ID, parse_proposal
from memoir.memory.recall import ItemEmbedder
from memoir.memory.request import (
    CallStep,
    Envelope,
    PriorSummary,
    next_call,
    preflight,
    safe_summary,
    split_range,
    without_tail,
)
from memoir.memory.rows import (
    MemoryConfig,
    MemoryParts,
    Outcome,
    Task,
    earlier_turns,
    failed_work,
    forgotten_quotes,
    item_row,
    known_items,
    near_duplicates,
    pending_of,
    pending_row,
)
from memoir.memory.validate import validate_proposal
from memoir.memory.values import (
    ExtractionError,
    MemoryItem,
    PendingFailure,
    Proposal,
    Range,
    ReceiptOutcome,
    Trigger,
)
from memoir.model import Event, Session, SessionFlags
from memoir.store.parts import events_plan, last_ordinal_plan
from memoir.store.parts.sessions import session_plan
from memoir.store.parts.summaries import checkpoints_at_or_below_plan

if TYPE_CHECKING:
    import numpy as np

__all__ = ["MemoryConfig", "MemoryParts", "Outcome", "Runner", "Task"]

log = logging.getLogger(__name__)


class _Failed(ExtractionError):
    def __init__(self, failure: str, message: str) -> None:
        super().__init__(message)
        self.failure = failure


@dataclass
class _Run:
    """One run's state: the session and its lane rows as read when it started."""

    task: Task
    session: Session | None
    flags: SessionFlags | None
    cursor: int
    pending: PendingFailure | None
    denied: tuple[Range, ...]
    calls: int = 0
    tokens: int = 0
    events: dict[int, Event] = field(default_factory=dict)
    segment: Envelope | None = None  # the part being run (a split runs two)


class Runner:
    def __init__(
        self,
        parts: MemoryParts,
        model: Model,
        counter: TokenCounter,
        config: MemoryConfig | None = None,
        *,
        clock: type[datetime] = datetime,
        embedder: Callable[[], ItemEmbedder | None] | None = None,
    ) -> None:
        self.parts = parts
        self.model = model
        self.counter = counter
        self.config = config or MemoryConfig()
        self._clock = clock
        self._embedder = embedder  # loaded on first use: near-duplicates, item vectors

    # the state of a session's lane -------------------------------------------------------
    def pending(self, session_id: str) -> PendingFailure | None:
        row = self.parts.memory.pending(session_id)
        return None if row is None else pending_of(row)

    def flags(self, session: Session | None) -> SessionFlags | None:
        """The session's memory policy now: its flags, with its project's switch."""
        if session is None:
            return None
        if self.parts.db.query(project_disabled_plan(session.project)):
            return replace(session.flags, memory_disabled=True)
        return session.flags

    def _start(self, task: Task) -> _Run:
        sid = task.work.session_id
        session = self.parts.db.query(session_plan(sid))
        denied = tuple(
            Range.covering(d.range_after, d.range_through) for d in self.parts.memory.denials(sid)
        )
        return _Run(
            task,
            session,
            self.flags(session),
            self.parts.memory.cursor(sid),
            self.pending(sid),
            denied,
        )

    # one task --------------------------------------------------------------------------
    def run(self, task: Task) -> Outcome:
        run = self._start(task)
        verdict = policy_decision(task.disposition, run.flags, PolicyStage.BEFORE_READ)
        if verdict.action is PolicyAction.UNAVAILABLE:
            return Outcome(waiting=verdict.reason)
        start = skip_denied(run.cursor, run.denied)
        range_ = self._range(run, start)
        if range_ is None and start > run.cursor and self._range(run, run.cursor) is not None:
            # a denial marker made durable before a crash: settle as the denial would have
            reason = self._marker_reason(task.work.session_id, run.cursor)
            return self._settle(
                run,
                ReceiptOutcome.POLICY_DENIED,
                Range(run.cursor, start, start),
                reason=reason,
                cursor_to=start,
            )
        if range_ is None:
            return self._settle(
                run,
                ReceiptOutcome.SKIPPED,
                Range(start, start, start),
                reason="already_covered",
                cursor_to=start,
            )
        if verdict.action is PolicyAction.DENY:
            return self._deny(run, range_, verdict.reason or "policy_denied")
        events = self.parts.db.query(
            events_plan(
                task.work.session_id, after=range_.after_cursor, upto=range_.context_through
            )
        )
        run.events = {e.ordinal: e for e in events}
        slice_ = build_slice(events, range_)
        turn = task.work.requested_turn
        asked = turn_text(slice_, turn) if turn is not None else None
        why = precheck(slice_, task.work.trigger, asked)
        if why is not None:
            return self._settle(
                run, ReceiptOutcome.NO_OP, range_, reason=why, cursor_to=range_.coverage_through
            )
        try:
            return self._extract(run, slice_)
        except AuthError:
            raise  # a bad key or no credit is the setting's fault, not the range's
        except (MemoirError, ValueError) as exc:
            return self._failed(run, range_, exc)

    def _marker_reason(self, session_id: str, cursor: int) -> str:
        for d in self.parts.memory.denials(session_id):
            if d.range_after <= cursor < d.range_through:
                return d.reason
        return "policy_denied"

    def _range(self, run: _Run, start: int) -> Range | None:
        """The range this task covers, or None when there is nothing new to cover."""
        work, task = run.task.work, run.task
        if work.range is not None:  # a retry: exactly the range that failed
            return work.range
        last = self.parts.db.query(last_ordinal_plan(work.session_id))
        if work.requested_turn is not None:
            turn = events_plan(work.session_id, after=work.requested_turn - 1, upto=last)
            through = exchange_end(self.parts.db.query(turn), work.requested_turn)
            after = min(start, work.requested_turn - 1)
            return Range.covering(after, max(after, through), through)
        through = min(task.boundary if task.boundary is not None else last, last)
        if through <= start:
            return None
        context = task.context if task.context is not None else through
        context = max(through, min(context, last, through + self.config.context_tail))
        return Range(start, through, context)

    # the model part ---------------------------------------------------------------------
    def _extract(self, run: _Run, slice_: EvidenceSlice) -> Outcome:
        task = run.task
        envelope = Envelope(
            session_id=task.work.session_id,
            trigger=task.work.trigger,
            anchor=task.work.anchor,
            slice=slice_,
            summary=self._summary(run, slice_.range.after_cursor),
            requested_turn=task.work.requested_turn,
            note=task.note,
            checkpoint_id=task.work.checkpoint_id,
            known=self.parts.db.snapshot(known_items(run.session, task.work.session_id, slice_)),
        )
        window = task.window or self.config.window
        reserve = self._reserve(window)
        if preflight(envelope, window, reserve, self.counter).fits:
            return self._segment(run, envelope, final=True)
        split = split_range(envelope, window, reserve, self.counter)
        if split is None:  # the retained tail is only interpretation: without it, then
            bare = without_tail(envelope)
            if preflight(bare, window, reserve, self.counter).fits:
                return self._segment(run, bare, final=True)
            split = split_range(bare, window, reserve, self.counter)
        if split is None:
            raise _Failed(OVERSIZED, f"the range does not fit a {window}-token window, even in two")
        first = self._segment(run, split.first, final=False)
        run.cursor = max(run.cursor, split.first.range.coverage_through)
        if not first.settled:  # pragma: no cover - a segment settles or raises
            return first
        return self._segment(run, split.second, final=True)

    def _reserve(self, window: int) -> int:
        """Tokens kept for the answer: the configured reserve, at most a quarter of a
        small window (a compaction for a 4k-token model freezes a 4k window)."""
        return min(self.config.output_reserve, max(256, window // 4))

    def _summary(self, run: _Run, before: int) -> str | None:
        """The latest policy-safe summary before the range: read from the few eligible
        checkpoints at or below the bound a denial sets (a summary carries everything up
        to its watermark), not from every checkpoint of the session."""
        bound = min([before, *(d.after_cursor for d in run.denied if d.after_cursor < before)])
        rows = self.parts.db.query(checkpoints_at_or_below_plan(run.task.work.session_id, bound))
        candidates = [
            PriorSummary(r.id, r.memory_boundary, str(r.data.get("summary") or ""), True)
            for r in rows
        ]
        chosen = safe_summary(candidates, before, run.denied)
        return chosen.text if chosen is not None else None

    def _segment(self, run: _Run, envelope: Envelope, *, final: bool) -> Outcome:
        """At most three model calls, validation, the policy re-check, settlement."""
        run.segment = envelope
        self._recheck(run, PolicyStage.BEFORE_MODEL)
        proposal: Proposal | None = None
        localized = False
        while True:
            step = next_call(run.calls, proposal.status if proposal else None, localized=localized)
            if step is CallStep.STOP:
                break
            if step is CallStep.LOCALIZE:
                sid = run.task.work.session_id
                turns = self.parts.db.query(
                    earlier_turns(sid, envelope.range, proposal, run.denied)
                )
                envelope = replace(envelope, localization=turns)
                localized = True
            request = envelope.request(self._reserve(run.task.window or self.config.window))
            run.tokens += request_tokens(request, self.counter)
            run.calls += 1
            with holding_usage(self.parts.usage) as held:  # written here, off the call
                try:
                    proposal = parse_proposal(self.model.complete(request).text)
                finally:
                    self.parts.memory.record_usage(held)
        assert proposal is not None
        forgotten = self.parts.db.snapshot(
            forgotten_quotes(run.session, run.task.work.session_id, proposal)
        )
        validation = validate_proposal(
            proposal,
            envelope.slice,
            envelope.trigger,
            known=envelope.known,
            stamps={o: e.timestamp for o, e in run.events.items()},
            forgotten=lambda q: (
                evidence_fingerprint(run.task.work.session_id, q.ordinal, q.text) in forgotten
            ),
            now=self._clock.now(UTC),
        )
        if validation.failed:
            raise _Failed(
                VALIDATION, f"a requested item failed validation: {validation.failure_reason}"
            )
        self._recheck(run, PolicyStage.BEFORE_COMMIT)
        outcome, reason = receipt_of(envelope.trigger, proposal.status, validation)
        items = tuple(
            self._item(run, envelope, n, item) for n, item in enumerate(validation.accepted)
        )
        embedder = self._embedder() if self._embedder is not None and items else None
        items, vectors, made = self.parts.db.query(
            near_duplicates(self.parts.items, embedder, items)
        )
        if made and embedder is not None:  # live items that had no vector: theirs now
            self.parts.db.apply(put_vectors_plan(embedder.name, made))
        return self._settle(
            run,
            outcome,
            envelope.range,
            reason=reason,
            cursor_to=envelope.range.coverage_through,
            items=items,
            dropped=validation.dropped,
            operation=envelope.operation_id if not final else None,
            refused_updates=validation.refused_updates,
            vectors=(embedder.name, vectors) if embedder is not None and vectors else None,
        )

    def _recheck(self, run: _Run, stage: PolicyStage) -> None:
        """Policy again (it may have changed since the run began): ``_PolicyStop`` unless
        the run may go on."""
        session = self.parts.db.query(session_plan(run.task.work.session_id))
        verdict = policy_decision(run.task.disposition, self.flags(session), stage)
        if verdict.action is not PolicyAction.PROCEED:
            raise _PolicyStop(verdict.action, verdict.reason or "policy_denied")

    # endings ------------------------------------------------------------------------------
    def _item(self, run: _Run, envelope: Envelope, n: int, item: MemoryItem) -> MemoryItemRow:
        incidental = envelope.trigger is Trigger.INCIDENTAL
        return item_row(
            item,
            operation=envelope.operation_id if incidental else run.task.work.operation_id,
            n=n,
            session_id=run.task.work.session_id,
            project=run.session.project if run.session is not None else "",
            events=run.events,
            at=self._clock.now(UTC),
            owner=run.session.user if run.session is not None else "local",
        )

    def _settle(
        self,
        run: _Run,
        outcome: ReceiptOutcome,
        range_: Range,
        *,
        reason: str | None = None,
        cursor_to: int | None = None,
        items: tuple[MemoryItemRow, ...] = (),
        dropped: int = 0,
        operation: str | None = None,
        clear: bool = False,
        refused_updates: tuple[str, ...] = (),
        vectors: tuple[str, dict[str, np.ndarray]] | None = None,
    ) -> Outcome:
        """Write the outcome of the task (or, with ``operation``, of a split's first part)."""
        work = run.task.work
        op = operation or work.operation_id
        move = cursor_to is not None and cursor_to > run.cursor
        receipt = ReceiptRow(
            operation_id=op,
            session_id=work.session_id,
            trigger=(Trigger.INCIDENTAL if operation else work.trigger).value,
            outcome=outcome.value,
            range_after=range_.after_cursor,
            range_through=range_.coverage_through,
            created_at=self._clock.now(UTC),
            reason=reason or "",
            checkpoint_id=work.checkpoint_id,
            prompt=PROMPT_ID if run.calls else "",
            model=self.model.name if run.calls else "",
            items=len(items),
            dropped=dropped,
            model_calls=run.calls,
            input_tokens=run.tokens,
            data={
                "context_through": range_.context_through,
                **({"refused_updates": list(refused_updates)} if refused_updates else {}),
            },
        )
        settled = Settlement(
            receipt=receipt,
            items=items,
            cursor_from=run.cursor if move else None,
            cursor_to=cursor_to if move else None,
            clear_pending=clear or (work.retry and operation is None),
            done_ops=(work.operation_id,) if operation is None else (),
        )
        self.parts.memory.settle(settled)
        run.calls = run.tokens = 0
        if vectors is not None:  # the new items' vectors, for recall (merged ones had theirs)
            self.parts.db.apply(put_vectors_plan(*vectors))
        if items:  # as stored: an item may have merged into one saved before
            items = tuple(self.parts.db.snapshot(by_operation_plan(op)))
        return Outcome(receipt=receipt, items=items)

    def _deny(self, run: _Run, range_: Range, reason: str) -> Outcome:
        """A durable denial marker first; then the cursor skips the range unless a pending
        failure must stay ahead of it (an explicit one is never consumed by a policy skip)."""
        work = run.task.work
        self.parts.memory.deny(
            DenialRow(
                work.session_id,
                range_.after_cursor,
                range_.coverage_through,
                reason,
                self._clock.now(UTC),
                work.checkpoint_id,
            )
        )
        plan = on_denied(run.pending, range_)
        if work.retry and not plan.clear_pending:
            return Outcome(waiting="denied_behind_explicit_pending")
        return self._settle(
            run,
            ReceiptOutcome.POLICY_DENIED,
            range_,
            reason=reason,
            cursor_to=plan.advance_to,
            clear=plan.clear_pending,
        )

    def _failed(self, run: _Run, range_: Range, exc: BaseException) -> Outcome:
        if isinstance(exc, _PolicyStop):
            if exc.action is PolicyAction.UNAVAILABLE:
                return Outcome(waiting=exc.reason)
            return self._deny(run, range_, exc.reason)
        failure = exc.failure if isinstance(exc, _Failed) else failure_class(exc)
        work = failed_work(run.segment, run.task.work, range_)
        digest = coverage_hash(run.events.values(), range_)
        decision = after_failure(run.pending, work, digest, failure)
        message = str(exc).splitlines()[0][:300] if str(exc) else type(exc).__name__
        log.info("memory extraction of %s failed (%s): %s", work.session_id, failure, message)
        if decision.action is FailureAction.DISCARD:
            assert decision.receipt is not None and decision.advance_to is not None
            run.task = replace(run.task, work=replace(work, retry=True))
            out = self._settle(
                run, decision.receipt, range_, reason=failure, cursor_to=decision.advance_to
            )
            return replace(out, error=message)
        if decision.action is FailureAction.RECORD_PENDING:
            assert decision.pending is not None
            row = pending_row(decision.pending, message, self._clock.now(UTC))
            own = work.operation_id == run.task.work.operation_id  # else a split's first part:
            self.parts.memory.fail(row, drop_op=run.task.work.operation_id if own else None)
            return Outcome(pending=row, error=message)
        return Outcome(waiting="behind_pending", error=message)


class _PolicyStop(ExtractionError):
    def __init__(self, action: PolicyAction, reason: str) -> None:
        super().__init__(reason)
        self.action = action
        self.reason = reason
