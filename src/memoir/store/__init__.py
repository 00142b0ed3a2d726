"""Storage: the Store port and its SQLite and PostgreSQL backends."""

from memoir.store.port import (
    CheckpointRow,
    IngestBatch,
    SearchFilters,
    SessionInfo,
    SkippedLine,
    SourceState,
    Store,
    SummaryRow,
    TextHit,
    TraceRow,
)

__all__ = [
    "CheckpointRow",
    "IngestBatch",
    "SearchFilters",
    "SessionInfo",
    "SkippedLine",
    "SourceState",
    "Store",
    "SummaryRow",
    "TextHit",
    "TraceRow",
    "open_store",
]


def open_store(settings: "object") -> Store:  # replaced by the store implementation
    raise NotImplementedError
