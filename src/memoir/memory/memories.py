"""The memory engine's front: the three triggers, recovery, and what was remembered.

- :meth:`Memories.remember` — the user asked: runs now (ahead of queued background work,
  after the running one) and returns what was saved, or why nothing was.
- :meth:`Memories.extract` — the agent judged something worth keeping: durable at once,
  ``"accepted"``, run in the background after the turn.
- :meth:`Memories.on_checkpoint` — a compaction checkpoint was persisted: dispatched
  fire-and-forget (no I/O on the compaction's thread).
- :meth:`Memories.after_sync` — ``memoir sync`` found a synced session gone quiet with
  events past its cursor: queued durably, then run in the caller's thread (the sync pass,
  :mod:`memoir.memory`, which the hook's sync already runs in the background).
- :meth:`Memories.recover` — run everything left unsettled (checkpoints past the cursor,
  queued operations, pending failures): what a long-lived process does at start-up and
  ``memoir memories recover`` does on demand.

A session's memory lane: its work runs one operation at a time, across threads and
processes (the store claim ``memory:<session>``), in arrival order, except that a
foreground ``remember`` goes ahead of queued background work — never of the running one.

Background work is dispatched with :meth:`Lane.dispatch`: no I/O on the caller's thread
(compaction never waits for memory); a daemon thread makes it durable and runs it. Every
operation is durable before it runs (a queued row, or the compaction checkpoint itself),
so a process that dies loses nothing: :func:`memoir.memory.memories.Memories.recover`
runs what was left.
"""

from __future__ import annotations

import logging
import queue
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime

from memoir.errors import Busy, MemoirError, NotFound, UsageError
from memoir.memory.decisions import LaneOp, Work, lane_order, next_work
from memoir.memory.item_rows import MemoryItemRow, MemoryOpRow
from memoir.memory.item_sql import by_operation_plan
from memoir.memory.lane_store import MemoryPart
from memoir.memory.runner import MemoryParts, Outcome, Runner, Task
from memoir.memory.values import Trigger, operation_id
from memoir.model import EventKind
from memoir.store.parts import CheckpointsPart, events_plan
from memoir.store.parts.sessions import session_plan
from memoir.store.port import Claims
from memoir.store.values import CheckpointRow

__all__ = [
    "Lane",
    "Memories",
    "RecoveryReport",
    "checkpoint_op",
    "lane_claim",
    "sync_op",
    "task_of",
    "turn_choices",
]


def checkpoint_op(row: CheckpointRow) -> MemoryOpRow:
    """The operation a persisted compaction checkpoint stands for (its frozen coverage
    and context boundaries, disposition and window). Pure: no I/O."""
    context = row.data.get("context_through")
    window = row.data.get("window")
    return MemoryOpRow(
        operation_id=operation_id(row.session_id, Trigger.COMPACTION, row.id),
        session_id=row.session_id,
        trigger=Trigger.COMPACTION.value,
        anchor=row.id,
        enqueued_at=row.created_at,
        coverage_through=row.memory_boundary,
        context_through=int(context) if context is not None else row.memory_boundary,
        request={"checkpoint_id": row.id, "disposition": row.disposition, "window": window},
    )


def sync_op(session_id: str, cursor: int, through: int, at: datetime) -> MemoryOpRow:
    """The operation a sync pass queues for a quiet session: ``(cursor, through]`` frozen
    (the events stored when it looked), its identity the pair, so the same look twice (a
    sync killed after queueing it, then the next sync) is one operation. Pure: no I/O."""
    return MemoryOpRow(
        operation_id=operation_id(session_id, Trigger.SYNC, f"{cursor}-{through}"),
        session_id=session_id,
        trigger=Trigger.SYNC.value,
        anchor=f"{cursor}-{through}",
        enqueued_at=at,
        coverage_through=through,
        context_through=through,
    )


