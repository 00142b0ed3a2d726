"""Round trips of psycopg connections, counted from libpq's protocol trace: every
connection that waits on the server while counting traces its messages (client ``F``,
server ``B``) into one file, and a round trip is a run of client messages followed by the
server's reply. Pipelined statements sent together and answered together count once; a
reply read while more is still being sent counts again, so the count is an upper bound."""

from __future__ import annotations

import os
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import psycopg
from psycopg import pq

__all__ = ["RoundTrips", "count_round_trips"]


class RoundTrips:
    def __init__(self, trace: Path) -> None:
        self._trace = trace
        self._text: str | None = None  # read when counting ends

    def close(self) -> None:
        self._text = self._trace.read_text(errors="replace")

    def lines(self) -> list[str]:
        text = self._text if self._text is not None else self._trace.read_text(errors="replace")
        return text.splitlines()

    @property
    def count(self) -> int:
        trips, sending = 0, False
        for line in self.lines():
            direction = line.split("\t", 1)[0]
            if direction == "F":
                sending = True
            elif direction == "B" and sending:
                trips, sending = trips + 1, False
        return trips


@contextmanager
def count_round_trips() -> Iterator[RoundTrips]:
    """Trace every psycopg connection that talks to the server inside the block."""
    traced: list[psycopg.Connection[Any]] = []
    original = psycopg.Connection.wait
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "trace"
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND)

        def wait(conn: psycopg.Connection[Any], *args: Any, **kwargs: Any) -> Any:
            if conn not in traced:
                conn.pgconn.trace(fd)
                conn.pgconn.set_trace_flags(pq.Trace.SUPPRESS_TIMESTAMPS)
                traced.append(conn)
            return original(conn, *args, **kwargs)

        psycopg.Connection.wait = wait  # type: ignore[method-assign]
        trips = RoundTrips(path)
        try:
            yield trips
        finally:
            psycopg.Connection.wait = original  # type: ignore[method-assign]
            for conn in traced:
                if not conn.closed:
                    conn.pgconn.untrace()
            os.close(fd)
            trips.close()
