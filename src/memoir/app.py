"""The ``Memoir`` object: one home (settings + store + model), the library's front door.

Each operation delegates to the package that owns it; this module only wires them.
"""

from __future__ import annotations

import logging
import os
import threading
from collections.abc import Callable, Iterable, Mapping, Sequence
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any, Literal

from memoir.config import Settings, whole_number
from memoir.errors import ConfigError, install_hint
from memoir.home_files import tighten_home
from memoir.model.session import LOCAL_USER
from memoir.store import Store, open_store

if TYPE_CHECKING:
    from memoir.compaction import Compactor
    from memoir.ingest.observer import SyncObserver
    from memoir.ingest.rescan import RescanReport
    from memoir.ingest.sync import SyncProgress, SyncReport
    from memoir.ingest.verify import VerifyReport
    from memoir.jobs import Job, JobProgress, JobService
    from memoir.llm.offline.rank import SentenceScorer
    from memoir.llm.port import Model, TokenCounter
    from memoir.memory.keeping import ImportReport
    from memoir.memory.keyed import KeyedMemories
    from memoir.memory.memories import Memories, RecoveryReport
    from memoir.memory.recall import ContextBlock, ItemEmbedder, Recalled
    from memoir.memory.runner import MemoryParts, Outcome
    from memoir.memory.sync_pass import MemoryPassProgress, MemoryPassReport
    from memoir.model import Event, Exchange, Session
    from memoir.search.backfill import BackfillResult
    from memoir.search.embedder import Embedder
    from memoir.search.engine import SearchMode, SummaryReader
    from memoir.search.hits import SearchHit
    from memoir.store.memory_rows import MemoryItemRow
    from memoir.store.parts.api import AppendResult
    from memoir.store.parts.memory_items import ItemFilter
    from memoir.store.values import SearchFilters
    from memoir.summaries.episodic import Progress as SummaryProgress
    from memoir.summaries.port import SummaryStore
    from memoir.summaries.session import RunMode, SessionRun
    from memoir.summaries.summary_pass import PassProgress, SummaryPassReport