def turn_choices(users: list[int]) -> str:
    """The user messages a ``--turn`` may name, said plainly: every one when they are
    few, else the first, the last and the latest few. Pure."""
    if len(users) == 1:
        return f"the only user message is event {users[0]}"
    if len(users) <= 6:
        return f"user messages are events {', '.join(map(str, users))}"
    recent = ", ".join(map(str, users[-3:]))
    return (
        f"{len(users)} user messages, events {users[0]} (the first) to {users[-1]} (the "
        f"latest); the latest three: {recent}"
    )


@dataclass(frozen=True, slots=True)
class RecoveryReport:
    checkpoints: int  # unsettled checkpoints queued again
    sessions: int  # sessions whose lane ran
    settled: int  # operations settled
    pending: int  # failures recorded (to be retried by the next trigger or recovery)
    busy: int  # sessions another process was working on (left to it)


class Memories:
    def __init__(self, parts: MemoryParts, claims: Claims, runner: Runner, *, wait_s: float = 30):
        self.parts = parts
        self.runner = runner
        self.lane = Lane(runner, parts.memory, parts.checkpoints, claims, wait_s=wait_s)
        self.wait_s = wait_s

    # triggers --------------------------------------------------------------------------
    def remember(self, session_id: str, turn: int | None = None) -> Outcome:
        """Extract now what the user's turn ``turn`` (an event ordinal; default: their
        latest) asks to keep, with what else the range holds."""
        turn = self._turn(session_id, turn)
        op = MemoryOpRow(
            operation_id(session_id, Trigger.REMEMBER, turn),
            session_id,
            Trigger.REMEMBER.value,
            str(turn),
            datetime.now(UTC),
            request={"turn": turn},
        )
        if not self.parts.memory.enqueue(op):
            done = self.parts.memory.receipt(op.operation_id)
            if done is not None:  # remembered before: the same answer again
                return Outcome(receipt=done, items=self._items_of(op.operation_id))
        results = self.lane.drain(session_id, first=op.operation_id, wait_s=self.wait_s)
        if self.parts.memory.queued(session_id):
            self.lane.dispatch(session_id)  # the rest of the lane, in the background
        found = results.get(op.operation_id)
        if found is not None:
            return found
        done = self.parts.memory.receipt(op.operation_id)
        if done is not None:  # another process ran it while this one waited for the lane
            return Outcome(receipt=done, items=self._items_of(op.operation_id))
        return Outcome(waiting="behind_pending")

    def extract(
        self, session_id: str, *, anchor: str, turn: int | None = None, note: str | None = None
    ) -> str:
        """Queue an extraction the agent asked for (``anchor``: its tool-call id); it runs
        after the turn, in the background. Returns ``"accepted"`` (durable already)."""
        if self.parts.sessions.get(session_id) is None:
            raise NotFound(f"no session {session_id!r}")
        request: dict[str, object] = {"note": note} if note else {}
        if turn is not None:
            request["turn"] = self._turn(session_id, turn)
        op = MemoryOpRow(
            operation_id(session_id, Trigger.EXTRACT, anchor),
            session_id,
            Trigger.EXTRACT.value,
            anchor,
            datetime.now(UTC),
            request=request,
        )
        self.parts.memory.enqueue(op)
        self.lane.dispatch(session_id)
        return "accepted"

    def on_checkpoint(self, row: CheckpointRow) -> None:
        """A compaction checkpoint was persisted: dispatch its extraction and return."""
        self.lane.dispatch(row.session_id, checkpoint_op(row))

    def after_sync(self, session_id: str, cursor: int, through: int) -> Outcome | None:
        """Extract what a quiet session said past ``cursor`` up to event ``through``: the
        operation is made durable first, then the session's lane runs in this thread
        (queued work of the session ahead of it, a pending failure retried first). The
        operation's outcome, or None when another process holds the lane (the operation
        stays queued: that process, or the next recovery, runs it)."""
        op = sync_op(session_id, cursor, through, datetime.now(UTC))
        self.parts.memory.enqueue(op)
        try:
            results = self.lane.drain(session_id)
        except Busy:
            return None
        found = results.get(op.operation_id)
        if found is not None:
            return found
        done = self.parts.memory.receipt(op.operation_id)
        if done is not None:  # settled before (a replay) or by another process meanwhile
            return Outcome(receipt=done, items=self._items_of(op.operation_id))
        if not results:
            return Outcome(waiting="not_run")
        last = list(results.values())[-1]  # the lane stopped before it: at a failure
        return Outcome(pending=last.pending, waiting=last.waiting, error=last.error)

    # recovery ----------------------------------------------------------------------------
    def recover(self) -> RecoveryReport:
        memory = self.parts.memory
        queued = 0
        for row in self.parts.checkpoints.past_memory_cursor():
            op = checkpoint_op(row)
            if memory.receipt(op.operation_id) is None and memory.enqueue(op):
                queued += 1
        sessions = {o.session_id for o in memory.queued()} | {
            p.session_id for p in memory.all_pending()
        }
        settled = failed = busy = 0
        for sid in sorted(sessions):
            try:
                results = self.lane.drain(sid)
            except Busy:
                busy += 1
                continue
            except MemoirError:
                failed += 1
                continue
            settled += sum(1 for r in results.values() if r.settled)
            failed += sum(1 for r in results.values() if r.pending is not None)
        return RecoveryReport(queued, len(sessions) - busy, settled, failed, busy)

    def close(self, timeout: float = 5.0) -> None:
        self.lane.close(timeout)

    # helpers -----------------------------------------------------------------------------
    def _turn(self, session_id: str, turn: int | None) -> int:
        if self.parts.db.query(session_plan(session_id)) is None:
            raise NotFound(f"no session {session_id!r}")
        events = self.parts.db.query(events_plan(session_id))
        users = [e.ordinal for e in events if e.kind is EventKind.USER_TEXT]
        if not users:
            raise MemoirError(f"session {session_id} has no user message to remember from")
        if turn is None:
            return users[-1]
        if turn not in users:
            raise UsageError(
                f"--turn {turn}: event {turn} of session {session_id} is not a user message "
                f"({turn_choices(users)})"
            )
        return turn

    def _items_of(self, operation: str) -> tuple[MemoryItemRow, ...]:
        if self.parts.memory.receipt(operation) is None:
            return ()
        return tuple(self.parts.db.snapshot(by_operation_plan(operation)))


