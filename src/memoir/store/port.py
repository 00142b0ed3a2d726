"""The store port, the SQL store that wires it, and the health checks.

The port: what every backend offers, as parts named for what they hold.

``store.sessions``, ``store.events``, ``store.exchanges``, ``store.ingest`` (batches,
source states, skipped lines), ``store.index`` (full-text search), ``store.embeddings``,
``store.summaries``, ``store.checkpoints``, ``store.traces``, ``store.usage``,
``store.cache``, ``store.rescan``, ``store.users`` (API users and key hashes),
``store.api`` (sessions fed over HTTP: idempotent appends), ``store.jobs`` (background
jobs: queue, claims, heartbeats, fenced finish), ``store.claims``; the store itself owns
connections and transactions (``store.db``, ``close``, ``schema_version``, ``read_only``)
and the health checks over all of them. The memory engine builds its own parts over
``store.db`` (:func:`memoir.memory.item_store.memory_parts`), with the backend's
``store.dialect`` and ``store.item_text`` (how it ranks items by their words).
Both backends behave identically; the same test suite runs against both. Calls are
synchronous and safe from several threads; every write of several rows is one transaction.

What both SQL backends build on: the parts wired over the backend's transactions, and
the health checks. A backend supplies its transactions and what differs (ingest writes,
session deletion, the text engine, the embedding options, claims).

Counts and consistency checks, the same SQL on both backends.

``index_keys`` names the relation holding one row per index entry and its key column
(the exchange ``pk``): SQLite's FTS5 shadow table ``exchange_fts_docsize(id)``,
PostgreSQL's ``exchange_search(exchange_pk)``.

:func:`damaged_sessions` names the sessions whose derived rows a repair can mend, by
what it takes: exchanges rebuilt from the session's events (events the exchange rows lost
track of), or the session's transcript read again (events themselves are missing).

Store calls on an event loop (:func:`run_on_loop`): a blocking call into the store run on
the loop's own thread, in a greenlet, where a backend whose waits can be awaited
(``Store.awaits_waits``: PostgreSQL, whose connections ask :func:`await_on_loop`) hands
each wait on the server to the loop, which runs other tasks meanwhile. No thread hand-off,
and the code is the code a thread would run. Only for calls that block on nothing else:
what must (a model, a file) goes to a thread with :func:`offload`. A store whose calls
take a connection from a pool has a :class:`LoopGate` (``Store.loop_gate``): no more loop
calls at once on one loop than the pool has connections, the others waiting their turn
on the loop."""

from __future__ import annotations

import contextvars
import select
from collections.abc import Awaitable, Callable, Iterator
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any, Protocol, TypeVar

from memoir.store import parts
from memoir.store.db import Db, Dialect, Tx
from memoir.store.parts import (
    ApiPart,
    CachePart,
    CheckpointsPart,
    EmbeddingsPart,
    EventsPart,
    ExchangesPart,
    IndexPart,
    IngestPart,
    JobsPart,
    RescanPart,
    SessionsPart,
    SummariesPart,
    TracesPart,
    UsagePart,
    UsersPart,
)
from memoir.store.search_sql import ItemText
from memoir.store.values import IngestBatch

__all__ = [
    "Claims",
    "SessionDamage",
    "SqlStore",
    "Store",
    "await_on_loop",
    "damaged_sessions",
    "in_loop_call",
    "integrity_problems",
    "offload",
    "run_on_loop",
    "stats",
    "wait_on_fd",
]

T = TypeVar("T")


class Claims(Protocol):
    def hold(self, name: str, busy: str) -> AbstractContextManager[None]:
        """Hold the job ``name`` while the block runs: across processes (and, on
        PostgreSQL, replicas); raises ``Busy(busy)`` at once when someone else holds it."""
        ...


