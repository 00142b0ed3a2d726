"""Coverage of a freshly written summary. Pure.

Files count the archived JSONL bytes measured before the events were read (append-only:
bytes that arrive later are growth, and re-queue the conversation); the database counts
the events the summary was made from. Bytes past the index's offset that hold nothing to
index (a JSON list's closing bracket) are covered too: :func:`indexed_through`.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime

from memoir.model import Event, build_exchanges

__all__ = ["TRAILER_BYTES", "coverage_after", "indexed_through", "iso_ms"]

TRAILER_BYTES = 64  # the most bytes past the indexed offset read to see they hold nothing


def iso_ms(moment: datetime) -> str:
    """``2025-09-19T17:36:33.487Z`` (the JavaScript ``toISOString`` form)."""
    moment = moment.astimezone(UTC) if moment.tzinfo else moment.replace(tzinfo=UTC)
    return moment.strftime("%Y-%m-%dT%H:%M:%S.") + f"{moment.microsecond // 1000:03d}Z"


def last_exchange_iso(events: Sequence[Event]) -> str | None:
    exchanges = build_exchanges(events)
    if not exchanges:
        return None
    last = exchanges[-1]
    moment = last.ended_at or last.started_at
    return iso_ms(moment) if moment is not None else None


def coverage_after(unit: str, measured: int, events: Sequence[Event]) -> tuple[int, str | None]:
    """(amount, lastExchange) to stamp on a summary made from ``events``."""
    amount = measured if unit == "bytes" else len(events)
    return amount, last_exchange_iso(events)


def indexed_through(offset: int, size: int, tail: bytes) -> int:
    """How far the index has read an archived transcript of ``size`` bytes that it parsed
    up to ``offset``; ``tail`` is the archive's bytes from ``offset`` (at most
    :data:`TRAILER_BYTES` of them). All of it when the tail holds nothing to index — the
    closing bracket of a JSON list and the blanks around it: the generic reader's offset
    stops before them, so that a list grown by appending reads as grown, not rewritten —
    else ``offset``. Without this a JSON chat's summary covered 2 bytes short of its
    archive for ever, and every sync summarized it again."""
    if offset >= size or len(tail) != size - offset:
        return offset
    return size if tail.strip() in (b"", b"]") else offset
