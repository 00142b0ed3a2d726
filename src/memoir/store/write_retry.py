"""Unencodable text never loses a batch.

A transcript decoded with ``surrogateescape`` (or any caller) can hand the store strings
with lone surrogates, which no driver can encode as UTF-8. The fast path writes the batch
as is; on an encoding error the whole transaction is rolled back and written once more
with every string scrubbed (lone surrogates → ``?``, NUL → U+FFFD).
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Callable
from enum import Enum
from typing import Any

from memoir.model import Event, Exchange, Session
from memoir.model.event import scrub_deep
from memoir.store.values import IngestBatch, SkippedLine, SourceState

__all__ = ["is_encoding_error", "scrub_batch", "with_scrub_retry"]


def is_encoding_error(exc: BaseException) -> bool:
    seen: BaseException | None = exc
    while seen is not None:
        if isinstance(seen, UnicodeError):
            return True
        seen = seen.__cause__ or seen.__context__
    return False


def with_scrub_retry(run: Callable[[IngestBatch], None], batch: IngestBatch) -> None:
    try:
        run(batch)
    except Exception as exc:
        if not is_encoding_error(exc):
            raise
        run(scrub_batch(batch))


def _json(value: Any) -> Any:
    return json.loads(scrub_deep(json.dumps(value, ensure_ascii=False, default=str)))


def _clean(value: Any) -> Any:
    """Scrub every str field of a frozen dataclass instance."""
    changes: dict[str, Any] = {}
    for f in dataclasses.fields(value):
        v = getattr(value, f.name)
        if isinstance(v, Enum):
            continue
        if isinstance(v, str):
            changes[f.name] = scrub_deep(v)
        elif isinstance(v, dict):
            changes[f.name] = _json(v)
        elif isinstance(v, tuple) and v and all(isinstance(i, str) for i in v):
            changes[f.name] = tuple(scrub_deep(i) for i in v)
    return dataclasses.replace(value, **changes)


def scrub_batch(batch: IngestBatch) -> IngestBatch:
    session: Session = _clean(batch.session)
    events: tuple[Event, ...] = tuple(_clean(e) for e in batch.events)
    exchanges: tuple[Exchange, ...] = tuple(_clean(x) for x in batch.exchanges)
    source: SourceState | None = None if batch.source is None else _clean(batch.source)
    skipped: tuple[SkippedLine, ...] = tuple(_clean(s) for s in batch.skipped)
    return dataclasses.replace(
        batch,
        session=session,
        events=events,
        exchanges=exchanges,
        source=source,
        skipped=skipped,
    )
