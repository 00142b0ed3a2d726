"""Coverage of a freshly written summary. Pure.

Files count the archived JSONL bytes measured before the events were read (append-only:
bytes that arrive later are growth, and re-queue the conversation); the database counts
the events the summary was made from.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime

from memoir.model import Event, build_exchanges

__all__ = ["coverage_after", "iso_ms"]


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
