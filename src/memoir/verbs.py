"""The bodies of the front door's longer verbs, and the public values they return.

:class:`memoir.Memoir` keeps each verb's signature and docstring; what the verb does past
a line or two is a function here, naming what it needs (the settings, the store, a
model) as an engine does. The store's rows and the engines' results become the public
values of :mod:`memoir.model` here, and nowhere else. Nothing heavy is imported
at module top.
"""

from __future__ import annotations

import builtins
import os
from collections.abc import Callable, Iterable
from datetime import datetime
from typing import TYPE_CHECKING

from memoir.config import Settings, whole_number
from memoir.errors import ConfigError, NotFound
from memoir.wiring import (
    check_user,
    embed_written,
    instant,
    memory_project,
    rescan_secrets,
    summary_store,
    sync_observer,
)

if TYPE_CHECKING:
    from memoir.compaction import Compactor
    from memoir.ingest.batches import SyncProgress, SyncReport
    from memoir.llm.port import Model, TokenCounter
    from memoir.memory.item_rows import MemoryItemRow, ReceiptRow
    from memoir.memory.keeping import ImportReport
    from memoir.memory.memories import Memories
    from memoir.memory.recall import ContextBlock, ItemEmbedder, Recalled
    from memoir.memory.rows import Outcome
    from memoir.model import Appended, Memory, MemoryReceipt, RecallHit, Remembered, Session
    from memoir.store import Store
    from memoir.store.parts import AppendResult
    from memoir.store.values import ItemFilter, SearchFilters
    from memoir.summaries.episodic import Progress as SummaryProgress
    from memoir.summaries.session import ModelSource, RunMode, SessionRun

__all__ = [
    "MemoryItems",
    "appended",
    "compactor",
    "context_block",
    "find_session",
    "forget",
    "memory_value",
    "memory_values",
    "recall_hits",
    "receipt_value",
    "remembered",
    "search_filters",
    "summarize",
    "sync_home",
]


# the front door's values, from the engines' and the store's ------------------------------
def memory_value(row: MemoryItemRow) -> Memory:
    """The public value of a stored memory item (its quotes kept, the store's keys not)."""
    from memoir.model import Memory, MemorySource

    return Memory(
        id=row.id,
        session_id=row.session_id,
        project=row.project,
        scope=row.scope,
        kind=row.kind,
        content=row.content,
        keys=tuple(row.keys),
        operation_id=row.operation_id,
        created_at=row.created_at,
        temporal=dict(row.temporal),
        observed_at=row.observed_at,
        first_observed_at=row.first_observed_at,
        valid_from=row.valid_from,
        valid_until=row.valid_until,
        superseded_by=row.superseded_by,
        forgotten_at=row.forgotten_at,
        sources=tuple(
            MemorySource(s.session_id, s.ordinal, s.quote, s.operation_id) for s in row.sources
        ),
    )


def memory_values(rows: Iterable[MemoryItemRow]) -> list[Memory]:
    return [memory_value(row) for row in rows]


def receipt_value(row: ReceiptRow) -> MemoryReceipt:
    from memoir.model import MemoryReceipt

    return MemoryReceipt(
        operation_id=row.operation_id,
        session_id=row.session_id,
        trigger=row.trigger,
        outcome=row.outcome,
        range_after=row.range_after,
        range_through=row.range_through,
        created_at=row.created_at,
        reason=row.reason,
        checkpoint_id=row.checkpoint_id,
        prompt=row.prompt,
        model=row.model,
        items=row.items,
        dropped=row.dropped,
        model_calls=row.model_calls,
        input_tokens=row.input_tokens,
    )


def remembered(outcome: Outcome) -> Remembered:
    from memoir.model import Remembered

    return Remembered(
        receipt=None if outcome.receipt is None else receipt_value(outcome.receipt),
        items=tuple(memory_values(outcome.items)),
        pending=outcome.pending is not None,
        waiting=outcome.waiting,
        error=outcome.error,
    )


def recall_hits(found: Iterable[Recalled]) -> list[RecallHit]:
    from memoir.model import RecallHit

    return [RecallHit(memory_value(r.item), r.score, r.text_rank, r.vector_rank) for r in found]


