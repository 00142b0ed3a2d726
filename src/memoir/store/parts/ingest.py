"""What ingest writes and resumes from: batches (session + events + exchanges + index rows
+ source state + skipped lines, one transaction), per-file source states, skipped lines."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from memoir.store.codec import SOURCE_COLS, skipped_from_row, source_from_row
from memoir.store.db import Db
from memoir.store.values import IngestBatch, SkippedLine, SourceState
from memoir.store.write_retry import with_scrub_retry

__all__ = ["IngestPart"]


class IngestPart:
    """``apply_batch(conn, batch)`` is the backend's write of one batch inside a write
    transaction (primary keys and index rows differ by backend)."""

    def __init__(self, db: Db, apply_batch: Callable[[Any, IngestBatch], None]) -> None:
        self._db = db
        self._apply_batch = apply_batch

    def apply(self, batch: IngestBatch) -> None:
        """Write ``batch`` in one transaction (idempotent; ``ConcurrentWrite`` when another
        process moved the source on since it was read)."""

        def run(b: IngestBatch) -> None:
            with self._db.write() as conn:
                self._apply_batch(conn, b)

        with_scrub_retry(run, batch)

    def source(self, path: str) -> SourceState | None:
        rows = self._db.rows(f"SELECT {SOURCE_COLS} FROM sources WHERE path = ?", (path,))
        return source_from_row(rows[0]) if rows else None

    def sources(self) -> dict[str, SourceState]:
        return {
            r[0]: source_from_row(r) for r in self._db.rows(f"SELECT {SOURCE_COLS} FROM sources")
        }

    def skipped(self, path: str | None = None) -> list[SkippedLine]:
        sql = 'SELECT path, line, "offset", reason, detail FROM skipped_lines'
        if path is None:
            rows = self._db.rows(sql + " ORDER BY path, line")
        else:
            rows = self._db.rows(sql + " WHERE path = ? ORDER BY line", (path,))
        return [skipped_from_row(r) for r in rows]
