"""The ``Memoir`` object: one home (settings + store + model), the library's front door.

Each operation delegates to the package that owns it; this module only wires them.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from memoir.config import Settings
from memoir.store import Store, open_store

if TYPE_CHECKING:
    from memoir.ingest.sync import SyncReport
    from memoir.ingest.verify import VerifyReport
    from memoir.llm.port import Model
    from memoir.search.hits import SearchHit
    from memoir.summaries.summary_pass import SummaryPassReport

__all__ = ["Memoir"]


class Memoir:
    def __init__(self, settings: Settings, store: Store) -> None:
        self.settings = settings
        self.store = store

    @classmethod
    def open(cls, settings: Settings | None = None, **overrides: Any) -> Memoir:
        if settings is None:
            settings = Settings.from_env(**overrides)
        settings.home.mkdir(parents=True, exist_ok=True)
        return cls(settings, open_store(settings))

    @classmethod
    def at(cls, home: str | Path, **overrides: Any) -> Memoir:
        return cls.open(Settings.from_env(home=Path(home), **overrides))

    def close(self) -> None:
        self.store.close()

    def search(self, query: str, **options: Any) -> list[SearchHit]:
        """Search past exchanges; returns ``memoir.search.SearchHit`` values, best first.

        Options: ``filters`` (SearchFilters), ``mode`` ("text" | "vector" | "hybrid" | None
        for hybrid when an embedder is configured), ``limit``, ``embedder``, ``summaries``.
        """
        from memoir.search.facade import search_memoir

        return search_memoir(self, query, **options)

    def model(self) -> Model:
        """The configured model (``MEMOIR_LLM``), every call metered into the store's usage
        ledger and retried (RateLimited / Transient) within ``llm_retry_budget`` attempts."""
        from memoir.llm.wiring import wrapped_model

        return wrapped_model(self.settings, self.store)

    def fallback_model(self) -> Model | None:
        """The refusal fallback (``MEMOIR_LLM_FALLBACK``), wrapped the same way, or None."""
        from memoir.llm.wiring import wrapped_fallback

        return wrapped_fallback(self.settings, self.store)

    def compactor(self, **options: Any) -> Any:
        """A ``memoir.compaction.Compactor`` with the configured model, the threshold ratio
        of ``MEMOIR_COMPACT_THRESHOLD_RATIO`` and this store for checkpoints and traces."""
        from memoir.compaction import Compactor

        return Compactor.from_settings(self.settings, self.model(), store=self.store, **options)

    def sync(self, *, sources: Any = None, progress: Any = None) -> SyncReport:
        """Archive and index new or grown transcripts (``memoir.ingest.sync``); takes the
        single-instance sync lock and raises ``Busy`` when another sync holds it."""
        from memoir.ingest.lock import sync_lock
        from memoir.ingest.sync import sync

        with sync_lock(self.settings.home):
            return sync(self.settings, self.store, sources=sources, progress=progress)

    def summarize_pending(self, *, limit: int | None = None) -> SummaryPassReport:
        """The summary pass ``memoir sync`` runs after indexing: (re)summarize idle
        conversations that need it, fresh ones first, at most ``limit`` (default
        ``MEMOIR_SUMMARY_LIMIT``) model-backed summaries."""
        from memoir.summaries.summary_pass import run_summary_pass

        limit = self.settings.summary_limit if limit is None else limit
        return run_summary_pass(self, limit=limit)

    def verify(self, *, repair: bool = False) -> VerifyReport:
        """Check the index against the archive (``memoir.ingest.verify``)."""
        from memoir.ingest.verify import verify

        return verify(self.settings, self.store, repair=repair)

    def __enter__(self) -> Memoir:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
