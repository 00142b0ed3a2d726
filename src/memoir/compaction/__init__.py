"""Context compaction for agent loops: never stuck, never corrupting the context. This
module holds the front door, :class:`Compactor`, and re-exports the pure parts.

The compactor decides, summarizes or falls back, persists the checkpoint and traces it:
a summary of the work so far and the most recent messages verbatim (the tail budget),
oversized messages kept as stand-ins that say what they were. It is the one place that
calls the model and the store::

    compactor = Compactor(model, store=memoir.store)
    if compactor.should_compact(messages, window=32_000, session_id=sid):
        result = compactor.compact(messages, window=32_000, session_id=sid)
        messages = result.messages

With a store and a session id, later turns pass the full history again: the latest
checkpoint is replayed (summary + messages after its watermark) instead of re-compacting,
and the next compaction rolls forward from its summary plus only the newly covered
messages. Without them, keep ``result.messages`` as the history and append to it.

The pure parts live next door and are usable on their own: :func:`validate_sequence`
(what the OpenAI and Anthropic APIs accept, ``sequence``), :class:`Budget` (threshold,
output budget, per-message cap, tail budget, ``plan``), the stand-ins (``standin``), the
summary validation (``request``) and the event converter (``values``).
"""

from __future__ import annotations

import dataclasses
import json
import logging
from bisect import bisect_left, bisect_right
from collections.abc import Callable, Sequence
from datetime import UTC, datetime, timedelta
from typing import Any, cast

from memoir.compaction.job import (
    CompactionRun,
    RunNote,
    RunOutcome,
    summary_outcome,
    truncate_outcome,
)
from memoir.compaction.plan import (
    DEFAULT_RATIO,
    DEFAULT_TAIL_RATIO,
    LADDER,
    MESSAGE_CAP_FLOOR,
    Budget,
    head_text,
    ladder_after,
    message_cap,
    output_budget,
    pin_index,
    threshold_for,
)
from memoir.compaction.request import summary_problem
from memoir.compaction.sequence import (
    MESSAGE_FRAME_TOKENS,
    Message,
    MessageCounter,
    content_tokens,
    join_same_role,
    leading_system_count,
    shorten_runs,
    tidy,
    validate_sequence,
)
from memoir.compaction.standin import StandIns, stand_in
from memoir.compaction.values import (
    ELIGIBLE,
    POLICY_DENIED,
    CompactionResult,
    History,
    Omission,
    Replay,
    Strategy,
    disposition,
    fingerprint,
    latest_checkpoint,
    messages_from_events,
    new_checkpoint,
    replay_point,
)
from memoir.config import Settings
from memoir.errors import CompactionError, MemoirError
from memoir.llm.port import Model, TokenCounter
from memoir.model import Event, SessionFlags
from memoir.store.port import Store
from memoir.store.values import CheckpointRow, TraceRow

__all__ = [
    "ELIGIBLE",
    "LADDER",
    "MESSAGE_CAP_FLOOR",
    "POLICY_DENIED",
    "Budget",
    "CompactionResult",
    "Compactor",
    "History",
    "Omission",
    "Strategy",
    "disposition",
    "ladder_after",
    "message_cap",
    "messages_from_events",
    "output_budget",
    "stand_in",
    "summary_problem",
    "threshold_for",
    "validate_sequence",
]


# the compactor ------------------------------------------------------------------------


_IN_A_ROW = ("two user turns in a row", "two assistant messages in a row")

log = logging.getLogger("memoir.compaction")

_JOIN_MARGIN = 8  # tokens a joined head may cost beyond the sum of its parts


