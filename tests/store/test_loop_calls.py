"""Store calls on an event loop (``memoir.store.run_on_loop``): a blocking call run on the
loop's thread in a greenlet, each wait it hands over awaited there, so the loop runs
other tasks meanwhile; on PostgreSQL, the store's own waits on the server."""

from __future__ import annotations

import asyncio
import contextvars
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from conftest import fresh_store
from memoir import service
from memoir.store import LoopGate, Store, await_on_loop, in_loop_call, offload, run_on_loop

WHO = contextvars.ContextVar("who", default="nobody")


class Ticker:
    """Counts the loop's turns while it runs: a wait that blocks the loop counts none."""

    def __init__(self) -> None:
        self.ticks = 0
        self.task: asyncio.Task[None] | None = None

    async def _run(self) -> None:
        while True:
            await asyncio.sleep(0.01)
            self.ticks += 1

    def __enter__(self) -> Ticker:
        self.task = asyncio.get_running_loop().create_task(self._run())
        return self

    def __exit__(self, *exc: object) -> None:
        assert self.task is not None
        self.task.cancel()


def test_a_loop_call_runs_on_the_loops_thread_while_other_tasks_run() -> None:
    def call(x: int, *, plus: int) -> tuple[int, int, bool]:
        slept = await_on_loop(asyncio.sleep(0.2, result=x))
        return slept + plus, threading.get_ident(), in_loop_call()

    async def main() -> None:
        with Ticker() as ticker:
            got, ident, inside = await run_on_loop(call, 40, plus=2)
        assert (got, inside) == (42, True)
        assert ident == threading.get_ident()  # no thread: the loop's own
        assert ticker.ticks >= 10  # the loop turned while the call waited
        assert not in_loop_call()

    asyncio.run(main())


def test_two_loop_calls_wait_at_once() -> None:
    def call(name: str) -> str:
        await_on_loop(asyncio.sleep(0.3))
        return name

    async def main() -> None:
        loop = asyncio.get_running_loop()
        started = loop.time()
        got = await asyncio.gather(run_on_loop(call, "a"), run_on_loop(call, "b"))
        assert got == ["a", "b"]
        assert loop.time() - started < 0.55  # 0.6 s one after the other

    asyncio.run(main())


def test_errors_cross_both_ways() -> None:
    async def refused() -> None:
        raise KeyError("awaited")

    def catches() -> str:
        try:
            await_on_loop(refused())
        except KeyError as exc:
            return f"caught {exc}"
        return "missed"

    def raises() -> None:
        await_on_loop(asyncio.sleep(0))
        raise ValueError("inside")

    async def main() -> None:
        assert await run_on_loop(catches) == "caught 'awaited'"
        with pytest.raises(ValueError, match="inside"):
            await run_on_loop(raises)

    asyncio.run(main())


def test_the_call_sees_a_copy_of_the_callers_context() -> None:
    def call() -> str:
        seen = WHO.get()
        WHO.set("changed inside")
        return seen

    async def main() -> None:
        WHO.set("alice")
        assert await run_on_loop(call) == "alice"
        assert WHO.get() == "alice"  # the call's change stays in the call

    asyncio.run(main())


def test_offload_runs_on_a_thread_outside_the_call_and_inline_elsewhere() -> None:
    def where() -> tuple[int, bool, str]:
        return threading.get_ident(), in_loop_call(), WHO.get()

    def call() -> tuple[int, bool, str]:
        return offload(where)

    async def main() -> None:
        WHO.set("bob")
        ident, inside, who = await run_on_loop(call)
        assert ident != threading.get_ident() and not inside  # a thread, not in the call
        assert who == "bob"  # with the call's context

    asyncio.run(main())
    assert offload(where)[0] == threading.get_ident()  # no loop call: run here


def test_await_on_loop_outside_a_call_is_refused() -> None:
    async def nothing() -> None:
        return None

    waited = nothing()
    with pytest.raises(RuntimeError, match="outside a loop call"):
        await_on_loop(waited)
    waited.close()


