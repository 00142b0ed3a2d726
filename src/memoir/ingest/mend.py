"""Mend a session whose derived rows are damaged (``verify --repair``), by what it takes.

- Its events are whole but some belong to no exchange (an exchange row was lost):
  :func:`rebuild_exchanges` builds its exchanges again from its stored events — events are
  the authority — the way a sync builds them, a page of events at a time with the open
  exchange carried (:func:`memoir.model.exchange.open_tail`), and writes them through the one
  ingest write (``store.ingest.apply``): exchanges stored alike are left as they are, the
  missing ones are written with their index rows (and their neighbours' context).
- Its events themselves are damaged (a gap in its ordinals, an exchange whose events are
  gone): :func:`reread_session` reads its transcript again from the start, from the
  archived copy (what was indexed, whatever its agent did to the source since) or, when
  that is gone, from the source; with neither, nothing can bring the events back.
"""

from __future__ import annotations

import os
from pathlib import Path

from memoir.config import Settings
from memoir.ingest.archive import in_archive
from memoir.ingest.observer import SyncObserver
from memoir.ingest.sync import _EVENT_PAGE, index_file
from memoir.model import Event, Exchange, Session, build_exchanges
from memoir.model.exchange import open_tail
from memoir.store.port import Store
from memoir.store.values import IngestBatch, SourceState

__all__ = ["rebuild_exchanges", "reread_from", "reread_session"]


def rebuild_exchanges(store: Store, session_id: str) -> bool:
    """Build ``session_id``'s exchanges again from its stored events and write those
    missing or different; False when the session is unknown."""
    session = store.sessions.get(session_id)
    if session is None:
        return False
    last = store.events.last_ordinal(session_id)
    carry: list[Event] = []
    after = 0
    while after < last:
        upto = min(after + _EVENT_PAGE, last)
        page = store.events.of(session_id, after=after, upto=upto)
        after = upto
        if not page:
            continue
        everything = [*carry, *page]
        built = build_exchanges(everything)
        carry = open_tail(everything)
        _write(store, session, built[:-1] if carry else built)
    if carry:
        _write(store, session, build_exchanges(carry))
    return True


def _write(store: Store, session: Session, exchanges: list[Exchange]) -> None:
    if exchanges:  # no source state: the transcript's resume point is not this write's
        store.ingest.apply(IngestBatch(session=session, exchanges=tuple(exchanges)))


def reread_from(settings: Settings, state: SourceState) -> Path | None:
    """The file to read ``state``'s transcript again from: its archived copy when it holds
    every byte indexed, else its source when that is still there; None when neither."""
    if state.archive_path:
        archived = in_archive(settings.archive_dir, state.archive_path)
        try:
            if os.stat(archived).st_size >= state.offset:
                return archived
        except OSError:
            pass
    return Path(state.path) if os.path.isfile(state.path) else None


def reread_session(
    settings: Settings, store: Store, session_id: str, observer: SyncObserver
) -> bool:
    """Read ``session_id``'s transcript again from its start (its stored events are
    damaged); False when no archived copy or source of it is left to read."""
    states = [s for s in store.ingest.sources().values() if s.session_id == session_id]
    for state in states:
        path = reread_from(settings, state)
        if path is None:
            continue
        copy = in_archive(settings.archive_dir, state.archive_path) if state.archive_path else None
        root = settings.archive_dir if path == copy else path.parent
        index_file(settings, store, path, root=root, observer=observer, key=state.path, reread=True)
        return True
    return False