class Compactor:
    """Context compaction for agent loops; thread-compatible, one per agent loop."""

    def __init__(
        self,
        model: Model | None,
        *,
        counter: TokenCounter | None = None,
        ratio: float = DEFAULT_RATIO,
        ratio_source: str = "default",
        store: Store | None = None,
        tail_budget: int | None = None,
        tail_ratio: float = DEFAULT_TAIL_RATIO,
        clock: Callable[[], datetime] | None = None,
        on_checkpoint: Callable[[CheckpointRow], None] | None = None,
    ) -> None:
        self.model = model
        # told of each persisted checkpoint (memory extraction dispatches from it); it
        # must return at once — a compaction never waits for it, and never fails by it
        self.on_checkpoint = on_checkpoint
        self.tokens = MessageCounter(counter)
        self.ratio = ratio
        self.ratio_source = ratio_source
        self.store = store
        self.tail_budget = tail_budget  # tokens; overrides tail_ratio (a share of the threshold)
        self.tail_ratio = tail_ratio
        self.clock = clock or (lambda: datetime.now(UTC))
        self._latest: dict[str, CheckpointRow | None] = {}
        self._fingerprints: dict[int, tuple[Message, object, str]] = {}
        self._replay_extra: dict[str, int] = {}

    @classmethod
    def from_settings(
        cls, settings: Settings, model: Model | None, *, store: Store | None = None, **kw: Any
    ) -> Compactor:
        """Threshold ratio from ``settings.compact_threshold_ratio`` and its origin, the
        tail's share of the threshold from ``settings.compact_tail_ratio``."""
        source = settings.origins.get("compact_threshold_ratio", "default")
        kw.setdefault("tail_ratio", settings.compact_tail_ratio)
        return cls(
            model, ratio=settings.compact_threshold_ratio, ratio_source=source, store=store, **kw
        )

    def budget(self, window: int) -> Budget:
        return Budget.of(window, self.ratio, self.ratio_source, self.tail_budget, self.tail_ratio)

    # -- the cheap decision ------------------------------------------------------------

    def should_compact(
        self,
        messages: Sequence[Message],
        *,
        window: int,
        session_id: str | None = None,
        positions: Sequence[int] | None = None,
    ) -> bool:
        """Would the context (replayed from the latest checkpoint when there is one) reach
        the threshold? A walk over cached counts; errs towards compacting."""
        threshold = self.budget(window).threshold
        pos = _positions(messages, positions)
        replay = self._replay(session_id, messages, pos)
        if replay is None:
            return self.tokens.total(messages) >= threshold
        return self._replay_estimate(messages, pos, replay) >= threshold

    # -- compaction --------------------------------------------------------------------

    def compact(
        self,
        messages: Sequence[Message],
        *,
        window: int,
        session_id: str | None = None,
        positions: Sequence[int] | None = None,
        flags: SessionFlags | None = None,
    ) -> CompactionResult:
        """The context to send next. Under the threshold: the messages unchanged (or the
        replayed checkpoint). Otherwise a summary of the older messages and the verbatim
        tail (or only stand-ins for the oversized ones, or the truncate backstop); either
        way a valid sequence strictly below the threshold. The messages are checked the
        same way at any size: an invalid sequence is refused even when it fits."""
        budget = self.budget(window)
        msgs = _as_messages(messages)
        pos = _positions(msgs, positions)
        tidied, tidied_pos = tidy(msgs, pos)
        runs = _check(tidied, tidied_pos)
        raw = dict(zip(pos, msgs, strict=True))  # checkpoints fingerprint what callers pass
        replay = self._replay(session_id, msgs, pos)
        job, context = self._start(msgs, pos, budget, session_id, replay)
        before = self.tokens.total(context)
        if before < budget.threshold:
            return self._emit(job.unchanged(context, before), session_id)
        if len(tidied) != len(msgs) or any(a is not b for a, b in zip(tidied, msgs, strict=True)):
            msgs, pos, replay = tidied, tidied_pos, _rebased(replay, tidied_pos)
            job, context = self._start(msgs, pos, budget, session_id, replay)
            before = self.tokens.total(context)
        notes: list[tuple[int, int, int]] = []
        if runs:
            # user (or assistant) messages in a row: joined, so the result alternates —
            # the latest of a run kept whole, earlier ones that no longer fit stood in for
            counts = self.tokens.counts(msgs)
            msgs, pos, notes = shorten_runs(msgs, pos, counts, budget.tail_budget)
            msgs, pos = join_same_role(msgs, pos)
            replay = _rebased(replay, pos)
            job, context = self._start(msgs, pos, budget, session_id, replay, notes)
            before = self.tokens.total(context)
            problems = validate_sequence(msgs)
            if problems:  # cannot happen after _check; kept as the guarantee it is
                raise CompactionError(f"cannot compact an invalid message sequence: {problems[0]}")
        if before < budget.threshold:  # tidied or joined, the context already fits
            return self._emit(job.unchanged(context, before), session_id)
        outcome = summary_outcome(job, self.model)
        if outcome.failed:
            outcome = truncate_outcome(job, outcome)
        result = job.finish(outcome, before)
        checkpoint_id = self._persist(job, outcome, result, flags, raw)
        if checkpoint_id is not None:
            result = _with(result, checkpoint_id=checkpoint_id)
        return self._emit(result, session_id)

    def compact_events(
        self,
        events: Sequence[Event],
        *,
        window: int,
        session_id: str | None = None,
        flags: SessionFlags | None = None,
    ) -> CompactionResult:
        """Compact a Memoir event history; positions (and the watermark) are ordinals."""
        history = messages_from_events(events)
        sid = session_id or (events[0].session_id if events else None)
        return self.compact(
            history.messages,
            window=window,
            session_id=sid,
            positions=history.positions,
            flags=flags,
        )

    # -- internals ---------------------------------------------------------------------

    def _start(
        self,
        msgs: list[Message],
        pos: Sequence[int],
        budget: Budget,
        session_id: str | None,
        replay: Replay | None,
        notes: Sequence[tuple[int, int, int]] = (),
    ) -> tuple[CompactionRun, list[dict[str, Any]]]:
        """The job over ``msgs`` (replaying the session's checkpoint when it applies) and
        the context as it stands."""
        job = self._job(msgs, pos, budget, replay, session_id)
        if notes:
            job.run_notes = tuple(
                RunNote(bisect_left(pos, note), position, content_tokens(tokens))
                for note, position, tokens in notes
            )
        if replay is None:
            return job, cast(list[dict[str, Any]], msgs)
        return job, job.assemble(job.prev_summary, job.start0, job.rep0)

    def _job(
        self,
        msgs: list[Message],
        pos: Sequence[int],
        budget: Budget,
        replay: Replay | None,
        session_id: str | None,
    ) -> CompactionRun:
        counts = self.tokens.counts(msgs)
        stand_ins = StandIns(msgs, pos, [content_tokens(c) for c in counts])
        sysn = leading_system_count(msgs)
        rep0: dict[int, Message] = {}
        if replay is not None:
            for i, p in enumerate(pos):
                if p in replay.replaced:
                    rep0[i] = stand_ins.context(i)
        return CompactionRun(
            messages=msgs,
            positions=pos,
            counts=counts,
            stand_ins=stand_ins,
            system_count=sysn,
            budget=budget,
            replay=replay,
            start0=replay.start if replay else sysn,
            prev_summary=replay.summary if replay else None,
            rep0=rep0,
            tokens=self.tokens,
            session_id=session_id,
        )

    def _replay(
        self, session_id: str | None, messages: Sequence[Message], pos: Sequence[int]
    ) -> Replay | None:
        if self.store is None or session_id is None:
            return None
        if session_id not in self._latest:
            self._latest[session_id] = latest_checkpoint(self.store, session_id)
        row = self._latest[session_id]
        if row is None:
            return None
        return replay_point(row, messages, pos, self._fingerprint)

    def _fingerprint(self, message: Message) -> str:
        hit = self._fingerprints.get(id(message))
        if hit is not None and hit[0] is message and hit[1] is message.get("content"):
            return hit[2]
        value = fingerprint(message)
        if len(self._fingerprints) > 1024:
            self._fingerprints.clear()
        self._fingerprints[id(message)] = (message, message.get("content"), value)
        return value

    def _replay_estimate(
        self, messages: Sequence[Message], pos: Sequence[int], replay: Replay
    ) -> int:
        sysn = leading_system_count(messages)
        total = self.tokens.total(messages[:sysn]) + self.tokens.total(messages[replay.start :])
        extra = self._replay_extra.get(replay.checkpoint_id)
        if extra is None:
            extra = 0
            if replay.summary is not None:
                extra += self.tokens.text(head_text(replay.summary)) + MESSAGE_FRAME_TOKENS
            extra += _JOIN_MARGIN
            replaced = [i for i, p in enumerate(pos) if p in replay.replaced]
            if replaced:
                counts = self.tokens.counts(messages)
                stand_ins = StandIns(messages, pos, [content_tokens(c) for c in counts])
                for i in replaced:
                    extra += self.tokens.count(stand_ins.context(i)) - counts[i]
            self._replay_extra[replay.checkpoint_id] = extra
        pin = pin_index(messages, sysn, replay.start, replay.summary is not None)
        if pin is not None:
            total += self.tokens.count(messages[pin])
        return total + extra

    def _persist(
        self,
        job: CompactionRun,
        outcome: RunOutcome,
        result: CompactionResult,
        flags: SessionFlags | None,
        raw: dict[int, Message],
    ) -> str | None:
        """The checkpoint of this compaction. Fingerprints are of the messages the caller
        passed at those positions (``raw``), which is what the next turn's history holds —
        not of a message this compaction joined from several."""
        sid = job.session_id
        if self.store is None or sid is None:
            return None
        start = outcome.start
        wm_index = start - 1
        watermark = job.positions[wm_index] if wm_index >= 0 else 0
        try:
            if flags is None:
                session = self.store.sessions.get(sid)
                flags = session.flags if session is not None else None
            row = new_checkpoint(
                sid,
                at=self._checkpoint_time(sid),
                strategy=result.strategy,
                summary=outcome.head,
                watermark=watermark,
                watermark_fingerprint=self._fingerprint(raw.get(watermark, job.messages[wm_index]))
                if wm_index >= 0
                else "",
                previous_id=job.replay.checkpoint_id if job.replay else None,
                flags=flags,
                kept=[job.positions[i] for i in outcome.kept],
                tail_from=job.positions[start] if start < len(job.positions) else None,
                replaced=[job.positions[i] for i in outcome.replacements],
                replaced_fingerprints=[
                    self._fingerprint(raw.get(job.positions[i], job.messages[i]))
                    for i in outcome.replacements
                ],
                omitted=[o.as_dict() for o in result.omitted],
                context_through=job.positions[-1] if job.positions else watermark,
                window=job.budget.window,
            )
            self.store.checkpoints.put(row)
        except MemoirError as exc:  # compaction never fails because persistence did
            log.warning("compaction checkpoint not saved for session %s: %s", sid, exc)
            return None
        self._latest[sid] = row
        if self.on_checkpoint is not None:
            try:
                self.on_checkpoint(row)
            except Exception:  # the checkpoint is durable: memory recovery finds it
                log.exception("memory dispatch for checkpoint %s failed", row.id)
        return row.id

    def _checkpoint_time(self, session_id: str) -> datetime:
        """Now, but strictly after the session's previous checkpoint (ordering is by time)."""
        at = self.clock()
        previous = self._latest.get(session_id)
        if previous is not None and at <= previous.created_at:
            at = previous.created_at + timedelta(milliseconds=1)
        return at

    def _emit(self, result: CompactionResult, session_id: str | None) -> CompactionResult:
        data = result.trace_data()
        level = logging.DEBUG if result.strategy == "none" else logging.INFO
        log.log(level, "compaction %s", json.dumps(data, sort_keys=True))
        if self.store is not None:
            try:
                self.store.traces.record(TraceRow(session_id, "compaction", self.clock(), data))
            except MemoirError as exc:
                log.warning("compaction trace not saved: %s", exc)
        return result


