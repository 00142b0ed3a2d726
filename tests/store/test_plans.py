"""Plans: SQL work written once as a generator of statements and run by whoever holds
the connection. The runner sends each statement's rows back, binds timestamps the way
the backend does, and returns the plan's result; a plan's decisions are testable by
feeding it rows, with no database."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any

import pytest

from memoir.errors import NotFound, UsageError
from memoir.memory.item_rows import MemoryItemRow
from memoir.memory.item_sql import ItemWriter
from memoir.store import Store
from memoir.store.db import Plan, Stmt, run_plan
from memoir.store.parts.sessions import resolve_plan
from memoir.store.postgres_search import PostgresItemText

AT = datetime(2026, 3, 1, 9, 30, tzinfo=UTC)


class _Tx:
    """A transaction that answers from a script and keeps what it was sent."""

    def __init__(self, answers: Sequence[list[Any]]) -> None:
        self.answers = list(answers)
        self.sent: list[tuple[str, Any]] = []

    def run(self, sql: str, params: Sequence[Any] = ()) -> list[Any]:
        self.sent.append(("run", list(params)))
        return self.answers.pop(0)

    def many(self, sql: str, rows: Sequence[Sequence[Any]]) -> None:
        self.sent.append(("many", [list(r) for r in rows]))

    def time(self, value: datetime | None) -> Any:
        return None if value is None else f"T<{value.isoformat()}>"


def _two_reads() -> Plan[int]:
    first = yield Stmt("SELECT 1", ("a", AT))
    yield Stmt("INSERT", [(1, AT), (2, None)], many=True)
    second = yield Stmt("SELECT 2", (len(first),))
    return len(first) + len(second)


def test_run_plan_sends_rows_back_binds_times_and_returns_the_result() -> None:
    tx = _Tx([[(1,), (2,)], [(3,)]])
    assert run_plan(tx, _two_reads()) == 3
    stamp = f"T<{AT.isoformat()}>"
    assert tx.sent == [
        ("run", ["a", stamp]),
        ("many", [[1, stamp], [2, None]]),
        ("run", [2]),  # the rows of the first statement reached the plan
    ]


def _item(**fields: Any) -> MemoryItemRow:
    base: dict[str, Any] = {
        "id": "mem-1",
        "session_id": "s1",
        "project": "p",
        "scope": "project",
        "kind": "fact",
        "content": "We deploy on Fridays.",
        "normalized": "we deploy on fridays",
        "keys": ("deploy",),
        "operation_id": "op-1",
        "created_at": AT,
        "owner": "alice",
    }
    base.update(fields)
    return MemoryItemRow(**base)


@pytest.mark.parametrize(
    ("answers", "sent"),
    [
        # replayed: the id is stored already; nothing else is asked or written
        ([[("mem-1",)]], ["run"]),
        # new: no twin, so inserted, then its quotes (PostgreSQL indexes by itself)
        ([[], [], [("mem-1",)]], ["run", "run", "run", "many"]),
        # the insert lost a race to the same operation: no twin either, nothing more
        ([[], [], [], []], ["run", "run", "run", "run"]),
    ],
)
def test_an_items_save_decides_from_the_rows_it_reads(
    answers: list[list[Any]], sent: list[str]
) -> None:
    tx = _Tx(answers)
    assert run_plan(tx, ItemWriter(PostgresItemText(), "").save(_item())) == "mem-1"
    assert [kind for kind, _ in tx.sent] == sent
    assert tx.answers == []  # every answer was read


def test_an_empty_session_reference_is_refused_before_any_statement() -> None:
    with pytest.raises(UsageError, match="the session id is empty"):
        next(resolve_plan("  "))


def test_a_plan_runs_on_either_backend(store: Store) -> None:
    with pytest.raises(NotFound, match="no session 'nope'"):
        store.db.query(resolve_plan("nope"))
    assert store.db.apply(_switched_off("p", "q")) == 2  # written and read in one transaction
    assert store.db.snapshot(_count()) == store.db.query(_count()) == 2


def _switched_off(*projects: str) -> Plan[int]:
    yield Stmt(
        "INSERT INTO memory_switches (project, disabled) VALUES (?, ?)",
        [(p, True) for p in projects],
        many=True,
    )
    return (yield from _count())


def _count() -> Plan[int]:
    rows = yield Stmt("SELECT count(*) FROM memory_switches WHERE disabled = ?", (True,))
    return int(rows[0][0])
