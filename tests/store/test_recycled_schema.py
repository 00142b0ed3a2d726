"""The suite's PostgreSQL schemas are recycled between tests (tests/conftest.py,
``migrated_pg_schema``): one emptied after a test that wrote to it must be what a new one
is — the same tables, no rows, every sequence back at its start."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from store_builders import ingest

from conftest import fresh_pg_schema, migrated_pg_schema
from memoir.store.postgres_store import PostgresStore

pytestmark = pytest.mark.postgres


def _state(url: str) -> dict[str, Any]:
    """Row counts and heap pages of every table, where every sequence stands, and how
    many column statistics the schema holds."""
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
        pages = {
            t: conn.execute("SELECT pg_relation_size(%s::regclass)", (f'"{t}"',)).fetchone()
            for t in tables
        }
        sequences = {
            name: conn.execute(f'SELECT last_value, is_called FROM "{name}"'.encode()).fetchone()
            for (name,) in conn.execute(
                "SELECT relname FROM pg_class WHERE relkind = 'S' "
                "AND relnamespace = current_schema()::regnamespace ORDER BY 1"
            )
        }
        (stats,) = conn.execute(
            "SELECT count(*) FROM pg_stats WHERE schemaname = current_schema()"
        ).fetchone()
    return {"counts": counts, "pages": pages, "sequences": sequences, "statistics": stats}


def _new_state() -> dict[str, Any]:
    """The state of a schema just migrated."""
    with fresh_pg_schema() as url:
        PostgresStore(url).close()
        return _state(url)


# kept: the test's rows stay; deleted: the test deleted them itself (tables empty, but
# written to, and their sequences advanced)
@pytest.mark.parametrize("rows", ["kept", "deleted"])
def test_a_schema_emptied_after_writes_is_what_a_new_one_is(tmp_path: Path, rows: str) -> None:
    new = _new_state()
    with migrated_pg_schema() as url:
        store = PostgresStore(url)
        try:
            ingest(store, "s1", [("How do I enable WAL?", "PRAGMA journal_mode=WAL", None)])
            ingest(store, "s2", [("Thanks", "You're welcome", None)])
            store.embeddings.put("m", [("s1:1", b"\0" * 8)], 2)
            with store._db.tx() as tx:  # type: ignore[attr-defined]
                tx.run("ANALYZE exchanges")
            if rows == "deleted":
                store.sessions.delete("s1")
                store.sessions.delete("s2")
        finally:
            store.close()
        written = _state(url)
        first = url
    assert written["counts"]["exchanges"] == ((2,) if rows == "kept" else (0,))
    assert written != new  # written to: rows, pages or sequences
    with migrated_pg_schema() as url:
        assert url == first  # the same schema, recycled
        assert _state(url) == new
        store = PostgresStore(url)  # opens as a migrated one: nothing to do
        try:
            ingest(store, "s1", [("again", "yes", None)])
        finally:
            store.close()


def test_a_schema_whose_test_wrote_only_a_referenced_table_is_recycled() -> None:
    """A test that made a session and nothing under it wrote ``sessions`` alone, which
    other tables reference: emptying it truncates them with it, so the schema is recycled
    (not dropped, which sent the next test to migrate a new one: ~0.2 s each)."""
    from memoir.wiring import create_session

    new = _new_state()
    with migrated_pg_schema() as url:
        store = PostgresStore(url)
        try:
            create_session(store, "alice", session_id="only-a-session", project="p")
        finally:
            store.close()
        assert _state(url)["counts"]["sessions"] == (1,)
        first = url
    with migrated_pg_schema() as url:
        assert url == first  # recycled
        assert _state(url) == new