class Store(Protocol):
    backend: str  # "sqlite" | "postgres"
    awaits_waits: bool  # memoir.store.run_on_loop awaits its waits on the database
    loop_gate: LoopGate | None  # how many loop calls may run at once (its pool's size)
    # where derived files may be cached beside the database (None: nowhere)
    cache_dir: Path | None

    sessions: SessionsPart
    events: EventsPart
    exchanges: ExchangesPart
    ingest: IngestPart
    index: IndexPart
    embeddings: EmbeddingsPart
    summaries: SummariesPart
    checkpoints: CheckpointsPart
    traces: TracesPart
    usage: UsagePart
    cache: CachePart
    rescan: RescanPart  # derived text re-scanned with a newer secret detector
    users: UsersPart
    api: ApiPart
    jobs: JobsPart
    claims: Claims
    db: Db  # connections and transactions, for an engine's own parts (memory's)
    dialect: Dialect
    item_text: ItemText  # how this backend indexes and ranks memory items by their words

    @property
    def read_only(self) -> bool:
        """This process can only read the store (a read-only mount or file; a standby or
        a read-only role on PostgreSQL): what writes refuses up front (``ReadOnly``)."""
        ...

    def bulk_writes(self) -> AbstractContextManager[None]:
        """A long run of writes on this thread (a sync of many batches): the backend may
        trade read caching for a memory use that does not grow with the database (SQLite
        reads its pages without memory-mapping them)."""
        ...

    def close(self) -> None: ...
    def schema_version(self) -> int: ...
    def stats(self) -> dict[str, int]: ...
    def integrity_problems(self) -> list[str]: ...
    def damaged_sessions(self) -> SessionDamage:
        """Sessions whose exchanges or events are damaged, by what repairs them."""
        ...


class SqlStore:
    """Parts over one backend's :class:`Db`. ``index_keys`` names the index table and its
    exchange key column (for the health checks below). The parts it wires are those
    :class:`memoir.store.port.Store` names."""

    awaits_waits = False  # SQLite's waits are a file's: a thread's work
    loop_gate: LoopGate | None = None  # no pool to wait for

    @contextmanager
    def bulk_writes(self) -> Iterator[None]:
        """:meth:`memoir.store.port.Store.bulk_writes`: nothing to change by default."""
        yield

    def _wire(
        self,
        db: Db,
        *,
        apply_batch: Callable[[Any, IngestBatch], None],
        delete_rows: Callable[[Any, str], bool],
        engine: parts.TextEngine,
        embeddings: parts.EmbeddingsPart,
        claims: Claims,
        index_keys: tuple[str, str],
        dialect: Dialect,
        job_locking: parts.JobLocking,
        item_text: ItemText,
    ) -> None:
        self._db = self.db = db
        self.dialect = dialect
        self.item_text = item_text
        self._index_keys = index_keys
        self.sessions = parts.SessionsPart(db, delete_rows)
        self.events = parts.EventsPart(db)
        self.exchanges = parts.ExchangesPart(db)
        self.ingest = parts.IngestPart(db, apply_batch)
        self.index = parts.IndexPart(db, engine)
        self.embeddings = embeddings
        self.summaries = parts.SummariesPart(db)
        self.checkpoints = parts.CheckpointsPart(db)
        self.traces = parts.TracesPart(db)
        self.usage = parts.UsagePart(db)
        self.cache = parts.CachePart(db)
        self.rescan = parts.RescanPart(db)
        self.users = parts.UsersPart(db)
        self.api = parts.ApiPart(db, apply_batch, dialect)
        self.jobs = parts.JobsPart(db, job_locking)
        self.claims = claims

    def stats(self) -> dict[str, int]:
        with self._db.ro() as tx:
            return stats(tx, *self._index_keys)

    def integrity_problems(self) -> list[str]:
        with self._db.ro() as tx:
            return integrity_problems(tx, *self._index_keys)

    def damaged_sessions(self) -> SessionDamage:
        with self._db.ro() as tx:
            return damaged_sessions(tx)


SAMPLE = 5

_COUNTS = {
    "sessions": "SELECT count(*) FROM sessions",
    "exchanges": "SELECT count(*) FROM exchanges",
    "events": "SELECT count(*) FROM events",
    "projects": "SELECT count(DISTINCT project) FROM sessions",
    "skipped_lines": "SELECT count(*) FROM skipped_lines",
    "sources": "SELECT count(*) FROM sources",
    "embeddings": "SELECT count(*) FROM embeddings",
    "summary_rows": "SELECT count(*) FROM summaries",  # the database summary store's
    "checkpoints": "SELECT count(*) FROM checkpoints",
    "usage_records": "SELECT count(*) FROM usage",
    "subagent_sessions": "SELECT count(*) FROM sessions WHERE subagent",
    "memory_items": "SELECT count(*) FROM memory_items WHERE superseded_by IS NULL",
}


def stats(tx: Tx, index_table: str, index_key: str) -> dict[str, int]:
    out = {name: int(tx.run(sql)[0][0] or 0) for name, sql in _COUNTS.items()}
    out["index_rows"] = int(tx.run(f"SELECT count(*) FROM {index_table}")[0][0] or 0)
    return out


