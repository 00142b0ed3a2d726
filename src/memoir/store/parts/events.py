"""The event log and the exchanges derived from it: reads by session, by range, by id."""

from __future__ import annotations

import bisect
from collections import defaultdict
from collections.abc import Iterable
from typing import Any

from memoir.model import Event, Exchange
from memoir.store.codec import EVENT_COLS, EXCHANGE_COLS, event_from_row, exchange_from_row
from memoir.store.db import Part

__all__ = ["EventsPart", "ExchangesPart"]

_CHUNK = 500


class EventsPart(Part):
    def of(self, session_id: str, *, after: int = 0, upto: int | None = None) -> list[Event]:
        """A session's events with ``after < ordinal <= upto``, in order."""
        sql = f"SELECT {EVENT_COLS} FROM events WHERE session_id = ? AND ordinal > ?"
        params: list[Any] = [session_id, after]
        if upto is not None:
            sql += " AND ordinal <= ?"
            params.append(upto)
        return [event_from_row(r) for r in self._db.rows(sql + " ORDER BY ordinal", params)]

    def last_ordinal(self, session_id: str) -> int:
        rows = self._db.rows("SELECT max(ordinal) FROM events WHERE session_id = ?", (session_id,))
        return int(rows[0][0] or 0)


class ExchangesPart(Part):
    def holding(self, events: Iterable[tuple[str, int]]) -> dict[tuple[str, int], str]:
        """The id of the exchange holding each (session id, event ordinal), for the events
        an exchange holds: one read of those sessions' exchange spans (ids and ordinals
        only), not one read of each session's exchanges."""
        wanted = set(events)
        sessions = sorted({sid for sid, _ in wanted})
        spans: dict[str, list[tuple[int, int, str]]] = defaultdict(list)
        for start in range(0, len(sessions), _CHUNK):
            chunk = sessions[start : start + _CHUNK]
            marks = ", ".join("?" for _ in chunk)
            for sid, first, last, xid in self._db.rows(
                "SELECT session_id, first_ordinal, last_ordinal, id FROM exchanges "
                f"WHERE session_id IN ({marks}) ORDER BY session_id, first_ordinal",
                chunk,
            ):
                spans[str(sid)].append((int(first), int(last), str(xid)))
        out: dict[tuple[str, int], str] = {}
        for sid, ordinal in wanted:
            rows = spans.get(sid, [])
            at = bisect.bisect_right(rows, ordinal, key=lambda r: r[0]) - 1
            if at >= 0 and rows[at][0] <= ordinal <= rows[at][1]:
                out[(sid, ordinal)] = rows[at][2]
        return out

    def of(self, session_id: str) -> list[Exchange]:
        """A session's exchanges, in order."""
        rows = self._db.rows(
            f"SELECT {EXCHANGE_COLS} FROM exchanges WHERE session_id = ? ORDER BY first_ordinal",
            (session_id,),
        )
        return [exchange_from_row(r) for r in rows]

    def get(self, exchange_id: str) -> Exchange | None:
        return self.many([exchange_id]).get(exchange_id)

    def many(self, exchange_ids: list[str]) -> dict[str, Exchange]:
        """The exchanges of these ids that exist, by id."""
        out: dict[str, Exchange] = {}
        ids = list(dict.fromkeys(exchange_ids))
        with self._db.ro() as tx:
            for i in range(0, len(ids), _CHUNK):
                chunk = ids[i : i + _CHUNK]
                marks = ",".join("?" * len(chunk))
                for r in tx.run(
                    f"SELECT {EXCHANGE_COLS} FROM exchanges WHERE id IN ({marks})", chunk
                ):
                    out[r[0]] = exchange_from_row(r)
        return out
