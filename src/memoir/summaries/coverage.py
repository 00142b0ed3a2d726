"""Coverage of a freshly written summary. Pure.

Files count the archived JSONL bytes measured before the events were read (append-only:
bytes that arrive later are growth, and re-queue the conversation); the database counts
the events the summary was made from. Bytes past the index's offset that hold nothing to
index (a JSON list's closing bracket, a last line not finished yet) are covered too:
:func:`indexed_through`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime

from memoir.model import Event, build_exchanges

__all__ = ["TRAILER_BYTES", "ArchiveTail", "coverage_after", "indexed_through", "iso_ms"]

TRAILER_BYTES = 64  # the most bytes past the indexed offset read whole to see they hold nothing


@dataclass(frozen=True, slots=True)
class ArchiveTail:
    """What an archived transcript holds past the index's offset, as far as it was read:
    ``read`` bytes (all there are, unless the read stopped at a newline or the archive was
    cut meanwhile), the first :data:`TRAILER_BYTES` of them (``start``), and whether a
    newline was among them (a finished line the index has not read)."""

    read: int = 0
    start: bytes = b""
    newline: bool = False


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


def indexed_through(
    offset: int, size: int, tail: ArchiveTail, *, lines: bool, recorded: int
) -> int:
    """How far the index has read an archived transcript of ``size`` bytes that it parsed
    up to ``offset``; ``tail`` is what the archive holds from ``offset``. ``lines``: the
    transcript is read line by line (JSONL, not a JSON list read whole); ``recorded``: the
    file size the index recorded when it last read the file.

    All of it when the tail holds nothing to index, else ``offset``:

    * the closing bracket of a JSON list and the blanks around it (at most
      :data:`TRAILER_BYTES`, read whole): the generic reader's offset stops before them, so
      that a list grown by appending reads as grown, not rewritten;
    * one unterminated line of a JSONL transcript (no newline in the whole tail) that the
      index's last read of the file ended on (``recorded == size``): the reader takes a last
      line without its newline only when it is a whole JSON object, else waits for it to
      end — half a line left by a crashed session may never end. When it does end, the
      file grows and so does the archive, past this coverage: the conversation is due
      again and the line indexed. Bytes an unfinished sync copied past its last commit
      (``recorded`` differs) are not counted.

    Without this a JSON chat's summary covered 2 bytes short of its archive for ever, and a
    crashed session's by its half line: every sync summarized them again."""
    past = size - offset
    if past <= 0 or tail.read != past:  # read to the end, or the tail was not read whole
        return offset
    if past <= TRAILER_BYTES and tail.start.strip() in (b"", b"]"):
        return size
    if lines and not tail.newline and recorded == size:
        return size
    return offset
