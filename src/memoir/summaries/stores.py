"""Which summary store a home uses: :func:`open_summary_store` picks one of the two adapters
of the :class:`~memoir.summaries.port.SummaryStore` port from ``settings.summary_store``.

* ``"files"`` — :class:`~memoir.summaries.files.FileSummaryStore`, summary files beside the
  archived transcripts (its scan cache under ``<home>/cache``);
* ``"database"`` — :class:`~memoir.summaries.database.DatabaseSummaryStore`, the store's
  summary rows.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from memoir.ingest.archive import BUMPS_FOLDER_MTIME
from memoir.summaries.database import DatabaseSummaryStore
from memoir.summaries.files import FileSummaryStore
from memoir.summaries.port import SummaryStore

if TYPE_CHECKING:
    from memoir.config import Settings
    from memoir.store import Store

__all__ = ["open_summary_store"]


def open_summary_store(settings: Settings, store: Store) -> SummaryStore:
    if settings.summary_store == "database":
        return DatabaseSummaryStore(store)
    # Memoir's archive writer changes the project folder's mtime on every write (appends
    # included), so the scan need not stat settled transcripts.
    return FileSummaryStore(
        settings.archive_dir,
        store,
        cache_path=_cache_path(settings),
        trust_folder_mtime=BUMPS_FOLDER_MTIME,
    )


def _cache_path(settings: Settings) -> Path:
    return settings.home / "cache" / "summary-scan.json"
