"""``AsyncMemoir``: the library's front door for asyncio programs (agent loops, async web
apps), over the same :class:`~memoir.app.Memoir`.

Each call runs the ``Memoir`` method of the same name on a small thread pool of its own
(``max_workers``, 4 by default), so the event loop never waits on the database, a model or
a file. The store is safe across threads: SQLite gives each thread its own connection,
PostgreSQL hands out pooled ones (8; a call holds at most two: a claim and a
transaction). One ``AsyncMemoir`` is meant to be shared by every task of a program.

``aclose()`` refuses new calls at once (``StoreError``), waits for the calls already
running, then closes the store. A cancelled call that had not started never runs; one
already running finishes on its thread and its result is dropped.

Example::

    async with AsyncMemoir.open(home="~/.memoir") as memoir:
        await memoir.append("chat-1", [{"role": "user", "content": "Deploy on Fridays?"}])
        hits = await memoir.search("deploy", limit=5)
"""

from __future__ import annotations

import asyncio
import builtins
import contextvars
import functools
import os
import threading
from collections.abc import Callable, Coroutine, Generator, Iterable
from concurrent.futures import Future, ThreadPoolExecutor
from typing import TYPE_CHECKING, Any, Concatenate, ParamSpec, Protocol, TypeVar

from memoir.app import Memoir
from memoir.compaction import Compactor
from memoir.config import Settings, whole_number
from memoir.errors import StoreError
from memoir.model.event import LOCAL_USER
from memoir.verbs import MemoryItems

if TYPE_CHECKING:
    from memoir.compaction.plan import Budget
    from memoir.llm.port import Model, TokenCounter
    from memoir.memory.keeping import ImportReport

__all__ = ["DEFAULT_WORKERS", "AsyncCompactor", "AsyncMemoir", "AsyncMemoryItems"]

DEFAULT_WORKERS = 4
"""Threads an ``AsyncMemoir`` runs its calls on: 4 calls at a time, each holding at most
two of PostgreSQL's 8 pooled connections; more calls wait their turn off the loop."""

P = ParamSpec("P")
T = TypeVar("T")
S = TypeVar("S")


class _Pooled(Protocol):
    """What a mirrored method runs on: its class's ``_call`` (the method ``name`` of the
    sync object it mirrors, looked up now and run on the worker threads)."""

    async def _call(self, name: str, /, *args: Any, **kwargs: Any) -> Any: ...


def _on_pool(
    method: Callable[Concatenate[S, P], T], summary: str, *example: str
) -> Callable[Concatenate[_Pooled, P], Coroutine[Any, Any, T]]:
    """The coroutine method mirroring the sync ``method`` (of ``Memoir``, ``MemoryItems``
    or ``Compactor``): the same arguments and result (typed from ``method``), the call run
    by the class's ``_call``; its docstring ``summary`` then the ``example`` lines
    (``help`` shows ``method``'s signature)."""

    async def mirrored(self: _Pooled, /, *args: P.args, **kwargs: P.kwargs) -> T:
        result: T = await self._call(method.__name__, *args, **kwargs)
        return result

    mirrored.__name__, mirrored.__qualname__ = method.__name__, f"Async{method.__qualname__}"
    mirrored.__doc__ = "\n".join((summary, "", "Example::", "", *(f"    {e}" for e in example)))
    mirrored.__wrapped__ = method  # type: ignore[attr-defined]
    return mirrored


class _Shared:
    """What an ``AsyncMemoir`` and its ``as_user`` views share: the sync Memoir that owns
    the store, the worker threads, and whether it is closing."""

    def __init__(self, memoir: Memoir, max_workers: int) -> None:
        self.memoir = memoir
        self.executor = ThreadPoolExecutor(max_workers, thread_name_prefix="memoir-async")
        self.lock = threading.Lock()
        self.closing: Future[None] | None = None

    def submit(self, fn: Callable[..., T], /, *args: Any, **kwargs: Any) -> Future[T]:
        """``fn(*args, **kwargs)`` queued for a worker thread, in the caller's context
        (context variables travel, as ``asyncio.to_thread`` carries them)."""
        context = contextvars.copy_context()
        call = functools.partial(context.run, fn, *args, **kwargs)
        with self.lock:  # no call slips in after a close has begun
            if self.closing is not None:
                raise StoreError("this AsyncMemoir is closed: open another to go on")
            return self.executor.submit(call)

    def close(self) -> Future[None]:
        """Begin closing once (a second ``aclose`` waits for the first): new calls are
        refused at once; the calls in flight finish; then the store closes."""
        with self.lock:
            if self.closing is not None:
                return self.closing
            closing: Future[None] = Future()
            closing.set_running_or_notify_cancel()  # a cancelled waiter cannot cancel it
            self.closing = closing

        def finish() -> None:
            try:
                self.executor.shutdown(wait=True)
                self.memoir.close()
            except BaseException as exc:  # told to every aclose that waits
                closing.set_exception(exc)
            else:
                closing.set_result(None)

        threading.Thread(target=finish, name="memoir-async-close", daemon=True).start()
        return closing