def _as_messages(messages: Sequence[Message]) -> list[Message]:
    if isinstance(messages, (str, bytes, dict)) or not isinstance(messages, Sequence):
        raise CompactionError(
            f"messages must be a list of message dicts, not {type(messages).__name__}"
        )
    msgs = list(messages)
    strays = [i for i, m in enumerate(msgs) if not isinstance(m, dict)]
    if strays:
        raise CompactionError(
            f"message {strays[0]} is a {type(msgs[strays[0]]).__name__}, not a message "
            "dict ({'role': …, 'content': …})"
        )
    return msgs


def _check(messages: list[Message], positions: Sequence[int]) -> bool:
    """Refuse an invalid sequence (the same checks at any size); True when it has runs of
    one role that compaction joins (what both APIs make of them anyway)."""
    problems = validate_sequence(messages)
    runs = bool(problems) and all(p.endswith(_IN_A_ROW) for p in problems)
    if runs:
        problems = validate_sequence(join_same_role(messages, positions)[0])
    if problems:
        raise CompactionError(f"cannot compact an invalid message sequence: {problems[0]}")
    return runs


def _rebased(replay: Replay | None, positions: Sequence[int]) -> Replay | None:
    """``replay`` (found on the caller's messages) over the joined list, whose positions
    are a subset of theirs: the tail starts after the watermark's position."""
    if replay is None or replay.watermark <= 0:
        return replay
    return dataclasses.replace(replay, start=bisect_right(positions, replay.watermark))


def _positions(messages: Sequence[Message], positions: Sequence[int] | None) -> Sequence[int]:
    if positions is None:
        return range(1, len(messages) + 1)
    if len(positions) != len(messages):
        raise CompactionError(f"{len(positions)} positions were given for {len(messages)} messages")
    return positions


def _with(result: CompactionResult, **changes: Any) -> CompactionResult:
    return dataclasses.replace(result, **changes)