def appended(result: AppendResult) -> Appended:
    from memoir.model import Appended

    return Appended(result.added, result.skipped, result.last_ordinal)


# the bodies of the front door's longer verbs ---------------------------------------------
def search_filters(
    filters: SearchFilters | None,
    after: datetime | str | None,
    before: datetime | str | None,
    user: str,
) -> SearchFilters:
    """The filters a search runs with: ``after`` / ``before`` (as the CLI reads them) over
    the filters' own, and the user the Memoir acts for unless the filters name one."""
    from dataclasses import replace

    from memoir.store.values import SearchFilters as Filters

    given = filters or Filters()
    if after is not None:
        given = replace(given, after=instant(after, "after"))
    if before is not None:
        given = replace(given, before=instant(before, "before", end=True))
    return given if given.user is not None else replace(given, user=user)


def context_block(
    store: Store,
    where: ItemFilter,
    budget_tokens: int,
    query: str | None,
    model_name: str,
    embedder: ItemEmbedder | None,
) -> ContextBlock:
    """The block of the most relevant live items within ``budget_tokens`` (counted with
    the tokenizer of ``model_name``): with ``query``, in recall order; else constraints,
    preferences, decisions, facts, plans (each: most often said, then newest)."""
    from memoir.llm import counter_for, encoding_for_model
    from memoir.memory.item_store import memory_parts
    from memoir.memory.recall import (
        KIND_ORDER,
        MAX_CONTEXT_POOL,
        recall,
        standing_order,
    )
    from memoir.memory.recall import (
        context_block as render,
    )

    if query and query.strip():
        hits = recall(memory_parts(store).items, query, where, limit=200, embedder=embedder)
        ordered = [h.item for h in hits]
    else:
        # the budget holds a few dozen lines: the first few hundred candidates are plenty
        pool = min(MAX_CONTEXT_POOL, max(200, budget_tokens // 4))
        found = memory_parts(store).items.select(where, limit=pool, standing=KIND_ORDER)
        ordered = standing_order(found)
    return render(ordered, budget_tokens, counter_for(encoding_for_model(model_name)))


def forget(
    store: Store,
    owner: str,
    item: str | None,
    session: str | None,
    project: str | None,
    matching: str | None,
) -> list[MemoryItemRow]:
    """Forget the items of ``owner``'s one selector names, with what they superseded; their
    evidence is tombstoned so it is never extracted again."""
    from memoir.memory.item_store import memory_parts
    from memoir.memory.keeping import forget as forget_items
    from memoir.store import ensure_writable

    ensure_writable(store, "memoir memories forget")
    if sum(x is not None for x in (item, session, project, matching)) != 1:
        raise ConfigError("name exactly one of: an item, a session, a project, a query")
    if session is not None:
        session = store.sessions.resolve(session, user=owner)
    if project is not None:
        project = memory_project(store, project, owner)
    parts = memory_parts(store)
    return forget_items(
        parts.items,
        parts.memory,
        item=item,
        session=session,
        project=project,
        matching=matching,
        owner=owner,
    )


def sync_home(
    settings: Settings,
    store: Store,
    *,
    sources: str | os.PathLike[str] | Iterable[str | os.PathLike[str]] | None,
    progress: Callable[[SyncProgress], None] | None,
    purge_excluded: bool,
    follow_symlinks: bool,
) -> SyncReport:
    """A sync under the home's single-instance lock (``Busy`` when another holds it);
    then, the lock released, embedding on write of what it touched and a bounded run of
    the secret re-scan of derived text."""
    from memoir.ingest.archive import sync_lock
    from memoir.ingest.sync import sync

    with sync_lock(settings.home):
        report = sync(
            settings,
            store,
            observer=sync_observer(settings, store),
            sources=sources,
            progress=progress,
            purge_excluded=purge_excluded,
            follow_symlinks=follow_symlinks,
        )
    # after the lock (no sync waits on them): found by meaning at once, then the derived
    # text an older secret detector let through (bounded; one query once done)
    embed_written(settings, store, report.sessions_touched)
    rescan_secrets(settings, store)
    return report


def find_session(store: Store, ref: str, user: str) -> Session:
    """``user``'s stored session ``ref`` names (its id, a unique prefix, or its name);
    ``NotFound`` when none does (another user's session included)."""
    found = store.sessions.get(store.sessions.resolve(ref, user=user), user=user)
    if found is None:  # removed between the two reads
        raise NotFound(f"no session {ref!r}")
    return found


def summarize(
    settings: Settings,
    store: Store,
    session_id: str,
    models: ModelSource,
    *,
    mode: RunMode,
    use_cache: bool,
    progress: SummaryProgress | None,
) -> SessionRun:
    """The episodic summarizer's run over one stored session, saved."""
    from memoir.summaries.session import EpisodeSettings, summarize_session

    return summarize_session(
        store,
        summary_store(settings, store),
        session_id,
        models=models,
        episodes=EpisodeSettings.from_settings(settings),
        mode=mode,
        use_cache=use_cache,
        progress=progress,
    )


def compactor(
    settings: Settings,
    store: Store,
    model: Model,
    memories: Callable[[], Memories] | None,
    *,
    counter: TokenCounter | None,
    tail_budget: int | None,
) -> Compactor:
    """A compactor from the settings' ratios over ``store``; with ``memories``, each
    checkpoint dispatches a memory extraction of the range it replaced."""
    from memoir.compaction import Compactor

    if tail_budget is not None:
        whole_number("tail_budget", tail_budget, 0)
    return Compactor.from_settings(
        settings,
        model,
        store=store,
        counter=counter,
        tail_budget=tail_budget,
        on_checkpoint=None if memories is None else memories().on_checkpoint,
    )


class MemoryItems:
    """``Memoir.memories``: the memory items of one Memoir's user beyond the four verbs
    (``remember``, ``recall``, ``context``, ``forget``)."""

    def __init__(self, store: Store, user: str) -> None:
        self._store, self._user = store, user

    def _who(self, user: str | None) -> str:
        return self._user if user is None else check_user(user)

    def list(
        self,
        *,
        project: str | None = None,
        session_id: str | None = None,
        kind: str | None = None,
        limit: int = 50,
        history: bool = False,
    ) -> builtins.list[Memory]:
        """The items passing the filters, newest first (``history``: the superseded ones
        too).

        Example::

            newest = m.memories.list(kind="decision", limit=5)
        """
        from memoir.memory.item_store import memory_parts

        found = memory_parts(self._store).items.find(
            project=project,
            session_id=session_id,
            kind=kind,
            limit=limit,
            history=history,
            owner=self._user,
        )
        return memory_values(found)

    def history(self, item_id: str, user: str | None = None) -> builtins.list[Memory]:
        """The item (its id or a unique prefix, of ``user``'s items — None: this Memoir's
        user's) with what it superseded and what superseded it, oldest first.

        Example::

            for version in m.memories.history("9c1e"):
                print(version.valid_from, version.content)
        """
        from memoir.memory.item_store import memory_parts

        items = memory_parts(self._store).items
        found = items.get(item_id, owner=self._who(user))
        if found is None:
            raise NotFound(f"no memory item {item_id!r}")
        return memory_values(items.chain(found.id))

    def export(self, user: str | None = None) -> Iterable[str]:
        """Every item (history included) and tombstone of ``user`` (None: this Memoir's
        user) as JSON lines (for :meth:`import_lines`).

        Example::

            Path("memories.jsonl").write_text("".join(l + "\\n" for l in m.memories.export()))
        """
        from memoir.memory.item_store import memory_parts
        from memoir.memory.keeping import export_lines

        return export_lines(memory_parts(self._store).items, self._who(user))

    def import_lines(self, lines: Iterable[str], user: str | None = None) -> ImportReport:
        """Read an export into this home as ``user``'s items (None: this Memoir's user's),
        merging as extraction does; all or nothing.

        Example::

            report = m.memories.import_lines(Path("memories.jsonl").read_text().splitlines())
        """
        from memoir.memory.item_store import memory_parts
        from memoir.memory.keeping import import_lines
        from memoir.store import ensure_writable

        ensure_writable(self._store, "memoir memories import")
        return import_lines(memory_parts(self._store).items, lines, self._who(user))
