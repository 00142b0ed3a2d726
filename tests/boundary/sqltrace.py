"""The SQL a store runs, as it runs it: every statement sent through a transaction's
``run`` (both backends' ``Tx``), with its parameters and how many rows came back."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import pytest

from memoir.store import postgres_store, sqlite_store

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
    for tx_class in (sqlite_store._SQLiteTx, postgres_store._PgTx):
        original = tx_class.run

        def run(self: Any, sql: str, params: Sequence[Any] = (), _run: Any = original) -> Any:
            rows = _run(self, sql, params)
            ran.statements.append((sql, tuple(params), len(rows)))
            return rows

        monkeypatch.setattr(tx_class, "run", run)
    yield ran  # the monkeypatch puts ``run`` back when the test ends