log = logging.getLogger(__name__)

POLL_S = 0.05


def lane_claim(session_id: str) -> tuple[str, str]:
    return f"memory:{session_id}", f"memory work for session {session_id} is running elsewhere"


def task_of(op: MemoryOpRow) -> Task:
    """The task a queued operation stands for."""
    request = op.request
    turn = request.get("turn")
    work = Work(
        op.session_id,
        Trigger(op.trigger),
        op.anchor,
        checkpoint_id=request.get("checkpoint_id"),
        requested_turn=int(turn) if turn is not None else None,
    )
    return Task(
        work,
        boundary=op.coverage_through,
        context=op.context_through,
        disposition=request.get("disposition"),
        window=request.get("window"),
        note=request.get("note"),
    )


@dataclass(frozen=True, slots=True)
class _Dispatch:
    session_id: str
    op: MemoryOpRow | None  # made durable by the worker (None: just drain the session)


class Lane:
    def __init__(
        self,
        runner: Runner,
        memory: MemoryPart,
        checkpoints: CheckpointsPart,
        claims: Claims,
        *,
        wait_s: float = 30.0,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        self.runner = runner
        self.memory = memory
        self.checkpoints = checkpoints
        self.claims = claims
        self.wait_s = wait_s
        self._sleep = sleep
        self._queue: queue.SimpleQueue[_Dispatch | None] = queue.SimpleQueue()
        self._thread: threading.Thread | None = None
        self._start_lock = threading.Lock()
        self._idle = threading.Event()
        self._idle.set()
        self._closed = False

    # background -------------------------------------------------------------------------
    def dispatch(self, session_id: str, op: MemoryOpRow | None = None) -> None:
        """Hand work to the background thread and return at once (no I/O here)."""
        if self._closed:
            return  # the work is durable (or its checkpoint is): recovery runs it
        self._idle.clear()
        self._queue.put(_Dispatch(session_id, op))
        self._ensure_thread()

    def _ensure_thread(self) -> None:
        with self._start_lock:
            if self._thread is None or not self._thread.is_alive():
                self._thread = threading.Thread(
                    target=self._work, name="memoir-memory-lane", daemon=True
                )
                self._thread.start()

    def _work(self) -> None:
        while True:
            try:
                item = self._queue.get(timeout=0.5)
            except queue.Empty:
                self._idle.set()
                if self._closed:
                    return
                continue
            if item is None:
                self._idle.set()
                return
            try:
                if item.op is not None:
                    self.memory.enqueue(item.op)
                self.drain(item.session_id, wait_s=self.wait_s)
            except Busy:
                log.info("memory lane of %s busy elsewhere; left for recovery", item.session_id)
            except MemoirError as exc:  # never kills the lane: the work stays durable
                log.warning("memory work for %s stopped: %s", item.session_id, exc)
            except Exception:  # pragma: no cover - a bug must not end the thread either
                log.exception("memory work for %s failed", item.session_id)
            if self._queue.empty():
                self._idle.set()

    def wait_idle(self, timeout: float | None = None) -> bool:
        """Wait until dispatched work is done (tests, and a process about to exit)."""
        return self._idle.wait(timeout)

    def close(self, timeout: float = 5.0) -> None:
        """Stop taking work; the running operation finishes (up to ``timeout``), queued
        work stays durable for the next process's recovery."""
        self._closed = True
        self._queue.put(None)
        if self._thread is not None:
            self._thread.join(timeout)

    # running a session's lane -------------------------------------------------------------
    def drain(
        self, session_id: str, *, first: str | None = None, wait_s: float = 0.0
    ) -> dict[str, Outcome]:
        """Run the session's queued work under its claim (waiting up to ``wait_s`` for
        the running holder), ``first`` ahead of the rest; a recovery run with nothing
        queued retries the pending failure. Stops at the first run that does not settle."""
        name, busy = lane_claim(session_id)
        deadline = time.monotonic() + wait_s
        while True:
            try:
                with self.claims.hold(name, busy):
                    return self._round(session_id, first)
            except Busy:
                if time.monotonic() >= deadline:
                    raise
                self._sleep(POLL_S)

    def _round(self, session_id: str, first: str | None) -> dict[str, Outcome]:
        results: dict[str, Outcome] = {}
        while True:
            ops = {o.operation_id: o for o in self.memory.queued(session_id)}
            front = LaneOp(first, Trigger.REMEMBER, True) if first in ops else None
            order = lane_order([LaneOp(i, Trigger(o.trigger)) for i, o in ops.items()], None, front)
            pending = self.runner.pending(session_id)
            if not order:
                if pending is not None and not results:
                    retry = self._retry(Work.retrying(pending))
                    results[retry.work.operation_id] = self.runner.run(retry)
                return results
            op = ops[order[0].operation_id]
            works = next_work(pending, task_of(op).work)
            if not works:  # the failed operation dispatched again: its pending stands
                self.memory.drop_op(op.operation_id)
                continue
            for work in works:
                task = self._retry(work) if work.retry else task_of(op)
                outcome = self.runner.run(task)
                results[work.operation_id] = outcome
                if not outcome.settled:
                    return results

    def _retry(self, work: Work) -> Task:
        """A pending failure's retry, with its checkpoint's frozen disposition and window."""
        if work.checkpoint_id is None:
            return Task(work)
        rows = self.checkpoints.of(work.session_id)
        row = next((r for r in rows if r.id == work.checkpoint_id), None)
        if row is None:
            return Task(work)
        window = row.data.get("window")
        return Task(work, disposition=row.disposition, window=int(window) if window else None)
