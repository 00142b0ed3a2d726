"""When an event the source gave no time happened: the nearest known time (pure).

Sources leave times out: a Claude Code line written without one, a generic JSON chat that
has none at all, a message appended over the API without one. Such an event is never
left without a time — date filters, "recent" orderings and the page would drop it. It
takes, in this order:

1. the time of the nearest event before it that has one of its own (``before`` stands for
   what came before the events given: the last known time of a transcript's earlier
   batches, or of its earlier syncs);
2. else the time of the nearest event after it that has one;
3. else ``fallback``: the transcript file's modification time, or the time the events
   are stored (an API append).

Earlier wins over later: a message is written after what it answers, so the time of what
came before is the closer bound a reader expects (and one that never runs ahead of the
file). The event is marked ``time_inferred``; an inferred time is never taken as a known
one for another event (it would pass a guess along as if it were the source's).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from datetime import datetime

from memoir.model.event import Event

__all__ = ["fill_times", "infer_times"]


def fill_times(
    times: Sequence[datetime | None], *, before: datetime | None, fallback: datetime
) -> list[datetime]:
    """``times`` with each None replaced by the nearest known time (see the module): the
    last known one before it (``before`` when none of ``times`` precedes it), else the
    first known one after it, else ``fallback``."""
    following: list[datetime | None] = [None] * len(times)
    after: datetime | None = None
    for at in range(len(times) - 1, -1, -1):
        if times[at] is not None:
            after = times[at]
        following[at] = after
    out: list[datetime] = []
    previous = before
    for at, own in enumerate(times):
        if own is not None:
            previous = own
            out.append(own)
        elif previous is not None:
            out.append(previous)
        else:
            out.append(following[at] or fallback)
    return out


def infer_times(
    events: Sequence[Event], *, before: datetime | None, fallback: datetime
) -> list[Event]:
    """``events`` (in ordinal order) with a time for each one that has none, marked
    ``time_inferred`` (:func:`fill_times`). An event already inferred keeps its time but
    is no anchor for the others; events with times of their own are returned as they are."""
    if all(e.timestamp is not None for e in events):
        return list(events)
    own = [None if e.time_inferred else e.timestamp for e in events]
    filled = fill_times(own, before=before, fallback=fallback)
    return [
        e if e.timestamp is not None else replace(e, timestamp=at, time_inferred=True)
        for e, at in zip(events, filled, strict=True)
    ]
