"""The ``Memoir`` object: one home (settings + store + model), the library's front door.

``Memoir``'s public methods are what a user calls, and only those (``tests/library/
test_front_door.py`` holds the list): open and close a home, sync, search, read a
session, append to one, summarize, compact, remember / recall / context / forget (the
rest of memory under the ``memories`` noun), jobs. What the server, the worker, the MCP
server and the CLI need beyond them is :mod:`memoir.service`; how the parts are made is
:mod:`memoir.wiring`. Each operation delegates to the package that owns it.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Iterable, Mapping, Sequence
from datetime import datetime
from typing import TYPE_CHECKING, Any, Literal

from memoir import verbs, wiring
from memoir.config import Settings, whole_number
from memoir.model.event import LOCAL_USER
from memoir.store import Store, ensure_writable, open_store
from memoir.store.parts.sessions import resolve_plan
from memoir.verbs import MemoryItems
from memoir.wiring import check_user, instant, item_filter

if TYPE_CHECKING:
    from collections.abc import Callable

    from memoir.compaction import Compactor
    from memoir.ingest.batches import SyncProgress, SyncReport
    from memoir.jobs import JobService
    from memoir.llm.port import Model, TokenCounter
    from memoir.memory.memories import Memories
    from memoir.memory.recall import ContextBlock, ItemEmbedder
    from memoir.model import Appended, Event, Exchange, Memory, RecallHit, Remembered, Session
    from memoir.search.embedders import Embedder
    from memoir.search.engine import SearchMode, SummaryReader
    from memoir.search.hits import SearchHit
    from memoir.store.values import SearchFilters
    from memoir.summaries.episodic import Progress as SummaryProgress
    from memoir.summaries.port import SummaryStore
    from memoir.summaries.session import RunMode, SessionRun

__all__ = ["CONFIGURED", "LOCAL_USER", "Memoir", "MemoryItems"]


CONFIGURED: Literal["configured"] = "configured"
"""The default of a part a call may replace (``search(embedder=…, summaries=…)``): the one
this home's settings configure."""


