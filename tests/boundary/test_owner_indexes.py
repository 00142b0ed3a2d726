"""Every list of one user's rows starts from an index on its owner column, on both
backends: the statements the store runs for the recent list (its page, total and
facets), memory items, jobs and usage are each explained, and none reads a whole table
of all users' rows to find one user's (a sequential scan of sessions, memory_items,
jobs or usage)."""

from __future__ import annotations

import re

import pytest

from memoir.memory.item_store import memory_parts
from memoir.model import RecentQuery
from memoir.store.values import ItemFilter

from .conftest import A, World
from .sqltrace import traced

OWNED = ("sessions", "memory_items", "jobs", "usage")
_OWNER = re.compile(r"\b(user_name|owner)\s*=\s*\?")


def _lists(world: World) -> None:
    store = world.memoir.store
    store.sessions.listing(A, RecentQuery(), limit=10, counted=True)
    store.sessions.listing(A, RecentQuery(project="webshop"), limit=10, counted=True)
    store.sessions.with_prefix("ali", user=A)
    memory_parts(store).items.find(owner=A, history=True)
    memory_parts(store).items.ids(ItemFilter(owner=A, project="webshop"), limit=10)
    store.jobs.find(user=A)
    store.usage.records(owner=A)
    store.usage.records(owner="local")  # with the home's own calls (no user, no session)


def _explain(world: World, sql: str, params: tuple[object, ...]) -> str:
    store = world.memoir.store
    if world.backend == "sqlite":
        with store._db.ro() as tx:
            rows = tx.run(f"EXPLAIN QUERY PLAN {sql}", params)
        return "\n".join(str(r[-1]) for r in rows)
    with store._db.tx() as tx:  # tiny tables: make a scan cost what it costs on big ones
        tx.run("SET LOCAL enable_seqscan = off")
        rows = tx.run(f"EXPLAIN {sql}", params)
    return "\n".join(str(r[0]) for r in rows)


def _aliases(sql: str) -> dict[str, str]:
    """alias (or table name) → table, for the owned tables a statement reads."""
    named = re.findall(
        r"\b(?:FROM|JOIN)\s+(" + "|".join(OWNED) + r")\b(?:\s+(?!WHERE|ORDER|GROUP|LIMIT)(\w+))?",
        sql,
    )
    return {alias or table: table for table, alias in named}


def _full_scans(backend: str, plan: str, sql: str) -> list[str]:
    """The owned tables ``plan`` reads whole: SQLite's SCAN (with an index or without: a
    SEARCH seeks), PostgreSQL's scan nodes with no index condition under them."""
    if backend == "sqlite":
        aliases = _aliases(sql)
        return [aliases[a] for a in re.findall(r"^SCAN (\w+)", plan, re.M) if a in aliases]
    lines = plan.splitlines()
    whole = []
    for n, line in enumerate(lines):
        node = re.search(r"Scan(?: Backward)?(?: using \w+)? on (\w+)", line)
        if node is None or node.group(1) not in OWNED:
            continue
        below = []
        for more in lines[n + 1 :]:
            if "->" in more:
                break
            below.append(more)
        if not any("Index Cond" in b or "Recheck Cond" in b for b in below):
            whole.append(node.group(1))
    return whole


def test_owner_lists_read_an_index(world: World, monkeypatch: pytest.MonkeyPatch) -> None:
    with traced(monkeypatch) as ran:
        _lists(world)
    owned = [(sql, p) for sql, p, _ in ran.statements if _OWNER.search(sql)]
    assert len(owned) >= 12, [s for s, _ in owned]
    for sql, params in owned:
        plan = _explain(world, sql, params)
        assert _full_scans(world.backend, plan, sql) == [], (sql, plan)
