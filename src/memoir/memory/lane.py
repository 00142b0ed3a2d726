"""A session's memory lane: its work runs one operation at a time, across threads and
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

from memoir.errors import Busy, MemoirError
from memoir.memory.decisions import LaneOp, Work, lane_order, next_work
from memoir.memory.runner import Outcome, Runner, Task
from memoir.memory.values import Trigger
from memoir.store.memory_rows import MemoryOpRow
from memoir.store.parts import CheckpointsPart, MemoryPart
from memoir.store.port import Claims

__all__ = ["Lane", "lane_claim", "task_of"]

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