def test_a_cancelled_call_unwinds_inside_then_is_cancelled() -> None:
    unwound: list[str] = []

    def call() -> None:
        try:
            await_on_loop(asyncio.sleep(30))
        except asyncio.CancelledError:
            unwound.append("cancelled inside")
            raise
        finally:
            unwound.append("finally")

    async def main() -> None:
        task = asyncio.get_running_loop().create_task(run_on_loop(call))
        await asyncio.sleep(0.05)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task

    asyncio.run(main())
    assert unwound == ["cancelled inside", "finally"]


@pytest.fixture
def pg_store(tmp_path: Path) -> Iterator[Store]:
    with fresh_store("postgres", tmp_path / "unused.db") as made:
        yield made


@pytest.mark.postgres
def test_postgresql_waits_are_awaited_on_the_loop(pg_store: Store) -> None:
    """A store call waiting on the server (``pg_sleep``) lets the loop turn; two such
    calls wait at once, on two pooled connections, with no thread between."""

    class Fake:  # what service.awaits_store reads
        store = pg_store

    assert pg_store.awaits_waits and service.awaits_store(Fake())  # type: ignore[arg-type]

    def sleeps(_: object) -> tuple[int, int]:
        row = pg_store.db.rows("SELECT 7 FROM pg_sleep(0.3)")
        return int(row[0][0]), threading.get_ident()

    async def main() -> None:
        loop = asyncio.get_running_loop()
        started = loop.time()
        with Ticker() as ticker:
            memoir: Any = Fake()
            got = await asyncio.gather(
                service.on_loop(sleeps, memoir), service.on_loop(sleeps, memoir)
            )
        assert [value for value, _ in got] == [7, 7]
        assert {ident for _, ident in got} == {threading.get_ident()}
        assert ticker.ticks >= 15  # ~0.3 s of turns: no wait blocked the loop
        assert loop.time() - started < 0.55  # the two sleeps overlapped

    asyncio.run(main())


@pytest.mark.postgres
def test_loop_calls_past_the_pool_wait_their_turn_on_the_loop(pg_store: Store) -> None:
    """Three times as many loop calls as the pool has connections: no more than the pool
    run at once (the others wait on the loop, not for a connection on a thread), all on
    the loop's thread, in three turns, the loop free throughout."""

    class Fake:
        store = pg_store

    assert pg_store.loop_gate is not None
    size = pg_store.loop_gate.size
    running, peak = 0, 0

    def sleeps(_: object) -> int:
        nonlocal running, peak
        running += 1
        peak = max(peak, running)
        try:
            pg_store.db.rows("SELECT pg_sleep(0.1)")
        finally:
            running -= 1
        return threading.get_ident()

    async def main() -> None:
        loop = asyncio.get_running_loop()
        started = loop.time()
        memoir: Any = Fake()
        with Ticker() as ticker:
            got = await asyncio.gather(*(service.on_loop(sleeps, memoir) for _ in range(3 * size)))
        assert set(got) == {threading.get_ident()}
        assert peak == size
        assert 0.3 <= loop.time() - started < 1.5  # three turns of 0.1 s
        assert ticker.ticks >= 15

    asyncio.run(main())


def test_each_loop_has_its_own_gate_and_a_closed_loops_is_dropped() -> None:
    gate = LoopGate(2)

    async def mine() -> tuple[Any, Any]:
        return gate.of_loop(), gate.of_loop()

    first, again = asyncio.run(mine())
    assert first is again and isinstance(first, asyncio.Semaphore)
    second, _ = asyncio.run(mine())
    assert second is not first
    assert len(gate._gates) == 1  # the first loop closed: its gate went with it


def test_sqlite_waits_are_not_awaited(tmp_path: Path) -> None:
    with fresh_store("sqlite", tmp_path / "store.db") as made:
        assert made.awaits_waits is False  # its waits are a file's: a thread's work
        assert made.loop_gate is None  # no pool: its loop calls never wait for one