class AsyncMemoir:
    """One home for asyncio code: the methods of :class:`~memoir.app.Memoir` an agent
    loop calls, as coroutines with the same arguments and results. Share one between
    tasks; open it with ``async with AsyncMemoir.open(...)`` (or ``await``), or wrap a
    ``Memoir`` you opened (``AsyncMemoir(memoir)``: closing the ``AsyncMemoir`` closes
    it). Anything else (what :mod:`memoir.service` offers): ``await
    memoir.call(service.stats)``."""

    def __init__(self, memoir: Memoir, *, max_workers: int = DEFAULT_WORKERS) -> None:
        whole_number("max_workers", max_workers, 1)
        self._memoir = memoir
        self._shared = _Shared(memoir, max_workers)
        self._view = False

    @classmethod
    def _sharing(cls, memoir: Memoir, shared: _Shared) -> AsyncMemoir:
        """A view: ``memoir`` (a view of the root's Memoir) on the root's threads."""
        view = cls.__new__(cls)
        view._memoir, view._shared, view._view = memoir, shared, True
        return view

    @classmethod
    def open(
        cls,
        settings: Settings | None = None,
        *,
        user: str = LOCAL_USER,
        max_workers: int = DEFAULT_WORKERS,
        **overrides: Any,
    ) -> _Opening:
        """Open the home the settings name (else the environment's, with ``overrides``
        such as ``home=``), its store opened and migrated off the loop; as
        :meth:`Memoir.open`.

        Example::

            async with AsyncMemoir.open(home="/tmp/memoir") as memoir: ...
            memoir = await AsyncMemoir.open()  # then: await memoir.aclose()
        """
        whole_number("max_workers", max_workers, 1)
        return _Opening(
            lambda: cls(Memoir.open(settings, user=user, **overrides), max_workers=max_workers)
        )

    @classmethod
    def at(
        cls,
        home: str | os.PathLike[str],
        *,
        user: str = LOCAL_USER,
        max_workers: int = DEFAULT_WORKERS,
        **overrides: Any,
    ) -> _Opening:
        """The home at ``home``, as :meth:`Memoir.at`.

        Example::

            async with AsyncMemoir.at("~/.memoir") as memoir: ...
        """
        whole_number("max_workers", max_workers, 1)
        return _Opening(
            lambda: cls(Memoir.at(home, user=user, **overrides), max_workers=max_workers)
        )

    @property
    def memoir(self) -> Memoir:
        """The sync ``Memoir`` the calls run on (for its settings, or a quick pure call)."""
        return self._memoir

    @property
    def settings(self) -> Settings:
        return self._memoir.settings

    @property
    def user(self) -> str:
        return self._memoir.user

    def as_user(self, name: str) -> AsyncMemoir:
        """This home acting for user ``name``, as :meth:`Memoir.as_user`: the same store and
        worker threads; closing the view leaves them open.

        Example::

            alice = memoir.as_user("alice")
            await alice.recall("editor")
        """
        return AsyncMemoir._sharing(self._memoir.as_user(name), self._shared)

    async def call(
        self, method: Callable[Concatenate[Memoir, P], T], /, *args: P.args, **kwargs: P.kwargs
    ) -> T:
        """``method(memoir, *args, **kwargs)`` on a worker thread, ``memoir`` being this
        one's sync ``Memoir``: any of its methods not mirrored here.

        Example::

            counts = await memoir.call(service.stats)
        """
        return await self._run(method, self._memoir, *args, **kwargs)

    async def _run(self, fn: Callable[P, T], /, *args: P.args, **kwargs: P.kwargs) -> T:
        return await asyncio.wrap_future(self._shared.submit(fn, *args, **kwargs))

    async def _call(self, name: str, /, *args: Any, **kwargs: Any) -> Any:
        return await self._run(getattr(self._memoir, name), *args, **kwargs)

    async def aclose(self) -> None:
        """Refuse new calls (``StoreError``), wait for the running ones, close the store.
        A view of ``as_user`` closes nothing (its root owns the store)."""
        if self._view:
            return
        await asyncio.wrap_future(self._shared.close())

    @property
    def closed(self) -> bool:
        """Whether a close has begun (calls are refused from then on)."""
        return self._shared.closing is not None

    async def __aenter__(self) -> AsyncMemoir:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    # conversations: feed, read, search --------------------------------------------------
    append = _on_pool(
        Memoir.append,
        (
            "Add chat messages to a session, made when new (:meth:`Memoir.append`); a message "
            "whose ``id`` is stored already is skipped."
        ),
        'chat = [{"id": "m1", "role": "user", "content": "Where is the checklist?"}]',
        'result = await memoir.append("support-42", chat, project="helpdesk")',
    )
    sync = _on_pool(
        Memoir.sync,
        (
            "Archive and index new or grown transcripts (:meth:`Memoir.sync`); ``progress`` "
            "is called on a worker thread."
        ),
        "report = await memoir.sync()",
    )
    search = _on_pool(
        Memoir.search,
        (
            "Search past exchanges, best first (:meth:`Memoir.search`). A ``summaries`` "
            "function given runs on a worker thread."
        ),
        'hits = await memoir.search("deploy checklist", mode="text", after="2 weeks ago")',
    )
    session = _on_pool(
        Memoir.session,
        "The session an id (or a unique prefix) names (:meth:`Memoir.session`).",
        "session = await memoir.session(hits[0].session_id)",
    )
    events = _on_pool(
        Memoir.events,
        "The session's events in order (:meth:`Memoir.events`).",
        'newer = await memoir.events("support-42", after=10)',
    )
    exchanges = _on_pool(
        Memoir.exchanges,
        "The session's exchanges in order (:meth:`Memoir.exchanges`).",
        'turns = await memoir.exchanges("support-42")',
    )

    # long-term memory ---------------------------------------------------------------------
    recall = _on_pool(
        Memoir.recall,
        "The memory items that best answer ``query`` (:meth:`Memoir.recall`).",
        'for found in await memoir.recall("database", kinds=["decision"]):',
        "    print(found.item.content)",
    )
    context = _on_pool(
        Memoir.context,
        (
            "The context block of the most relevant live items, within ``budget_tokens`` "
            "(:meth:`Memoir.context`): what an agent prepends to its system prompt."
        ),
        'block = await memoir.context(project="helpdesk", budget_tokens=400)',
        'system = f"You are a helpful agent.\\n\\n{block.text}"',
    )
    remember = _on_pool(
        Memoir.remember,
        "Extract what the user asked to keep, now (:meth:`Memoir.remember`).",
        'outcome = await memoir.remember("support-42")',
    )
    forget = _on_pool(
        Memoir.forget,
        "Forget the items one selector names (:meth:`Memoir.forget`).",
        'gone = await memoir.forget(matching="tabs spaces")',
    )

    # summaries ----------------------------------------------------------------------------
    summarize = _on_pool(
        Memoir.summarize,
        (
            "Summarize one stored session now (:meth:`Memoir.summarize`); ``progress`` is "
            "called on a worker thread."
        ),
        'run = await memoir.summarize("support-42")',
        "print(run.summary.text)",
    )

    # compaction ---------------------------------------------------------------------------
    async def compactor(
        self,
        *,
        memory: bool = True,
        model: Model | None = None,
        counter: TokenCounter | None = None,
        tail_budget: int | None = None,
    ) -> AsyncCompactor:
        """A compactor for one agent loop, as :meth:`Memoir.compactor`, its calls run off
        the loop (built off the loop too: the model is made on a worker thread).

        Example::

            compactor = await memoir.compactor()
            result = await compactor.compact(messages, window=32_000, session_id="chat-1")
        """
        made = await self._run(
            self._memoir.compactor,
            memory=memory,
            model=model,
            counter=counter,
            tail_budget=tail_budget,
        )
        return AsyncCompactor(made, self)

    # memory items beyond the four verbs, and jobs ------------------------------------------
    @property
    def memories(self) -> AsyncMemoryItems:
        """The memory items of this home's user (:attr:`Memoir.memories`), off the loop.

        Example::

            chain = await memoir.memories.history(found.item.id)
        """
        return AsyncMemoryItems(self)

    jobs = _on_pool(
        Memoir.jobs,
        (
            "The job service of this home (:meth:`Memoir.jobs`); its calls block, so run them "
            "with :meth:`call` or a thread."
        ),
        "service = await memoir.jobs()",
    )