__all__ = ["CONFIGURED", "LOCAL_USER", "Memoir"]


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
        self.user = _check_user(user)
        self._memories: Memories | None = None
        self._jobs: JobService | None = None
        self._root: Memoir | None = None  # the Memoir a view of ``as_user`` shares parts with
        # the memory engine and the job service are made once, whichever thread asks first
        self._parts_lock = threading.RLock()

    @classmethod
    def open(
        cls, settings: Settings | None = None, *, user: str = LOCAL_USER, **overrides: Any
    ) -> Memoir:
        if settings is None:
            settings = Settings.from_env(**overrides)
        _check_user(user)
        settings.ensure_home()
        return cls(settings, open_store(settings), user=user)

    @classmethod
    def at(
        cls, home: str | os.PathLike[str], *, user: str = LOCAL_USER, **overrides: Any
    ) -> Memoir:
        """The Memoir whose home is ``home`` (``~`` expanded, made absolute), other
        settings from the environment unless given as keywords."""
        return cls.open(Settings.from_env(home=home, **overrides), user=user)

    def as_user(self, name: str) -> Memoir:
        """This home acting for user ``name``: the same store, settings, memory lane and
        job service; closing the view leaves them open (the Memoir it came from owns
        them)."""
        view = Memoir(self.settings, self.store, user=name)
        view._root = self._root or self
        return view

    def _who(self, user: str | None) -> str:
        """The user a call acts for: the one it names, else this Memoir's."""
        return self.user if user is None else _check_user(user)

    def close(self) -> None:
        if self._root is not None:  # a view: its parts are the root's
            return
        if self._memories is not None:  # the running extraction ends; queued work is durable
            self._memories.close()
        if self._jobs is not None:
            close = getattr(self._jobs.admission, "close", None)
            if close is not None:
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

        ``filters`` (``memoir.search.SearchFilters``; a session id may be a unique prefix;
        its ``user`` None: this Memoir's user),
        ``mode`` ("text" | "vector" | "hybrid"; None: hybrid when an embedder is
        configured), ``limit`` (at most 1,000). ``embedder`` replaces the one
        ``MEMOIR_EMBEDDER`` configures (None: none, text only); ``summaries`` — a function
        of a session id giving its summary or None — replaces this home's summaries beside
        each hit (None: no summary read). ``after`` / ``before`` replace the filters' own
        and take what ``memoir search --after/--before`` takes: a datetime, or text such
        as ``"2026-03"``, ``"yesterday"`` or ``"2 weeks ago"`` (``before`` then takes in
        the whole day or month named; ``memoir.search.parse_when``).
        """
        from memoir.search.facade import search_configured

        if after is not None or before is not None:
            from dataclasses import replace

            from memoir.store.values import SearchFilters as Filters

            given = filters or Filters()
            filters = replace(
                given,
                after=given.after if after is None else _instant(after, "after"),
                before=given.before if before is None else _instant(before, "before", end=True),
            )
        from dataclasses import replace as with_user

        from memoir.store.values import SearchFilters as Scoped

        given = filters or Scoped()
        filters = given if given.user is not None else with_user(given, user=self.user)
        chosen: dict[str, Any] = {} if embedder == CONFIGURED else {"embedder": embedder}
        return search_configured(
            self.store,
            query,
            embedder_setting=self.settings.embedder,
            summaries=self.summary_body if summaries == CONFIGURED else summaries,
            filters=filters,
            mode=mode,
            limit=limit,
            **chosen,
        )

    def summary_updated_at(self, session_id: str) -> datetime | None:
        """When the session's summary was last written (``None``: never); ``session_id``
        as for :meth:`summary_body`."""
        from memoir.summaries.persist import summary_updated_at

        sid = self._named(session_id)
        return summary_updated_at(self.summary_store(), self.store.summaries, sid)

    def summary_body(self, session_id: str) -> str | None:
        """The readable summary of a session (its header stripped), or None when it has
        none: what a search shows beside each hit. ``session_id``: a stored id (a hit's),
        or this Memoir's user's name for a session."""
        from memoir.summaries.persist import read_summary_body

        return read_summary_body(self.summary_store(), self.store, self._named(session_id))

    def _named(self, session_id: str) -> str:
        """The stored id of this Memoir's user's session ``session_id`` names (its id or
        its name); else ``session_id`` as given (a stored id, as the service passes)."""
        found = self.store.sessions.get(session_id, user=self.user)
        return found.id if found is not None else session_id

    def embedder(self) -> Embedder | None:
        """The configured embedder (``MEMOIR_EMBEDDER``), or None when semantic search is
        off (``none``) or its extra is not installed (``auto``)."""
        from memoir.search.embedder import load_embedder

        return load_embedder(self.settings.embedder)

    def summary_scorer(self) -> SentenceScorer | None:
        """How the offline summary ranks its sentences: the centrality of the embedder's
        vectors when ``MEMOIR_SUMMARY_SENTENCES=embedder`` and an embedder is configured
        and installed; None (lexical) otherwise."""
        from memoir.llm.offline.rank import embedding_scorer

        if self.settings.summary_sentences != "embedder":
            return None
        embedder = self.embedder()
        return None if embedder is None else embedding_scorer(embedder.embed)

    def embed_pending(
        self,
        *,
        max_items: int | None = None,
        batch: int | None = None,
        progress: Any = None,
    ) -> BackfillResult:
        """Embed the exchanges that have no vector (or no token states) yet, then those
        whose vector is from an older recipe, at most ``max_items``; takes the
        single-instance embed lock (``Busy`` when another process embeds), then writes the
        matrix files the next search maps. Raises ``ConfigError`` when no embedder is
        configured or installed."""
        from memoir.ingest.lock import embed_lock
        from memoir.search.backfill import DEFAULT_BATCH, embed_backlog
        from memoir.search.embedder import EmbeddingsUnavailable
        from memoir.search.vectors import prepare_files

        if batch is not None:
            whole_number("batch", batch, 1)
        if max_items is not None:
            whole_number("max_items", max_items, 0)
        from memoir.store import ensure_writable

        ensure_writable(self.store, "memoir embed")  # before the model runs on a batch
        tighten_home(self.settings.home)  # a home an older Memoir left open to others
        embedder = self._writing_embedder()
        if embedder is None:
            if self.settings.embedder == "none":
                raise ConfigError("MEMOIR_EMBEDDER=none: semantic search is switched off")
            raise EmbeddingsUnavailable(
                f"semantic search needs the embeddings extra: {install_hint('embeddings')}"
            )
        busy = "another memoir embed is running"
        # the home's lock, and the store's: homes sharing a database embed its backlog once
        with embed_lock(self.settings.home), self.store.claims.hold("embed", busy):
            result = embed_backlog(
                self.store,
                embedder,
                batch=batch or DEFAULT_BATCH,
                max_items=max_items,
                progress=progress,
            )
            # the next search maps the matrix from a file (vectors embedded on write
            # since it was written included; nothing is written while a patch will do)
            prepare_files(self.store, embedder.name)
        return result

    def embed_written(self, session_ids: Sequence[str]) -> int:
        """Embedding on write: embed the newest exchanges of ``session_ids`` that have no
        vector yet (at most ``memoir.search.backfill.WRITE_MAX``), so a search by meaning
        finds them the moment the write returns; how many were embedded. Nothing when
        ``MEMOIR_EMBED_ON_WRITE`` is off, no embedder is configured or installed, or the
        store is read-only. A failure is logged, never raised: the write is done, and
        ``memoir embed`` picks up what is left."""
        if not self.settings.embed_on_write or not session_ids or self.store.read_only:
            return 0
        from memoir.search.backfill import embed_written

        try:
            embedder = self._writing_embedder()
            if embedder is None:
                return 0
            return embed_written(self.store, embedder, session_ids)
        except Exception:  # any embedder or store failure: the write it follows stands
            logging.getLogger(__name__).warning("embedding on write failed", exc_info=True)
            return 0

    def _writing_embedder(self) -> Embedder | None:
        """The configured embedder, for a call that stores what it makes: the test fake
        (``MEMOIR_EMBEDDER=hash``) is refused in a home holding real vectors."""
        embedder = self.embedder()
        if self.settings.embedder == "hash" and not self.store.read_only:
            from memoir.search.embedder import check_fake_embedder

            stored = [*self.store.embeddings.models(), *self.store.memory_items.vector_models()]
            check_fake_embedder(self.settings.embedder, stored)
        return embedder

    def model(self) -> Model:
        """The configured model (``MEMOIR_LLM``), every call metered into the store's usage
        ledger and retried (RateLimited / Transient) within ``llm_retry_budget`` attempts."""
        from memoir.llm.wiring import wrapped_model

        return wrapped_model(self.settings, self.store.usage)

    def fallback_model(self) -> Model | None:
        """The refusal fallback (``MEMOIR_LLM_FALLBACK``), wrapped the same way, or None."""
        from memoir.llm.wiring import wrapped_fallback

        return wrapped_fallback(self.settings, self.store.usage)

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
        counter; ``tail_budget`` (tokens) the tail's share of the threshold."""
        from memoir.compaction import Compactor

        if tail_budget is not None:
            whole_number("tail_budget", tail_budget, 0)
        on_checkpoint = None
        if memory and not self.store.read_only:
            on_checkpoint = self.memories().on_checkpoint
        return Compactor.from_settings(
            self.settings,
            model if model is not None else self.model(),
            store=self.store,
            counter=counter,
            tail_budget=tail_budget,
            on_checkpoint=on_checkpoint,
        )

    # long-term memory ---------------------------------------------------------------------
    def memory_model(self) -> Model:
        """The model memory extraction asks: the configured one (offline, it runs the
        offline extractor on the request's task); metered and retried as every model is."""
        return self.model()

    def memories(self) -> Memories:
        """The memory engine of this home (one per Memoir: its lane thread is shared)."""
        if self._root is not None:
            return self._root.memories()
        with self._parts_lock:
            if self._memories is None:
                from memoir.llm.tokens import counter_for, encoding_for_model
                from memoir.memory.memories import Memories
                from memoir.memory.runner import Runner

                model = self.memory_model()
                parts = self._memory_parts()
                counter = counter_for(encoding_for_model(model.name))
                runner = Runner(parts, model, counter, embedder=self._item_embedder)
                self._memories = Memories(parts, self.store.claims, runner)
            return self._memories

    def _memory_parts(self) -> MemoryParts:
        from memoir.memory.runner import MemoryParts

        return MemoryParts(
            self.store.sessions,
            self.store.events,
            self.store.checkpoints,
            self.store.memory,
            self.store.memory_items,
        )

    def remember(self, session_id: str, turn: int | None = None) -> Outcome:
        """What the user asked to keep, extracted now (``memoir remember``): the outcome
        with the items saved, or the reason none were."""
        from memoir.search.session_ref import resolve_session
        from memoir.store import ensure_writable

        ensure_writable(self.store, "memoir remember")
        sid = resolve_session(self.store.sessions, session_id, user=self.user)
        return self.memories().remember(sid, turn)

    def extract(
        self, session_id: str, *, anchor: str, turn: int | None = None, note: str | None = None
    ) -> str:
        """Queue an extraction the agent judged worth it (``anchor``: its tool-call id);
        ``"accepted"`` at once, run in the background after the turn."""
        from memoir.search.session_ref import resolve_session

        sid = resolve_session(self.store.sessions, session_id, user=self.user)
        return self.memories().extract(sid, anchor=anchor, turn=turn, note=note)

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
    ) -> list[Recalled]:
        """The memory items that best answer ``query`` (``memoir.memory.recall``): full
        text over content and keys fused with vector similarity when an embedder is
        configured. ``project``: its project-scoped items with the global ones; ``scope``
        "global" | "project"; ``kinds`` among fact, preference, decision, plan,
        constraint; ``as_of``: the items valid then (superseded since or not); ``history``:
        superseded items too; ``user``: that user's (None: this Memoir's user's).
        ``as_of`` may be text, as ``--as-of`` takes it (``"2026-03-01"``, ``"yesterday"``)."""
        from memoir.memory.recall import recall

        whole_number("limit", limit, 1)
        as_of = None if as_of is None else _instant(as_of, "as_of")
        where = self._item_filter(scope, project, kinds, as_of, history, self._who(user))
        return recall(
            self.store.memory_items, query, where, limit=limit, embedder=self._item_embedder()
        )

    def memory_context(
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
        preferences, decisions, facts, plans (each: most often said, then newest)."""
        from memoir.llm.tokens import counter_for, encoding_for_model
        from memoir.memory.recall import (
            KIND_ORDER,
            MAX_CONTEXT_POOL,
            context_block,
            recall,
            standing_order,
        )

        whole_number("budget_tokens", budget_tokens, 0)
        where = self._item_filter(None, project, (), None, False, self._who(user))
        if query and query.strip():
            hits = recall(
                self.store.memory_items, query, where, limit=200, embedder=self._item_embedder()
            )
            ordered = [h.item for h in hits]
        else:
            # the budget holds a few dozen lines: the first few hundred candidates are plenty
            pool = min(MAX_CONTEXT_POOL, max(200, budget_tokens // 4))
            found = self.store.memory_items.select(where, limit=pool, standing=KIND_ORDER)
            ordered = standing_order(found)
        counter = counter_for(encoding_for_model(self.model().name))
        return context_block(ordered, budget_tokens, counter)

    def keyed_memories(self, user: str | None = None) -> KeyedMemories:
        """The JSON values ``user`` (None: this Memoir's user) keeps under a namespace and
        a key (:mod:`memoir.memory.keyed`; what LangGraph's store adapter runs on)."""
        from memoir.memory.keyed import KeyedMemories

        return KeyedMemories(self.store.keyed_items, self._who(user), embedder=self._item_embedder)

    def memory_history(self, item_id: str, user: str | None = None) -> list[MemoryItemRow]:
        """The item (its id or a unique prefix, of ``user``'s items — None: this Memoir's
        user's) with what it superseded and what superseded it, oldest first."""
        from memoir.errors import NotFound

        found = self.store.memory_items.get(item_id, owner=self._who(user))
        if found is None:
            raise NotFound(f"no memory item {item_id!r}")
        return self.store.memory_items.chain(found.id)

    def forget_memories(
        self,
        *,
        item: str | None = None,
        session: str | None = None,
        project: str | None = None,
        matching: str | None = None,
        user: str | None = None,
    ) -> list[MemoryItemRow]:
        """Forget the items one selector names (an item id or prefix, a session — id or
        prefix —, a project, or a query every word of which an item holds), with what they
        superseded; their evidence is tombstoned so it is never extracted again. Only
        ``user``'s items (None: this Memoir's user's) are looked at."""
        from memoir.memory.keeping import forget
        from memoir.search.session_ref import resolve_session
        from memoir.store import ensure_writable

        ensure_writable(self.store, "memoir memories forget")
        if sum(x is not None for x in (item, session, project, matching)) != 1:
            raise ConfigError("name exactly one of: an item, a session, a project, a query")
        owner = self._who(user)
        if session is not None:
            session = resolve_session(self.store.sessions, session, user=owner)
        if project is not None:
            project = self.memory_project(project, user=owner)
        return forget(
            self.store.memory_items,
            self.store.memory,
            item=item,
            session=session,
            project=project,
            matching=matching,
            owner=owner,
        )

    def export_memories(self, user: str | None = None) -> Iterable[str]:
        """Every item (history included) and tombstone of ``user`` (None: this Memoir's
        user) as JSON lines (for ``import``)."""
        from memoir.memory.keeping import export_lines

        return export_lines(self.store.memory_items, self._who(user))

    def import_memories(self, lines: Iterable[str], user: str | None = None) -> ImportReport:
        """Read an export into this home as ``user``'s items (None: this Memoir's user's),
        merging as extraction does; all or nothing."""
        from memoir.memory.keeping import import_lines
        from memoir.store import ensure_writable

        ensure_writable(self.store, "memoir memories import")
        return import_lines(self.store.memory_items, lines, self._who(user))

    def memory_project(self, ref: str, *, user: str | None = None) -> str:
        """The project ``ref`` names, as ``--project`` takes it: its name, its folder or
        the folder's last part (:func:`memoir.search.session_ref.resolve_project`), or the
        exact project name of a memory item (one imported from another home), among
        ``user``'s (None: this Memoir's user's). ``NotFound`` when it names none."""
        from memoir.errors import NotFound
        from memoir.ingest.detect import project_name
        from memoir.search.session_ref import resolve_project
        from memoir.store.parts.memory_items import ItemFilter

        owner = self._who(user)
        try:
            return resolve_project(self.store.sessions, ref, safe=project_name, user=owner)
        except NotFound:
            mine = ItemFilter(owner=owner, project=ref, history=True)
            if self.store.memory_items.ids(mine, limit=1):
                return ref
            raise

    def _item_filter(
        self,
        scope: str | None,
        project: str | None,
        kinds: Sequence[str],
        as_of: datetime | None,
        history: bool,
        user: str | None,
    ) -> ItemFilter:
        from memoir.memory.values import ItemKind, Scope
        from memoir.store.parts.memory_items import ItemFilter

        if scope is not None and scope not in {s.value for s in Scope}:
            raise ConfigError(f"scope must be global or project, not {scope!r}")
        known = {k.value for k in ItemKind}
        bad = [k for k in kinds if k not in known]
        if bad:
            raise ConfigError(f"unknown kind {bad[0]!r}; kinds: {', '.join(sorted(known))}")
        if as_of is not None and as_of.tzinfo is None:
            as_of = as_of.replace(tzinfo=UTC)
        return ItemFilter(
            owner=user,
            projects=(project,) if project is not None and scope != "project" else None,
            project=project if scope == "project" else None,
            scope=scope,
            kinds=tuple(kinds),
            as_of=as_of,
            history=history,
        )

    def _item_embedder(self) -> ItemEmbedder | None:
        """The embedder recall ranks with (and stores item vectors of), when semantic search
        is configured and installed."""
        if self.settings.embedder == "none":
            return None
        return self._writing_embedder()

    def recover_memories(self) -> RecoveryReport:
        """Run memory work left unsettled (checkpoints past the cursor, queued operations,
        pending failures): what ``memoir sync`` does before it returns."""
        from memoir.store import ensure_writable

        ensure_writable(self.store, "memory recovery")
        return self.memories().recover()

    def recover_memories_in_background(self) -> threading.Thread | None:
        """Start memory recovery on a daemon thread (what a long-lived process — ``memoir
        serve``, ``memoir worker`` — does at start-up); None on a read-only store."""
        if self.store.read_only:
            return None

        def recover() -> None:
            try:
                self.recover_memories()
            except Exception:  # a process's start-up never fails by its memory backlog
                logging.getLogger(__name__).exception("memory recovery at start-up failed")

        thread = threading.Thread(target=recover, name="memoir-memory-recovery", daemon=True)
        thread.start()
        return thread

    def memory_from_sync(self) -> tuple[bool, str]:
        """Whether ``memoir sync`` extracts memories from the sessions it syncs, and why:
        ``MEMOIR_MEMORY_FROM_SYNC`` (or the argument) when set, else off while
        ``memoir memories off`` has it stored in the home, else on."""
        origin = self.settings.origins.get("memory_from_sync", "default")
        if origin.startswith(("env", "argument")):
            return self.settings.memory_from_sync, origin
        if self.settings.memory_sync_switch.exists():
            return False, "stored by `memoir memories off`"
        return True, "default"

    def set_memory_from_sync(self, enabled: bool) -> tuple[bool, str]:
        """Switch memory from sync off (or on again) for this home, as ``memoir memories
        off`` / ``on`` with no session or project do; ``remember``, compaction and the
        agent's ``extract`` still extract. The switch now in effect, and why (an
        environment variable outranks what is stored)."""
        switch = self.settings.memory_sync_switch
        if enabled:
            switch.unlink(missing_ok=True)
        else:
            from memoir.home_files import private_file

            self.settings.ensure_home()
            with private_file(switch, "wb") as out:
                out.write(b"memory from sync is off: `memoir memories on` removes this file\n")
        return self.memory_from_sync()

    def remember_from_sync(
        self,
        *,
        limit: int | None = None,
        progress: Callable[[MemoryPassProgress], None] | None = None,
    ) -> MemoryPassReport:
        """The memory pass ``memoir sync`` runs after its summary pass: the new ranges of
        synced sessions gone quiet (the summaries' quiescence rule), newest first, at most
        ``limit`` (default ``MEMOIR_MEMORY_LIMIT``) through their lanes; denied ones
        settle as denials (``memoir.memory.sync_pass``). Off (nothing read): the report's
        ``off`` says why."""
        import time

        from memoir.ingest.plan import excluded
        from memoir.memory.sync_pass import MemoryPassReport, run_memory_pass
        from memoir.store import ensure_writable
        from memoir.summaries.policy import SummaryPolicy, is_quiescent

        limit = self.settings.memory_limit if limit is None else limit
        whole_number("limit", limit, 0)
        on, why = self.memory_from_sync()
        if not on:
            return MemoryPassReport(off=why)
        ensure_writable(self.store, "memory from sync")
        policy, now = SummaryPolicy.from_settings(self.settings), int(time.time() * 1000)
        patterns = self.settings.exclude_projects
        return run_memory_pass(
            self._memory_parts(),
            self.memories,
            limit=limit,
            quiet=lambda at: is_quiescent(at, policy, now),
            excluded=lambda project: excluded(project, patterns),
            progress=progress,
        )

    def set_incognito(self, session: str, incognito: bool = True) -> None:
        """Mark a session incognito (or not): nothing said in it while incognito is ever
        extracted into memory or sent to a memory model."""
        from dataclasses import replace

        from memoir.search.session_ref import resolve_session

        sid = resolve_session(self.store.sessions, session, user=self.user)
        found = self.store.sessions.get(sid)
        assert found is not None
        self.store.sessions.set_flags(sid, replace(found.flags, incognito=incognito))

    def set_memory(
        self, enabled: bool, *, session: str | None = None, project: str | None = None
    ) -> None:
        """Switch memory extraction off (or on again) for one session or one project.
        Ranges extracted while it was off stay denied for ever."""
        from dataclasses import replace

        from memoir.errors import ConfigError
        from memoir.search.session_ref import resolve_session

        if (session is None) == (project is None):
            raise ConfigError("give exactly one of session or project")
        if project is not None:
            name = self.memory_project(project)
            self.store.memory_items.switch_project(name, disabled=not enabled)
            return
        assert session is not None
        sid = resolve_session(self.store.sessions, session, user=self.user)
        found = self.store.sessions.get(sid)
        assert found is not None
        self.store.sessions.set_flags(sid, replace(found.flags, memory_disabled=not enabled))

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
        too (else listed in ``SyncReport.symlinks_left_out``)."""
        from memoir.ingest.lock import sync_lock
        from memoir.ingest.sync import sync

        with sync_lock(self.settings.home):
            report = sync(
                self.settings,
                self.store,
                observer=self.sync_observer(),
                sources=sources,
                progress=progress,
                purge_excluded=purge_excluded,
                follow_symlinks=follow_symlinks,
            )
        # after the lock (no sync waits on them): found by meaning at once, then the derived
        # text an older secret detector let through (bounded; one query once done)
        self.embed_written(report.sessions_touched)
        self.rescan_secrets()
        return report

    def summary_store(self) -> SummaryStore:
        """Where this home keeps summaries (``MEMOIR_SUMMARY_STORE``): archive files beside
        the transcripts, or the store's summary rows."""
        from memoir.summaries.stores import open_summary_store

        return open_summary_store(self.settings, self.store)

    def sync_observer(self) -> SyncObserver:
        """What a sync (or ``verify --repair``) tells as it rewrites or removes a
        conversation: the summaries' upkeep (marked stale, forgotten)."""
        from memoir.summaries.persist import SummaryUpkeep

        return SummaryUpkeep(self.settings.archive_dir, self.summary_store(), self.store)

    def summarize_pending(
        self,
        *,
        limit: int | None = None,
        progress: Callable[[PassProgress], None] | None = None,
    ) -> SummaryPassReport:
        """The summary pass ``memoir sync`` runs after indexing: (re)summarize idle
        conversations that need it, fresh ones first, at most ``limit`` (default
        ``MEMOIR_SUMMARY_LIMIT``) model-backed summaries. ``progress`` is told which
        conversation is being summarized, and how many of how many, before each one."""
        from memoir.summaries.model_source import closing_source
        from memoir.summaries.summary_pass import PassSettings, run_summary_pass

        limit = self.settings.summary_limit if limit is None else limit
        whole_number("limit", limit, 0)
        with closing_source(self.model, self.fallback_model, self.summary_scorer) as models:
            return run_summary_pass(
                self.store,
                self.summary_store(),
                PassSettings.from_settings(self.settings),
                models,
                limit=limit,
                progress=progress,
            )

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
        held by the session's summary claim (``Busy`` while another process has it)."""
        from memoir.search.session_ref import resolve_session
        from memoir.summaries.model_source import closing_source
        from memoir.summaries.session import EpisodeSettings, summarize_session

        session_id = resolve_session(self.store.sessions, session_id, user=self.user)
        with closing_source(self.model, self.fallback_model) as models:
            return summarize_session(
                self.store,
                self.summary_store(),
                session_id,
                models=models,
                episodes=EpisodeSettings.from_settings(self.settings),
                mode=mode,
                use_cache=use_cache,
                progress=progress,
            )

    def verify(self, *, repair: bool = False) -> VerifyReport:
        """Check the index against the archive (``memoir.ingest.verify``), and the
        summaries against the policy (their findings are warnings); then the secret re-scan
        of derived text: where it stands, or, with ``repair``, a bounded run of it."""
        from memoir.ingest.verify import Problem, verify
        from memoir.summaries.persist import summary_findings
        from memoir.summaries.policy import SummaryPolicy

        report = verify(self.settings, self.store, observer=self.sync_observer(), repair=repair)
        findings = summary_findings(
            self.summary_store(), SummaryPolicy.from_settings(self.settings)
        )
        report.warnings.extend(Problem(f.kind, f.where, f.detail) for f in findings)
        report.secret_rescan = self.secret_rescan(run=repair).as_dict()
        return report

    def secret_rescan(self, *, run: bool) -> RescanReport:
        """With ``run``, :meth:`rescan_secrets`; else where the re-scan stands (read only)."""
        from memoir.ingest.rescan import state_report

        return self.rescan_secrets() if run else state_report(self.store.rescan.states())

    def rescan_secrets(self, budget: int | None = None) -> RescanReport:
        """Re-scan derived text with this version's secret detector, a bounded share a run
        (``memoir.ingest.rescan``): after every sync, and by ``memoir verify --repair``;
        ``memoir verify`` reports where it stands. One process at a time
        (another's run is left to finish), and none on a read-only store."""
        from memoir.errors import Busy
        from memoir.ingest.rescan import BUDGET, RescanReport, rescan, state_report
        from memoir.secrets.rules import detector_id

        if self.store.read_only:
            return RescanReport(detector_id(), skipped="the store is read-only")
        standing = state_report(self.store.rescan.states())
        if standing.finished:  # the common case: one query, no detector loaded
            return standing
        try:
            with self.store.claims.hold("secret-rescan", "a secret re-scan is running"):
                return rescan(self.store.rescan, self.summary_store(), budget=budget or BUDGET)
        except Busy as exc:
            return RescanReport(detector_id(), skipped=str(exc))

    # sessions from code: read one, feed one, count what the home holds ------------------
    def session(self, session_id: str) -> Session:
        """The stored session of this Memoir's user ``session_id`` names: its id, or a
        unique prefix of it (as ``memoir show`` takes); ``NotFound`` when none does (another
        user's session is not told apart from one that does not exist)."""
        from memoir.search.session_ref import resolve_session

        sid = resolve_session(self.store.sessions, session_id, user=self.user)
        found = self.store.sessions.get(sid, user=self.user)
        if found is None:  # removed between the two reads
            from memoir.errors import NotFound

            raise NotFound(f"no session {session_id!r}")
        return found

    def events(self, session_id: str, *, after: int = 0, upto: int | None = None) -> list[Event]:
        """The session's events in order, those with an ordinal past ``after`` up to
        ``upto`` (what ``memoir show --json`` prints); ``session_id`` as for ``session``."""
        whole_number("after", after, 0)
        if upto is not None:
            whole_number("upto", upto, 0)
        return self.store.events.of(self.session(session_id).id, after=after, upto=upto)

    def exchanges(self, session_id: str) -> list[Exchange]:
        """The session's exchanges in order: each user prompt with the turns answering it
        (ids ``SESSION:N``, as search hits name them)."""
        return self.store.exchanges.of(self.session(session_id).id)

    def stats(self) -> dict[str, int | str]:
        """What ``memoir stats`` shows: the counts of what the store holds (sessions,
        events, exchanges, …), ``archive_files`` / ``archive_bytes``, ``backend``, and the
        conversations by summary state (``summaries_summarized``, ``summaries_pending``, …)."""
        from memoir.summaries.persist import summary_counts
        from memoir.summaries.policy import SummaryPolicy

        data: dict[str, int | str] = dict(self.store.stats())
        files = size = 0
        if self.settings.archive_dir.is_dir():
            for path in self.settings.archive_dir.glob("*/*.jsonl"):
                files += 1
                size += path.stat().st_size
        data["archive_files"], data["archive_bytes"] = files, size
        data["backend"] = self.store.backend
        policy = SummaryPolicy.from_settings(self.settings)
        for key, count in summary_counts(self.summary_store(), policy).items():
            data[f"summaries_{key}"] = count
        return data

    def append(
        self,
        session_id: str,
        messages: Sequence[Mapping[str, Any]],
        *,
        project: str | None = None,
        user: str = "local",
    ) -> AppendResult:
        """Add chat messages to the session ``session_id``, made (owned by ``user``, in
        ``project``, default ``api``) when it is new — a session fed from code, as one fed
        over the HTTP API (``POST /api/sessions/ID/events``), through the same path.

        Messages are the OpenAI / Anthropic chat shape: ``{"role", "content"}``, content a
        string or a list of text blocks, roles user, assistant, system, developer, tool
        (with OpenAI ``tool_calls`` / ``tool_call_id``), optionally a ``name`` (the
        speaker), a ``timestamp`` (without one: the nearest one sent with it, else the time
        it is stored, marked ``time_inferred``), your own ``id`` and ``metadata`` (a JSON
        object returned in its first event's ``payload["metadata"]``). They are stored as
        events, with the exchanges they open or grow and their index rows, in one
        transaction, and are
        searchable at once. A message whose ``id`` the session has stored already is
        skipped, so a retried batch stores nothing twice; a message without one is added
        every time. Returns ``added``, ``skipped`` and the session's ``last_ordinal``.
        ``session_id`` is ``user``'s name for the session (see :meth:`create_session`:
        stored under an id of Memoir's, found again by the name). ``ConfigError`` for a
        malformed message (nothing stored) or a session read from a transcript (its
        events are the sync's)."""
        self.create_session(user, session_id=session_id, project=project)
        return self._append(user, session_id, messages)

    # the HTTP service: sessions owned by a user -----------------------------------------
    def user_session(self, user: str, session_id: str) -> Session:
        """The session ``session_id`` names when ``user`` owns it — its id, or the name
        ``user`` gave it —; ``NotFound`` otherwise (another user's session is not told
        apart from one that does not exist). Use the returned session's ``id`` from here."""
        from memoir.errors import NotFound

        found = (
            self.store.sessions.get(session_id, user=user) if isinstance(session_id, str) else None
        )
        if found is None:
            raise NotFound(f"no session {session_id!r}")
        return found

    def create_session(
        self,
        user: str,
        *,
        session_id: str | None = None,
        project: str | None = None,
        incognito: bool = False,
        memory_disabled: bool = False,
    ) -> tuple[Session, bool]:
        """A session fed over the API, owned by ``user``: (the session, whether it is new).
        ``session_id`` is a name of ``user``'s: the session is stored under
        :func:`~memoir.model.session.named_session_id` of the user and the name, with the
        name, so every user has names of their own (two users' ``chat-1`` are two
        sessions). A name (or an id) ``user`` has already returns that session as it is.
        Without one, Memoir chooses the id (32 hex digits) and the session has no name."""
        import uuid
        from datetime import datetime

        from memoir.model import Harness, Session, SessionFlags
        from memoir.model.session import named_session_id
        from memoir.store import ensure_writable

        ensure_writable(self.store, "creating a session")
        if session_id is not None:
            found = self.store.sessions.get(session_id, user=user)
            if found is not None:
                return found, False
        now = datetime.now(UTC)
        wanted = Session(
            id=named_session_id(user, session_id) if session_id else uuid.uuid4().hex,
            project=project or "api",
            harness=Harness.API,
            user=user,
            flags=SessionFlags(incognito=incognito, memory_disabled=memory_disabled),
            created_at=now,
            updated_at=now,
            name=session_id or None,
        )
        stored, created = self.store.api.create(wanted)
        if stored.user != user:  # a digest collision: no name a client chooses reaches it
            raise ConfigError(f"session {session_id!r} cannot be created; choose another name")
        return stored, created

    def append_messages(
        self, user: str, session_id: str, messages: Sequence[Mapping[str, Any]]
    ) -> tuple[int, int]:
        """Append OpenAI-style messages (each optionally with a client ``"id"``) to a
        session of ``user``: (added, skipped). A message whose id is stored already is
        skipped, so a retried batch stores nothing twice; concurrent appends to one session
        take turns in the store."""
        result = self._append(user, session_id, messages)
        return result.added, result.skipped

    def append_user_messages(
        self, user: str, session_id: str, messages: Sequence[Mapping[str, Any]]
    ) -> AppendResult:
        """:meth:`append_messages` with the whole result: ``added``, ``skipped`` and the
        session's ``last_ordinal`` as this append left it (what the HTTP API answers,
        without a read of its own)."""
        return self._append(user, session_id, messages)

    def _append(
        self, user: str, session_id: str, messages: Sequence[Mapping[str, Any]]
    ) -> AppendResult:
        from memoir.errors import NotFound
        from memoir.ingest.api_messages import api_messages
        from memoir.model import Harness
        from memoir.store import ensure_writable
        from memoir.store.values import ApiMessage

        ensure_writable(self.store, "appending events")
        if not isinstance(session_id, str):
            raise NotFound(f"no session {session_id!r}")
        made: Sequence[ApiMessage] = []
        malformed: Exception | None = None
        try:  # a malformed message is told after the session's errors, as it always was
            made = api_messages(session_id, messages)
        except Exception as exc:  # raised again by check()
            malformed = exc
        stored: list[str] = []  # the id of the session the name found

        def check(found: Session) -> None:  # on the row the append locks: no read of its own
            if found.harness is not Harness.API:
                raise ConfigError(
                    f"session {session_id!r} is read from a {found.harness.value} transcript; "
                    "messages are appended only to sessions fed from code or the HTTP API"
                )
            if malformed is not None:
                raise malformed
            stored.append(found.id)

        result = self.store.api.append(session_id, made, user=user, check=check)
        if result.added:
            self.embed_written(stored)
        return result

    def archive_session(self, user: str, session_id: str) -> Session:
        """Mark a session of ``user`` archived (kept and searchable, never extracted)."""
        from dataclasses import replace

        found = self.user_session(user, session_id)
        flags = replace(found.flags, archived=True)
        self.store.sessions.set_flags(found.id, flags)
        return replace(found, flags=flags)

    # background jobs ----------------------------------------------------------------------
    def jobs(self) -> JobService:
        """The job service of this home (one per Memoir, shared by its views: its in-process
        admission is shared by the callers of this instance): admission in Redis when
        ``MEMOIR_REDIS_URL`` is set (``AdmissionUnavailable`` while it cannot be reached),
        else a bounded in-process LRU (instance-local); jobs are rows of this store, the
        intervals ``MEMOIR_JOB_*_S``."""
        if self._root is not None:
            return self._root.jobs()
        with self._parts_lock:
            if self._jobs is None:
                from memoir.jobs import JobService, JobTiming, LocalAdmission, RedisAdmission
                from memoir.jobs.admission import Admission

                admission: Admission = (
                    RedisAdmission(self.settings.redis_url)
                    if self.settings.redis_url
                    else LocalAdmission()
                )
                self._jobs = JobService(
                    self.store.jobs, admission, JobTiming.from_settings(self.settings)
                )
            return self._jobs

    def regenerate_summary(self, user: str, session_id: str) -> Job:
        """Queue a full regeneration of the summary of ``user``'s session (job kind
        ``summary``), or return the one already queued or running (a duplicate request is the
        same job). ``NotFound`` for a session ``user`` does not own; ``OversizedHistory``
        (pointing to incremental compression) beyond ``MEMOIR_EPISODE_MAX_FULL_TOKENS`` or
        past the 24 episodes a full run takes at most; ``AdmissionUnavailable`` while the
        configured Redis cannot be reached."""
        from memoir.jobs import Job
        from memoir.store import ensure_writable
        from memoir.summaries.session import EpisodeSettings, check_full_regeneration

        session_id = self.user_session(user, session_id).id
        ensure_writable(self.store, "regenerating a summary")
        active = self.store.jobs.active(user, session_id, "summary")
        if active is not None:  # a duplicate: not measured again
            return Job.from_row(active)
        check_full_regeneration(
            self.store, session_id, EpisodeSettings.from_settings(self.settings)
        )
        return self.jobs().request("summary", user, session_id)

    def summary_job(self, user: str, session_id: str) -> Job | None:
        """The newest summary job of ``user``'s session (whatever its state), or None
        (None too for a session ``user`` does not have)."""
        found = self.store.sessions.get(session_id, user=user)
        return None if found is None else self.jobs().latest(user, found.id, "summary")

    def run_summary_job(self, job: Job, progress: JobProgress, abort: threading.Event) -> None:
        """The handler of job kind ``summary``: the episodic summarizer's full run over the
        stored session (episodes cached, so a resumed job reuses what was done), its
        progress reported through the job, saved only while the job's claim holds. The
        session's summary claim is held for the save only: the job's claim in the store
        is what keeps two workers apart, and a worker stuck past its claim must not keep
        its replacement from saving."""
        from memoir.errors import SummaryError
        from memoir.store.claims import summary_claim
        from memoir.summaries.fenced import FencedSummaryStore, events_digest
        from memoir.summaries.model_source import closing_source
        from memoir.summaries.session import EpisodeSettings, summarize_session

        read = self.store.events.of(job.session_id)
        upto = read[-1].ordinal if read else 0
        taken = events_digest(read)

        def check() -> None:  # the claim still ours, and the events read still as they were
            progress.check()
            if events_digest(self.store.events.of(job.session_id, upto=upto)) != taken:
                raise SummaryError(
                    "the conversation's events were edited or deleted while it was being "
                    "summarized; regenerate again"
                )

        with closing_source(self.model, self.fallback_model) as models:
            summarize_session(
                self.store,
                FencedSummaryStore(
                    self.summary_store(),
                    check,
                    lambda: self.store.claims.hold(*summary_claim(job.session_id)),
                ),
                job.session_id,
                models=models,
                episodes=EpisodeSettings.from_settings(self.settings),
                mode="full",
                progress=progress,
                job_id=job.id,
                claim=False,
            )

    def run_worker(self, stop: threading.Event, *, worker_id: str | None = None) -> None:
        """Run a job worker until ``stop`` is set (``memoir worker``, ``memoir serve
        --workers``): resumes abandoned jobs first, then takes queued ones; a job running
        when ``stop`` is set is told to stop and released to the queue unless it finishes."""
        from memoir.jobs import Worker

        Worker(self.jobs(), {"summary": self.run_summary_job}, worker_id=worker_id).run(stop)

    def __enter__(self) -> Memoir:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _check_user(name: object) -> str:
    """``name`` when it is a user's name (text, not blank); ``ConfigError`` otherwise."""
    if not isinstance(name, str) or not name.strip() or name != name.strip():
        raise ConfigError(
            f"a user is named by non-blank text without spaces at its ends, not {name!r}"
        )
    return name


def _instant(value: datetime | str, option: str, *, end: bool = False) -> datetime:
    """A datetime as given, or text read as the CLI reads ``--after`` / ``--before``."""
    if isinstance(value, datetime):
        return value
    from memoir.search.dates import parse_when

    return parse_when(value, end_of_day=end, option=option)
