"""The SQL a store runs, as it runs it: every statement sent through a transaction's
``run`` (both backends' ``Tx``) or a one-statement read (``Db.rows``: on PostgreSQL it
sends its statement itself, to spend one round trip), with its parameters and how many rows
came back."""

from __future__ import annotations

import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import pytest

from memoir.store import db, postgres_store, sqlite_store

__all__ = ["Ran", "traced"]


@dataclass
class Ran:
    statements: list[tuple[str, tuple[Any, ...], int]] = field(default_factory=list)

    def shape(self) -> list[tuple[str, int]]:
        """The statements and their row counts, parameters left out: the work done."""
        return [(sql, n) for sql, _, n in self.statements]


@contextmanager
def traced(monkeypatch: pytest.MonkeyPatch) -> Iterator[Ran]:
    """Record every statement from here to the end of the test."""
    ran = Ran()
    inside = threading.local()  # in ``Db.rows``: a statement it runs through ``run`` counts once
    for owner, name in (
        (sqlite_store._SQLiteTx, "run"),
        (postgres_store._PgTx, "run"),
        (db.Db, "rows"),
    ):
        original = getattr(owner, name)

        def run(
            self: Any, sql: str, params: Sequence[Any] = (), _run: Any = original, _n: str = name
        ) -> Any:
            outer = getattr(inside, "rows", False)
            inside.rows = outer or _n == "rows"
            try:
                rows = _run(self, sql, params)
            finally:
                inside.rows = outer
            if not outer:
                ran.statements.append((sql, tuple(params), len(rows)))
            return rows

        monkeypatch.setattr(owner, name, run)
    yield ran  # the monkeypatch puts ``run`` back when the test ends
