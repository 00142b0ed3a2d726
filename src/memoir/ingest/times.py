"""A time for every event a transcript gives none: sync's one step after parsing.

The rule is :func:`memoir.model.infer_times` (the nearest known event time before, else
after, else the file's modification time). Sync reads a transcript in batches, and across
syncs as it grows; what this module adds is what a batch cannot see by itself, so a file
read in many batches gets the times one read of it gives:

- the last known event time before the batch: kept in the parser state as
  :data:`KNOWN_AT` (written with every batch; a state written before it was kept falls back
  on the reader's ``last_at``);
- when a batch holds no known time and nothing before it did, the first known time after
  it: :class:`TimeAhead` reads on through the rest of the file (a second handle, a batch
  of lines at a time, stopping at the first event that has a time), once per file read.

A transcript that grows is timed as it stood: lines without a time synced before the first
line with one was written took the file's modification time then, and keep it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace
from datetime import UTC, datetime
from typing import Any

from memoir.ingest.detect import Format
from memoir.ingest.lines import LineReader
from memoir.ingest.reader import ReadResult, first_line_number, read_any
from memoir.ingest.records import parse_ts
from memoir.model import Event, infer_times

__all__ = ["KNOWN_AT", "TimeAhead", "known_before", "with_times"]

KNOWN_AT = "known_at"  # parser state: the time of the last event that had one (ISO, or None)
_LOOK_BYTES = 2 * 1024 * 1024  # lines parsed at a time looking ahead


def known_before(state: Mapping[str, Any]) -> datetime | None:
    """The last known event time of what was read before ``state`` was saved."""
    if KNOWN_AT in state:
        return parse_ts(state[KNOWN_AT])
    return parse_ts(state.get("last_at"))  # saved before KNOWN_AT was kept


def _last_known(events: Sequence[Event], before: datetime | None) -> datetime | None:
    for e in reversed(events):
        if e.timestamp is not None and not e.time_inferred:
            return e.timestamp
    return before


class TimeAhead:
    """The time of the first event past a batch that has one of its own, in the file at
    ``path`` (``size`` bytes, format ``fmt``); looked for once, then remembered (a later
    batch that needs it again lies before that event: the answer is the same)."""

    def __init__(self, path: str, fmt: Format, session_id: str, size: int) -> None:
        self._path, self._fmt, self._sid, self._size = path, fmt, session_id, size
        self._looked = False
        self._found: datetime | None = None

    def __call__(self, after: ReadResult) -> datetime | None:
        if not self._looked:
            self._looked = True
            self._found = self._look(after)
        return self._found

    def _look(self, after: ReadResult) -> datetime | None:
        try:
            fp = open(self._path, "rb")  # noqa: SIM115 - closed below; sync's handle reads on
        except OSError:
            return None
        with fp:
            lines = iter(
                LineReader(
                    fp,
                    offset=after.offset,
                    line=first_line_number(after.line_count, after.state),
                    limit=max(0, self._size - after.offset),
                )
            )
            state, offset, count = after.state, after.offset, after.line_count
            while True:
                read = read_any(
                    lines,
                    self._fmt,
                    path=self._path,
                    session_id=self._sid,
                    next_ordinal=1,
                    state=state,
                    offset=offset,
                    line_count=count,
                    max_bytes=_LOOK_BYTES,
                )
                for e in read.events:
                    if e.timestamp is not None:
                        return e.timestamp
                if not read.more:
                    return None
                state, offset, count = read.state, read.offset, read.line_count


def with_times(
    result: ReadResult,
    state_before: Mapping[str, Any],
    *,
    mtime_ns: int,
    ahead: TimeAhead | None,
) -> ReadResult:
    """``result`` (a batch read from ``state_before``) with a time for each event its
    source gave none, marked ``time_inferred``, and its state's :data:`KNOWN_AT` moved on."""
    before = known_before(state_before)
    events: Sequence[Event] = result.events
    if any(e.timestamp is None for e in events):
        fallback = datetime.fromtimestamp(mtime_ns / 1e9, UTC)
        alone = before is None and all(e.timestamp is None for e in events)
        if alone and result.more and ahead is not None:
            fallback = ahead(result) or fallback
        events = infer_times(events, before=before, fallback=fallback)
    known = _last_known(events, before)
    state = {**result.state, KNOWN_AT: known.isoformat() if known is not None else None}
    return replace(result, events=tuple(events), state=state)