# a user prompt opens an exchange (``memoir.model.exchange``): one with no exchange row
# starting at it means every event of that exchange belongs to no exchange
_PROMPTS_WITHOUT_EXCHANGE = (
    "SELECT v.session_id, v.ordinal FROM events v WHERE v.kind = 'user_text' "
    "AND v.author = 'user' AND NOT EXISTS (SELECT 1 FROM exchanges e "
    "WHERE e.session_id = v.session_id AND e.first_ordinal = v.ordinal)"
)
_BROKEN_SPANS = (
    "SELECT e.id, e.session_id FROM exchanges e WHERE NOT EXISTS (SELECT 1 FROM events v "
    "WHERE v.session_id = e.session_id AND v.ordinal = e.first_ordinal) OR NOT EXISTS "
    "(SELECT 1 FROM events v WHERE v.session_id = e.session_id "
    "AND v.ordinal = e.last_ordinal)"
)
_GAPS = (
    "SELECT session_id FROM events GROUP BY session_id "
    "HAVING min(ordinal) <> 1 OR count(*) <> max(ordinal)"
)


def _checks(index_table: str, index_key: str) -> list[tuple[str, str]]:
    """(what is wrong, SELECT of the offending keys)."""
    return [
        (
            "orphan index rows (no exchange)",
            f"SELECT d.{index_key} FROM {index_table} d WHERE NOT EXISTS "
            f"(SELECT 1 FROM exchanges e WHERE e.pk = d.{index_key})",
        ),
        (
            "exchanges missing from the search index",
            f"SELECT e.id FROM exchanges e WHERE NOT EXISTS "
            f"(SELECT 1 FROM {index_table} d WHERE d.{index_key} = e.pk)",
        ),
        (
            "exchange rows lost (their events belong to no exchange)",
            "SELECT p.session_id || ':' || CAST(p.ordinal AS TEXT) "
            f"FROM ({_PROMPTS_WITHOUT_EXCHANGE}) AS p",
        ),
        (
            "exchanges whose event span is missing",
            f"SELECT b.id FROM ({_BROKEN_SPANS}) AS b",
        ),
        ("sessions with gaps in their event ordinals", _GAPS),
        (
            "events of unknown sessions",
            "SELECT DISTINCT v.session_id FROM events v WHERE NOT EXISTS "
            "(SELECT 1 FROM sessions s WHERE s.id = v.session_id)",
        ),
        (
            "exchanges of unknown sessions",
            "SELECT e.id FROM exchanges e WHERE NOT EXISTS "
            "(SELECT 1 FROM sessions s WHERE s.id = e.session_id)",
        ),
        (
            "embeddings of missing exchanges",
            "SELECT m.exchange_id FROM embeddings m WHERE NOT EXISTS "
            "(SELECT 1 FROM exchanges e WHERE e.id = m.exchange_id)",
        ),
        (
            "sources of unknown sessions",
            "SELECT t.path FROM sources t WHERE NOT EXISTS "
            "(SELECT 1 FROM sessions s WHERE s.id = t.session_id)",
        ),
    ]


def integrity_problems(tx: Tx, index_table: str, index_key: str) -> list[str]:
    """One line per kind of problem: how many, and a few examples."""
    problems: list[str] = []
    for label, sql in _checks(index_table, index_key):
        count = int(tx.run(f"SELECT count(*) FROM ({sql}) AS q")[0][0] or 0)
        if count:
            sample = [str(r[0]) for r in tx.run(f"{sql} LIMIT {SAMPLE}")]
            more = ", …" if count > len(sample) else ""
            problems.append(f"{count} {label}: {', '.join(sample)}{more}")
    return problems


@dataclass(frozen=True, slots=True)
class SessionDamage:
    """Sessions whose derived rows are damaged, by what mends them: ``exchanges_lost``,
    sessions whose events are whole but some belong to no exchange (rebuild the exchanges
    from the events); ``events_lost``, sessions with gaps in their ordinals or exchanges
    whose events are gone (read the transcript again). A session in both is only in
    ``events_lost``: reading it again rebuilds its exchanges too."""

    exchanges_lost: tuple[str, ...] = ()
    events_lost: tuple[str, ...] = ()


def damaged_sessions(tx: Tx) -> SessionDamage:
    """The sessions :class:`SessionDamage` describes, each in sorted order."""
    events_lost = {str(r[0]) for r in tx.run(_GAPS)}
    events_lost |= {str(r[1]) for r in tx.run(_BROKEN_SPANS)}
    lost = {str(r[0]) for r in tx.run(_PROMPTS_WITHOUT_EXCHANGE)} - events_lost
    return SessionDamage(tuple(sorted(lost)), tuple(sorted(events_lost)))


# store calls on an event loop --------------------------------------------------------
_CALL: contextvars.ContextVar[Any] = contextvars.ContextVar("memoir_loop_call", default=None)