class Memoir:
    """One home, acting for one user (``user``, default ``local``): every operation that
    reads or changes stored conversations or memories sees that user's only, unless a
    call names another user (``as_user``, or a ``user`` argument)."""

    def __init__(self, settings: Settings, store: Store, *, user: str = LOCAL_USER) -> None:
        self.settings = settings
        self.store = store
        self.user = check_user(user)
        self._memories: Memories | None = None
        self._jobs: JobService | None = None
        self._root: Memoir | None = None  # the Memoir a view of ``as_user`` shares parts with
        # the memory engine and the job service are made once, whichever thread asks first
        self._parts_lock = threading.RLock()

    @classmethod
    def open(
        cls, settings: Settings | None = None, *, user: str = LOCAL_USER, **overrides: Any
    ) -> Memoir:
        """The Memoir of ``settings`` (None: read from the environment, ``overrides`` as
        keywords over it), acting for ``user``; the home is made when it is new.

        Example::

            with Memoir.open(home="~/.memoir", embedder="none") as m:
                print(m.settings.home)
        """
        if settings is None:
            settings = Settings.from_env(**overrides)
        check_user(user)
        settings.ensure_home()
        return cls(settings, open_store(settings), user=user)

    @classmethod
    def at(
        cls, home: str | os.PathLike[str], *, user: str = LOCAL_USER, **overrides: Any
    ) -> Memoir:
        """The Memoir whose home is ``home`` (``~`` expanded, made absolute), other
        settings from the environment unless given as keywords.

        Example::

            m = Memoir.at("~/.memoir")
        """
        return cls.open(Settings.from_env(home=home, **overrides), user=user)

    def as_user(self, name: str) -> Memoir:
        """This home acting for user ``name``: the same store, settings, memory lane and
        job service; closing the view leaves them open (the Memoir it came from owns
        them).

        Example::

            alice = m.as_user("alice")
            alice.recall("deploy")  # alice's memories only
        """
        view = Memoir(self.settings, self.store, user=name)
        view._root = self._root or self
        return view

    def close(self) -> None:
        """Close the home: the running memory extraction ends (queued work is durable),
        then the store. A view made by :meth:`as_user` leaves them open.

        Example::

            m = Memoir.at("~/.memoir")
            m.close()
        """
        if self._root is not None:  # a view: its parts are the root's
            return
        if self._memories is not None:  # the running extraction ends; queued work is durable
            self._memories.close()
        if self._jobs is not None and (close := getattr(self._jobs.admission, "close", None)):
            close()
        self.store.close()

    def search(
        self,
        query: str,
        *,
        filters: SearchFilters | None = None,
        mode: SearchMode | None = None,
        limit: int = 10,
        after: datetime | str | None = None,
        before: datetime | str | None = None,
        embedder: Embedder | Literal["configured"] | None = CONFIGURED,
        summaries: SummaryReader | Literal["configured"] | None = CONFIGURED,
    ) -> list[SearchHit]:
        """Search past exchanges; returns ``memoir.search.SearchHit`` values, best first.

        ``filters`` (``memoir.search.SearchFilters``; a session id may be a unique prefix; its
        ``user`` None: this Memoir's user), ``mode`` ("text" | "vector" | "hybrid"; None: hybrid
        when an embedder is configured), ``limit`` (at most 1,000). ``embedder`` replaces the one
        ``MEMOIR_EMBEDDER`` configures (None: none, text only); ``summaries`` — a function of a
        session id giving its summary or None — replaces this home's summaries beside each hit
        (None: no summary read). ``after`` / ``before`` replace the filters' own and take what
        ``memoir search --after/--before`` takes: a datetime, or text such as ``"2026-03"``,
        ``"yesterday"`` or ``"2 weeks ago"`` (``before`` then takes in the whole day or month
        named; ``memoir.search.parse_when``).

        Example::

            hits = m.search("deploy on fridays", limit=5)
            print(hits[0].exchange_id, hits[0].score)
        """
        from memoir.memory.item_store import memory_parts
        from memoir.search.engine import search_configured

        filters = verbs.search_filters(filters, after, before, self.user)
        chosen: dict[str, Any] = {} if embedder == CONFIGURED else {"embedder": embedder}
        chosen["items"] = memory_parts(self.store).items  # exchanges found through items
        return search_configured(
            self.store,
            query,
            embedder_setting=self.settings.embedder,
            summaries=self._summary_body if summaries == CONFIGURED else summaries,
            filters=filters,
            mode=mode,
            limit=limit,
            **chosen,
        )

    def sync(
        self,
        *,
        sources: str | os.PathLike[str] | Iterable[str | os.PathLike[str]] | None = None,
        progress: Callable[[SyncProgress], None] | None = None,
        purge_excluded: bool = False,
        follow_symlinks: bool = False,
    ) -> SyncReport:
        """Archive and index new or grown transcripts (``memoir.ingest.sync``); takes the
        single-instance sync lock and raises ``Busy`` when another sync holds it. With
        ``purge_excluded``, conversations of projects excluded after they were stored are
        removed first (else they are listed in ``SyncReport.excluded_kept``); with
        ``follow_symlinks``, symlinked transcripts pointing out of their source are read
        too (else listed in ``SyncReport.symlinks_left_out``).

        Example::

            report = m.sync()  # the default sources: ~/.claude, ~/.codex
            print(report.events_added, "events added")
        """
        return verbs.sync_home(
            self.settings,
            self.store,
            sources=sources,
            progress=progress,
            purge_excluded=purge_excluded,
            follow_symlinks=follow_symlinks,
        )

    def session(self, session_id: str) -> Session:
        """The stored session of this Memoir's user ``session_id`` names: its id, or a
        unique prefix of it (as ``memoir show`` takes); ``NotFound`` when none does (another
        user's session is not told apart from one that does not exist).

        Example::

            session = m.session("3f2a9c1e")
            print(session.project, session.updated_at)
        """
        return verbs.find_session(self.store, session_id, self.user)

    def events(self, session_id: str, *, after: int = 0, upto: int | None = None) -> list[Event]:
        """The session's events in order, those with an ordinal past ``after`` up to
        ``upto`` (what ``memoir show --json`` prints); ``session_id`` as for ``session``.

        Example::

            for event in m.events("3f2a9c1e", after=10):
                print(event.ordinal, event.kind)
        """
        whole_number("after", after, 0)
        if upto is not None:
            whole_number("upto", upto, 0)
        return self.store.events.of(self.session(session_id).id, after=after, upto=upto)

    def exchanges(self, session_id: str) -> list[Exchange]:
        """The session's exchanges in order: each user prompt with the turns answering it
        (ids ``SESSION:N``, as search hits name them).

        Example::

            for exchange in m.exchanges("3f2a9c1e"):
                print(exchange.id, exchange.user_text[:60])
        """
        return self.store.exchanges.of(self.session(session_id).id)

    def summarize(
        self,
        session_id: str,
        *,
        mode: RunMode = "auto",
        use_cache: bool = True,
        progress: SummaryProgress | None = None,
    ) -> SessionRun:
        """Summarize one stored session now with the episodic summarizer (``memoir
        summarize``): full, incremental (merged into its summary), or auto; saved, and
        held by the session's summary claim (``Busy`` while another process has it).

        Example::

            run = m.summarize("3f2a9c1e", mode="full")
            print(run.mode, run.saved)
        """
        from memoir.summaries.session import closing_source

        sid = verbs.find_session(self.store, session_id, self.user).id
        with closing_source(self._model, self._fallback_model) as models:
            return verbs.summarize(
                self.settings,
                self.store,
                sid,
                models,
                mode=mode,
                use_cache=use_cache,
                progress=progress,
            )

    def compactor(
        self,
        *,
        memory: bool = True,
        model: Model | None = None,
        counter: TokenCounter | None = None,
        tail_budget: int | None = None,
    ) -> Compactor:
        """A ``memoir.compaction.Compactor`` with the configured model (or ``model``), the
        threshold and tail ratios of ``MEMOIR_COMPACT_THRESHOLD_RATIO`` /
        ``MEMOIR_COMPACT_TAIL_RATIO`` and this store for checkpoints and traces. ``memory``:
        each checkpoint dispatches a memory extraction of the range it replaced (never
        waited on; not on a read-only store). ``counter`` replaces the model's token
        counter; ``tail_budget`` (tokens) the tail's share of the threshold.

        Example::

            result = m.compactor().compact(messages, window=200_000)
            print(result.messages)
        """
        memories = self._memory_engine if memory and not self.store.read_only else None
        return verbs.compactor(
            self.settings,
            self.store,
            model if model is not None else self._model(),
            memories,
            counter=counter,
            tail_budget=tail_budget,
        )

    def remember(self, session_id: str, turn: int | None = None) -> Remembered:
        """What the user asked to keep, extracted now (``memoir remember``): the outcome
        with the items saved, or the reason none were.

        Example::

            outcome = m.remember("3f2a9c1e")
            print([item.content for item in outcome.items])
        """
        ensure_writable(self.store, "memoir remember")
        sid = self.store.db.query(resolve_plan(session_id, user=self.user))
        return verbs.remembered(self._memory_engine().remember(sid, turn))

    def recall(
        self,
        query: str,
        *,
        scope: str | None = None,
        project: str | None = None,
        kinds: Sequence[str] = (),
        limit: int = 10,
        as_of: datetime | str | None = None,
        history: bool = False,
        user: str | None = None,
    ) -> list[RecallHit]:
        """The memory items that best answer ``query`` (``memoir.memory.recall``): full
        text over content and keys fused with vector similarity when an embedder is
        configured. ``project``: its project-scoped items with the global ones; ``scope``
        "global" | "project"; ``kinds`` among fact, preference, decision, plan,
        constraint; ``as_of``: the items valid then (superseded since or not); ``history``:
        superseded items too; ``user``: that user's (None: this Memoir's user's).
        ``as_of`` may be text, as ``--as-of`` takes it (``"2026-03-01"``, ``"yesterday"``).

        Example::

            for hit in m.recall("which database?", limit=3):
                print(hit.item.content, hit.score)
        """
        from memoir.memory.item_store import memory_parts
        from memoir.memory.recall import recall

        whole_number("limit", limit, 1)
        as_of = None if as_of is None else instant(as_of, "as_of")
        where = item_filter(scope, project, kinds, as_of, history, self._who(user))
        # the newest items (no query) need no embedder: not even its checks' reads
        embedder = self._item_embedder() if query.strip() else None
        items = memory_parts(self.store).items
        return verbs.recall_hits(recall(items, query, where, limit=limit, embedder=embedder))

    def context(
        self,
        *,
        project: str | None = None,
        budget_tokens: int = 800,
        query: str | None = None,
        user: str | None = None,
    ) -> ContextBlock:
        """The block of the most relevant live items an agent prepends to its next
        session's system prompt, within ``budget_tokens`` (counted exactly with the
        configured model's tokenizer): with ``query``, in recall order; else constraints,
        preferences, decisions, facts, plans (each: most often said, then newest).

        Example::

            block = m.context(project="shop", budget_tokens=400)
            messages.insert(0, {"role": "system", "content": block.text})
        """
        whole_number("budget_tokens", budget_tokens, 0)
        where = item_filter(None, project, (), None, False, self._who(user))
        model_name, embedder = self._model().name, self._item_embedder()
        return verbs.context_block(self.store, where, budget_tokens, query, model_name, embedder)

    def forget(
        self,
        *,
        item: str | None = None,
        session: str | None = None,
        project: str | None = None,
        matching: str | None = None,
        user: str | None = None,
    ) -> list[Memory]:
        """Forget the items one selector names (an item id or prefix, a session — id or
        prefix —, a project, or a query every word of which an item holds), with what they
        superseded; their evidence is tombstoned so it is never extracted again. Only
        ``user``'s items (None: this Memoir's user's) are looked at.

        Example::

            gone = m.forget(matching="staging password")
            print(len(gone), "items forgotten")
        """
        gone = verbs.forget(self.store, self._who(user), item, session, project, matching)
        return verbs.memory_values(gone)

    def append(
        self,
        session_id: str,
        messages: Sequence[Mapping[str, Any]],
        *,
        project: str | None = None,
        user: str | None = None,
    ) -> Appended:
        """Add chat messages to the session ``session_id`` (``user``'s name for it; None:
        this Memoir's user), made in ``project`` (default ``api``) when it is new: the path
        the HTTP API's ``POST /api/sessions/ID/events`` takes. Messages are the OpenAI /
        Anthropic chat shape (``role``, ``content``; optionally ``name``, ``timestamp``,
        ``tool_calls``, your own ``id`` and ``metadata``; docs/library.md has them all),
        stored as events in one transaction and searchable at once. A message whose ``id``
        is stored already is skipped, so a retried batch stores nothing twice.
        ``ConfigError`` for a malformed message (nothing stored) or a session read from a
        transcript.

        Example::

            m.append("chat-1", [{"role": "user", "content": "Deploy on Fridays?"}])
        """
        owner = self._who(user)
        wiring.create_session(self.store, owner, session_id=session_id, project=project)
        result = wiring.append_messages(self.settings, self.store, owner, session_id, messages)
        return verbs.appended(result)

    # long-term memory beyond the four verbs, and background jobs -------------------------
    @property
    def memories(self) -> MemoryItems:
        """The memory items of this Memoir's user: list, history, export, import.

        Example::

            for item in m.memories.list(project="shop"):
                print(item.kind, item.content)
        """
        return MemoryItems(self.store, self.user)

    def jobs(self) -> JobService:
        """The job service of this home (one per Memoir, shared by its views: its in-process
        admission is shared by the callers of this instance): admission in Redis when
        ``MEMOIR_REDIS_URL`` is set (``AdmissionUnavailable`` while it cannot be reached),
        else a bounded in-process LRU (instance-local); jobs are rows of this store, the
        intervals ``MEMOIR_JOB_*_S``.

        Example::

            job = m.jobs().latest("local", session.id, "summary")
            print(job.state if job else "no job yet")
        """
        if self._root is not None:
            return self._root.jobs()
        with self._parts_lock:
            if self._jobs is None:
                self._jobs = wiring.job_service(self.settings, self.store)
            return self._jobs

    # the parts, made from the settings (private: memoir.service hands them to adapters) ----
    def _who(self, user: str | None) -> str:
        """The user a call acts for: the one it names, else this Memoir's."""
        return self.user if user is None else check_user(user)

    def _named(self, session_id: str) -> str:
        """The stored id of this Memoir's user's session ``session_id`` names (its id or
        its name); else ``session_id`` as given (a stored id, as the service passes)."""
        found = self.store.sessions.get(session_id, user=self.user)
        return found.id if found is not None else session_id

    def _summary_body(self, session_id: str) -> str | None:
        return wiring.summary_body(self.settings, self.store, self._named(session_id))

    def _model(self) -> Model:
        return wiring.model(self.settings, self.store)

    def _fallback_model(self) -> Model | None:
        return wiring.fallback_model(self.settings, self.store)

    def _memory_model(self) -> Model:
        """The model memory extraction asks: the configured one (offline, it runs the
        offline extractor on the request's task)."""
        return self._model()

    def _summary_store(self) -> SummaryStore:
        return wiring.summary_store(self.settings, self.store)

    def _item_embedder(self) -> ItemEmbedder | None:
        return wiring.item_embedder(self.settings, self.store)

    def _memory_engine(self) -> Memories:
        """The memory engine of this home (one per Memoir: its lane thread is shared)."""
        if self._root is not None:
            return self._root._memory_engine()
        with self._parts_lock:
            if self._memories is None:
                self._memories = wiring.memory_engine(self.settings, self.store, self._memory_model)
            return self._memories

    def __enter__(self) -> Memoir:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
