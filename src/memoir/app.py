"""The ``Memoir`` object: one home (settings + store + model), the library's front door.

Each operation delegates to the package that owns it; this module only wires them.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any

from memoir.config import Settings, whole_number
from memoir.errors import ConfigError
from memoir.store import Store, open_store

if TYPE_CHECKING:
    from memoir.ingest.sync import SyncProgress, SyncReport
    from memoir.ingest.verify import VerifyReport
    from memoir.llm.port import Model
    from memoir.search.backfill import BackfillResult
    from memoir.search.embedder import Embedder
    from memoir.search.engine import SearchMode
    from memoir.search.hits import SearchHit
    from memoir.store.values import SearchFilters
    from memoir.summaries.summary_pass import SummaryPassReport

__all__ = ["Memoir", "resolve_session"]


class Memoir:
    def __init__(self, settings: Settings, store: Store) -> None:
        self.settings = settings
        self.store = store

    @classmethod
    def open(cls, settings: Settings | None = None, **overrides: Any) -> Memoir:
        if settings is None:
            settings = Settings.from_env(**overrides)
        settings.ensure_home()
        return cls(settings, open_store(settings))

    @classmethod
    def at(cls, home: str | os.PathLike[str], **overrides: Any) -> Memoir:
        """The Memoir whose home is ``home`` (``~`` expanded, made absolute), other
        settings from the environment unless given as keywords."""
        return cls.open(Settings.from_env(home=home, **overrides))

    def close(self) -> None:
        self.store.close()

    def search(
        self,
        query: str,
        *,
        filters: SearchFilters | None = None,
        mode: SearchMode | None = None,
        limit: int = 10,
        **options: Any,
    ) -> list[SearchHit]:
        """Search past exchanges; returns ``memoir.search.SearchHit`` values, best first.

        ``filters`` (``memoir.search.SearchFilters``; a session id may be a unique prefix),
        ``mode`` ("text" | "vector" | "hybrid"; None: hybrid when an embedder is
        configured), ``limit`` (at most 1,000); ``embedder`` and ``summaries`` replace the
        configured ones (tests).
        """
        from memoir.search.facade import search_memoir

        return search_memoir(self, query, filters=filters, mode=mode, limit=limit, **options)

    def embedder(self) -> Embedder | None:
        """The configured embedder (``MEMOIR_EMBEDDER``), or None when semantic search is
        off (``none``) or its extra is not installed (``auto``)."""
        from memoir.search.embedder import load_embedder

        return load_embedder(self.settings.embedder)

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
        embedder = self.embedder()
        if embedder is None:
            if self.settings.embedder == "none":
                raise ConfigError("MEMOIR_EMBEDDER=none: semantic search is switched off")
            raise EmbeddingsUnavailable(
                "semantic search needs the embeddings extra: pip install 'memoir[embeddings]'"
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
            if result.embedded:  # the next search maps the matrix from a file
                prepare_files(self.store, embedder.name)
        return result

    def model(self) -> Model:
        """The configured model (``MEMOIR_LLM``), every call metered into the store's usage
        ledger and retried (RateLimited / Transient) within ``llm_retry_budget`` attempts."""
        from memoir.llm.wiring import wrapped_model

        return wrapped_model(self.settings, self.store.usage)

    def fallback_model(self) -> Model | None:
        """The refusal fallback (``MEMOIR_LLM_FALLBACK``), wrapped the same way, or None."""
        from memoir.llm.wiring import wrapped_fallback

        return wrapped_fallback(self.settings, self.store.usage)

    def compactor(self, **options: Any) -> Any:
        """A ``memoir.compaction.Compactor`` with the configured model, the threshold ratio
        of ``MEMOIR_COMPACT_THRESHOLD_RATIO`` and this store for checkpoints and traces."""
        from memoir.compaction import Compactor

        return Compactor.from_settings(self.settings, self.model(), store=self.store, **options)

    def sync(
        self,
        *,
        sources: str | os.PathLike[str] | Iterable[str | os.PathLike[str]] | None = None,
        progress: Callable[[SyncProgress], None] | None = None,
        purge_excluded: bool = False,
    ) -> SyncReport:
        """Archive and index new or grown transcripts (``memoir.ingest.sync``); takes the
        single-instance sync lock and raises ``Busy`` when another sync holds it. With
        ``purge_excluded``, conversations of projects excluded after they were stored are
        removed first (else they are listed in ``SyncReport.excluded_kept``)."""
        from memoir.ingest.lock import sync_lock
        from memoir.ingest.sync import sync

        with sync_lock(self.settings.home):
            return sync(
                self.settings,
                self.store,
                sources=sources,
                progress=progress,
                purge_excluded=purge_excluded,
            )

    def summarize_pending(self, *, limit: int | None = None) -> SummaryPassReport:
        """The summary pass ``memoir sync`` runs after indexing: (re)summarize idle
        conversations that need it, fresh ones first, at most ``limit`` (default
        ``MEMOIR_SUMMARY_LIMIT``) model-backed summaries."""
        from memoir.summaries.summary_pass import run_summary_pass

        limit = self.settings.summary_limit if limit is None else limit
        whole_number("limit", limit, 0)
        return run_summary_pass(self, limit=limit)

    def verify(self, *, repair: bool = False) -> VerifyReport:
        """Check the index against the archive (``memoir.ingest.verify``)."""
        from memoir.ingest.verify import verify

        return verify(self.settings, self.store, repair=repair)

    def __enter__(self) -> Memoir:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def resolve_session(store: Store, session: str) -> str:
    """The session id ``session`` names: itself, or the one session it is a prefix of (a
    main session before its subagents, whose ids extend the parent's). ``NotFound`` when
    none; a ``MemoirError`` listing them when several."""
    from memoir.errors import MemoirError, NotFound

    if store.sessions.get(session) is not None:
        return session
    found = [i.session for i in store.sessions.recent() if i.session.id.startswith(session)]
    main = [s for s in found if not s.flags.subagent]
    matches = [s.id for s in (main if len(main) == 1 else found)]
    if len(matches) == 1:
        return str(matches[0])
    if matches:
        shown = ", ".join(sorted(matches)[:5]) + (", …" if len(matches) > 5 else "")
        raise MemoirError(
            f"session prefix {session!r} matches {len(matches)} sessions ({shown}); "
            "give more of the id"
        )
    raise NotFound(f"no session {session!r} in this Memoir home (run `memoir sync`?)")