class AsyncMemoryItems:
    """``AsyncMemoir.memories``: :class:`memoir.app.MemoryItems` as coroutines."""

    def __init__(self, memoir: AsyncMemoir) -> None:
        self._aio = memoir

    async def _call(self, name: str, /, *args: Any, **kwargs: Any) -> Any:
        return await self._aio._run(getattr(self._aio.memoir.memories, name), *args, **kwargs)

    list = _on_pool(
        MemoryItems.list,
        "The items passing the filters, newest first (:meth:`MemoryItems.list`).",
        'newest = await memoir.memories.list(kind="decision", limit=5)',
    )
    history = _on_pool(
        MemoryItems.history,
        ("An item with what it superseded and what superseded it (:meth:`MemoryItems.history`)."),
        "chain = await memoir.memories.history(found.item.id)",
    )

    async def export(self, user: str | None = None) -> builtins.list[str]:
        """Every item and tombstone as JSON lines (:meth:`MemoryItems.export`).

        Example::

            lines = await memoir.memories.export()
        """
        items = self._aio.memoir.memories
        return await self._aio._run(lambda: builtins.list(items.export(user)))

    async def import_lines(self, lines: Iterable[str], user: str | None = None) -> ImportReport:
        """Read an export in, all or nothing (:meth:`MemoryItems.import_lines`).

        Example::

            report = await memoir.memories.import_lines(lines)
        """
        return await self._aio._run(
            self._aio.memoir.memories.import_lines, builtins.list(lines), user
        )


