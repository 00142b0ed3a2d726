"""What a store part is built on: a transaction to write in, one to read in, and (for the
parts whose SQL differs by backend) the driver's connection.

SQL run through :class:`Tx` is written once with ``?`` placeholders; each backend's ``Tx``
converts them to its driver's style and encodes timestamps its way. A part never asks
which backend it runs on: what differs is handed to it when the store wires it.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Protocol

from memoir.errors import StoreError

__all__ = ["Db", "Part", "StaleConnection", "Tx"]


class StaleConnection(StoreError):
    """A ``batch`` found its connection ended by the server (a restart, a terminated
    session) before the server answered any of it: nothing of the batch was done, and
    the pool's connections have been checked since; the caller may run it again once."""


class Tx(Protocol):
    def run(self, sql: str, params: Sequence[Any] = ()) -> list[Any]: ...
    def many(self, sql: str, rows: Sequence[Sequence[Any]]) -> None: ...
    def time(self, value: datetime | None) -> Any: ...


@dataclass(frozen=True, slots=True)
class Db:
    """A backend's transactions, as its parts see them. ``write``/``read`` yield the
    driver's own connection (inside one transaction for ``write``), for SQL written per
    backend. ``batch`` (PostgreSQL's; ``write`` where it is None) is a write transaction
    whose statements are not waited for one by one (psycopg's pipeline mode, ``BEGIN``
    and ``COMMIT`` included): the client waits where it reads a result, and a statement's
    ``rowcount`` is not known until then. Its connection is handed out without a round
    trip of its own to check it: a stale one raises :class:`StaleConnection`."""

    tx: Callable[[], AbstractContextManager[Tx]]
    ro: Callable[[], AbstractContextManager[Tx]]
    write: Callable[[], AbstractContextManager[Any]]
    read: Callable[[], AbstractContextManager[Any]]
    batch: Callable[[], AbstractContextManager[Any]] | None = None

    def rows(self, sql: str, params: Sequence[Any] = ()) -> list[Any]:
        with self.ro() as tx:
            return tx.run(sql, params)


class Part:
    """A store part: a small class over the store's :class:`Db`."""

    def __init__(self, db: Db) -> None:
        self._db = db