@lru_cache(maxsize=1)
def _greenlets() -> tuple[type[Any], Callable[[], Any]]:
    """The greenlet class a loop call runs in, and ``getcurrent`` (the ``greenlet``
    package comes with the ``postgres`` extra, the one backend whose waits it awaits)."""
    import greenlet

    class LoopCall(greenlet.greenlet):
        """A blocking call run on the event loop's thread (see :func:`run_on_loop`)."""

    return LoopCall, greenlet.getcurrent


def in_loop_call() -> bool:
    """Is this code running in a loop call (:func:`run_on_loop`), on the loop's thread?
    (A thread it offloads to sees the call's context variables, but is not in it.)"""
    call = _CALL.get()
    return call is not None and call is _greenlets()[1]()


def await_on_loop(awaitable: Awaitable[T]) -> T:
    """From inside a loop call: wait for ``awaitable`` on the loop (other tasks run
    meanwhile) and return its result, or raise what it raised."""
    if not in_loop_call():
        raise RuntimeError("await_on_loop outside a loop call")
    result: T = _greenlets()[1]().parent.switch(awaitable)
    return result


class LoopGate:
    """At most ``size`` loop calls at once on each event loop (a pool's connections: a
    call past them would wait for one), the others waiting their turn on the loop, first
    come first served: ``async with gate.of_loop(): ...``."""

    def __init__(self, size: int) -> None:
        self.size = size
        # by loop, held strongly (any loop class will do): a closed loop's gate is
        # dropped when another loop asks for one
        self._gates: dict[Any, Any] = {}

    def of_loop(self) -> Any:
        """The running loop's gate (an ``asyncio.Semaphore``)."""
        import asyncio

        loop = asyncio.get_running_loop()
        gate = self._gates.get(loop)
        if gate is None:
            for other in list(self._gates):  # a copy: other loops' threads may add
                if other.is_closed():
                    self._gates.pop(other, None)
            gate = self._gates[loop] = asyncio.Semaphore(self.size)
        return gate


def offload(fn: Callable[..., T], /, *args: Any) -> T:
    """``fn(*args)``; from inside a loop call, on a thread (awaited), so what blocks on
    something other than the store (a model, a file) never blocks the loop."""
    if in_loop_call():
        import asyncio

        return await_on_loop(asyncio.to_thread(fn, *args))
    return fn(*args)


def wait_on_fd(fd: int, events: int) -> int:
    """In a loop call: which of ``events`` (1: readable, 2: writable) the file descriptor
    ``fd`` is ready for, asked of the kernel at once and, while it is ready for none,
    awaited on the loop."""
    poller = select.poll()
    poller.register(
        fd, (select.POLLIN if events & 1 else 0) | (select.POLLOUT if events & 2 else 0)
    )
    ready = 0
    for _, happened in poller.poll(0):
        ready |= (1 if happened & _READABLE else 0) | (2 if happened & _WRITABLE else 0)
    return ready or await_on_loop(_readiness(fd, events))


_READABLE = select.POLLIN | select.POLLERR | select.POLLHUP  # an error or an end is read
_WRITABLE = select.POLLOUT | select.POLLERR | select.POLLHUP


async def _readiness(fd: int, events: int) -> int:
    import asyncio

    loop = asyncio.get_running_loop()
    woken = loop.create_future()
    ready = 0

    def wake(flag: int) -> None:
        nonlocal ready
        ready |= flag
        if not woken.done():
            woken.set_result(None)

    if events & 1:
        loop.add_reader(fd, wake, 1)
    if events & 2:
        loop.add_writer(fd, wake, 2)
    try:
        await woken
    finally:
        if events & 1:
            loop.remove_reader(fd)
        if events & 2:
            loop.remove_writer(fd)
    return ready


async def run_on_loop(fn: Callable[..., T], /, *args: Any, **kwargs: Any) -> T:
    """``fn(*args, **kwargs)`` run on this event loop's thread, each wait it hands to
    :func:`await_on_loop` awaited here. Its context variables are a copy of the caller's,
    as a thread's would be. Cancelled while it waits, the wait's cancellation is raised
    inside the call, which unwinds as a failed wait unwinds (a transaction rolled back,
    or ended with its connection)."""
    loop_call, _ = _greenlets()
    context = contextvars.copy_context()
    call = loop_call(fn)
    call.gr_context = context
    context.run(_CALL.set, call)
    step: Any = call.switch(*args, **kwargs)
    while not call.dead:
        try:
            got = await step
        except BaseException as exc:
            step = call.throw(exc)
        else:
            step = call.switch(got)
    result: T = step
    return result