class AsyncCompactor:
    """A :class:`~memoir.compaction.Compactor` for asyncio code: its calls run on the
    ``AsyncMemoir``'s worker threads, one at a time (a compactor keeps caches of the
    messages it counted, so it is one per agent loop)."""

    def __init__(self, compactor: Compactor, memoir: AsyncMemoir) -> None:
        self.compactor = compactor
        self._memoir = memoir
        self._turn: asyncio.Lock | None = None

    def budget(self, window: int) -> Budget:
        """The threshold and budgets for a context ``window`` (pure: no waiting)."""
        return self.compactor.budget(window)

    async def _call(self, name: str, /, *args: Any, **kwargs: Any) -> Any:
        method = getattr(self.compactor, name)
        if self._turn is None:
            self._turn = asyncio.Lock()
        async with self._turn:
            return await self._memoir._run(method, *args, **kwargs)

    should_compact = _on_pool(
        Compactor.should_compact,
        "Would the context reach the threshold? (``Compactor.should_compact``)",
        "if await compactor.should_compact(messages, window=32_000): ...",
    )
    compact = _on_pool(
        Compactor.compact,
        "The context to send next, strictly below the threshold (``Compactor.compact``).",
        "messages = (await compactor.compact(messages, window=32_000)).messages",
    )
    compact_events = _on_pool(
        Compactor.compact_events,
        "Compact a stored event history (``Compactor.compact_events``).",
        'events = await memoir.events("chat-1")',
        "result = await compactor.compact_events(events, window=32_000)",
    )


class _Opening:
    """``AsyncMemoir.open(...)``: awaited, the open ``AsyncMemoir``; used as ``async with``,
    the same, closed on the way out. The store is opened (and migrated) off the loop."""

    def __init__(self, make: Callable[[], AsyncMemoir]) -> None:
        self._make = make
        self._opened: AsyncMemoir | None = None

    async def _open(self) -> AsyncMemoir:
        return await asyncio.to_thread(self._make)

    def __await__(self) -> Generator[Any, None, AsyncMemoir]:
        return self._open().__await__()

    async def __aenter__(self) -> AsyncMemoir:
        self._opened = await self._open()
        return self._opened

    async def __aexit__(self, *exc: object) -> None:
        if self._opened is not None:
            await self._opened.aclose()
