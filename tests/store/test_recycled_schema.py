"""The suite's PostgreSQL schemas are recycled between tests (tests/conftest.py,
``migrated_pg_schema``): one emptied after a test that wrote to it must be what a new one
is — the same tables, no rows, every sequence back at its start."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest
from store_builders import ingest

from conftest import _BIG, fresh_pg_schema, migrated_pg_schema
from memoir.store.postgres_store import PostgresStore

pytestmark = pytest.mark.postgres


def _state(url: str) -> dict[str, Any]:
    """Row counts of every table, and where every sequence stands."""
    import psycopg

    with psycopg.connect(url) as conn:
        tables = [
            r[0]
            for r in conn.execute(
                "SELECT tablename FROM pg_tables WHERE schemaname = current_schema() ORDER BY 1"
            )
        ]
        counts = {
            t: conn.execute(f'SELECT count(*) FROM "{t}"'.encode()).fetchone() for t in tables
        }
        sequences = {
            name: conn.execute(f'SELECT last_value, is_called FROM "{name}"'.encode()).fetchone()
            for (name,) in conn.execute(
                "SELECT relname FROM pg_class WHERE relkind = 'S' "
                "AND relnamespace = current_schema()::regnamespace ORDER BY 1"
            )
        }
    return {"counts": counts, "sequences": sequences}


def _sizes(url: str) -> dict[str, int]:
    import psycopg

    with psycopg.connect(url) as conn:
        rows = conn.execute(
            "SELECT relname, pg_total_relation_size(oid) FROM pg_class "
            "WHERE relkind = 'r' AND relnamespace = current_schema()::regnamespace"
        ).fetchall()
    return {str(name): int(size) for name, size in rows}


# 1 vector: the tables are emptied row by row; 400 vectors of 4 kB: past conftest._BIG, the
# vectors' table is truncated
@pytest.mark.parametrize("vectors", [1, 400])
def test_a_schema_emptied_after_writes_is_what_a_new_one_is(tmp_path: Path, vectors: int) -> None:
    with fresh_pg_schema() as url:
        PostgresStore(url).close()
        new = _state(url)
    with migrated_pg_schema() as url:
        store = PostgresStore(url)
        try:
            ingest(store, "s1", [("How do I enable WAL?", "PRAGMA journal_mode=WAL", None)])
            ingest(store, "s2", [(f"Thanks {i}", "You're welcome", None) for i in range(vectors)])
            rows = [(f"s2:{i}", os.urandom(4096)) for i in range(1, vectors + 1)]
            assert store.embeddings.put("m", rows, 1024) == vectors
        finally:
            store.close()
        written = _state(url)
        first = url
    assert written["counts"]["exchanges"] == (1 + vectors,) and written != new  # written to
    with migrated_pg_schema() as url:
        assert url == first  # the same schema, recycled
        assert _state(url) == new
        assert max(_sizes(url).values()) <= _BIG  # no heap of dead rows left behind
        store = PostgresStore(url)  # opens as a migrated one: nothing to do
        try:
            ingest(store, "s1", [("again", "yes", None)])
        finally:
            store.close()
