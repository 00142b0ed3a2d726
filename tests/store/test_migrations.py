"""Migrations: a database created at v1 with rows upgrades in place without loss, on both
backends; failures roll back; a newer schema is refused."""

from __future__ import annotations

import importlib
import sqlite3
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from store_builders import T0, batch, conversation, session, source

from memoir.errors import MigrationError
from memoir.model import build_exchanges
from memoir.store import SearchFilters, Store
from memoir.store import sqlite_store as sqlite_store_module
from memoir.store.codec import (
    event_params,
    exchange_params,
    session_params,
    source_params,
    to_iso,
    to_utc,
)
from memoir.store.migrations import (
    CURRENT_VERSION,
    MIGRATIONS,
    Migration,
    fresh,
    pending,
)

Run = Callable[[str, tuple[Any, ...]], None]
EVENTS = conversation(
    "s1",
    [
        ("How do I enable WAL?", "PRAGMA journal_mode=WAL", "Bash"),
        ("Thanks", "You're welcome", None),
    ],
)
EXCHANGES = build_exchanges(EVENTS)


def fill_v1(run: Run, enc: Callable[[Any], Any], mark: str) -> None:
    """Rows written with the v1 schema, as a v1 Memoir would have."""

    def q(n: int) -> str:
        return ", ".join([mark] * n)

    run(
        f"INSERT INTO sessions (id, project, harness, user_name, source_path, cwd, incognito, "
        f"archived, subagent, memory_disabled, created_at, updated_at) VALUES ({q(12)})",
        session_params(session("s1"), enc),
    )
    for e in EVENTS:
        run(
            f"INSERT INTO events (session_id, ordinal, kind, author, ts, tool_name, call_id, "
            f"source_offset, source_line, payload, text) VALUES ({q(11)})",
            event_params(e, enc)[:11],  # v1 had no time_inferred (v16)
        )
    for x in EXCHANGES:
        run(
            f"INSERT INTO exchanges (id, session_id, first_ordinal, last_ordinal, "
            f"started_at, ended_at, line_start, line_end, tool_names, user_text, "
            f"assistant_text, tool_excerpt) VALUES ({q(12)})",
            exchange_params(x, enc),
        )
    run(
        f'INSERT INTO sources (path, session_id, harness, size, "offset", line_count, '
        f"mtime_ns, prefix_hash, tail_hash, archive_path, parser_state) VALUES ({q(11)})",
        source_params(source()),
    )


def assert_upgraded_intact(store: Store) -> None:
    assert store.schema_version() == CURRENT_VERSION
    assert store.sessions.get("s1") == session("s1")
    assert store.events.of("s1") == EVENTS
    assert store.exchanges.of("s1") == EXCHANGES
    assert store.ingest.source("/src/proj/s1.jsonl") == source()
    # v2 built the index rows of the exchanges that were already there
    assert store.stats()["index_rows"] == len(EXCHANGES)
    assert [h.exchange_id for h in store.index.search("wal", SearchFilters(), 5)] == ["s1:1"]
    assert store.integrity_problems() == []


def test_pending_is_ordered_and_bounded() -> None:
    assert [m.version for m in MIGRATIONS] == list(range(1, CURRENT_VERSION + 1))
    assert len({m.name for m in MIGRATIONS}) == len(MIGRATIONS)
    assert [m.version for m in pending(0)] == list(range(1, 26))
    assert [m.version for m in pending(0, 1)] == [1]
    assert pending(CURRENT_VERSION) == []


# where each version lives: (module, first version, last version)
RANGES = (
    ("memoir.store.migrations.v001_v006", 1, 6),
    ("memoir.store.migrations.v007_v013", 7, 13),
    ("memoir.store.migrations", 14, 16),
    ("memoir.store.migrations.v017_v025", 17, 25),
)


@pytest.mark.parametrize(("module", "first", "last"), RANGES)
def test_each_version_is_a_constant_named_for_it_in_its_range(
    module: str, first: int, last: int
) -> None:
    found = importlib.import_module(module)
    constants = {
        name: value
        for name, value in vars(found).items()
        if isinstance(value, Migration) and name.startswith("V0") and name in found.__all__
    }
    owned = {name: m for name, m in constants.items() if first <= m.version <= last}
    assert sorted(m.version for m in owned.values()) == list(range(first, last + 1))
    for name, m in owned.items():
        assert name.startswith(f"V{m.version:03d}_")
        assert MIGRATIONS[m.version - 1] is m


def test_the_ranges_cover_every_version_once() -> None:
    covered = [v for _, first, last in RANGES for v in range(first, last + 1)]
    assert covered == [m.version for m in MIGRATIONS]


# --- SQLite -----------------------------------------------------------------------------
@contextmanager
def sqlite_conn(path: Path) -> Iterator[sqlite3.Connection]:
    conn = sqlite3.connect(path, isolation_level=None)
    try:
        yield conn
    finally:
        conn.close()


def test_sqlite_v1_database_upgrades_with_rows_intact(tmp_path: Path) -> None:
    path = tmp_path / "old.db"
    with sqlite_conn(path) as conn:
        assert sqlite_store_module.migrate(conn, target=1) == 1
        fill_v1(lambda sql, p: conn.execute(sql, p), to_iso, "?")
    store = sqlite_store_module.SQLiteStore(path)
    try:
        assert_upgraded_intact(store)
        names = store._db.rows("SELECT version, name FROM schema_version ORDER BY version")
        assert names == [
            (1, "core"),
            (2, "search-usage-summaries"),
            (3, "index-filter-tokens"),
            (4, "index-neighbour-context"),
            (5, "embedding-token-states"),
            (6, "embedding-generations"),
            (7, "embedding-changes"),
            (8, "postgres-accent-folding"),
            (9, "embedding-recipe"),
            (10, "memory"),
            (11, "service"),
            (12, "checkpoint-boundary-index"),
            (13, "memory-recall"),
            (14, "project-names"),
            (15, "usage-redactions"),
            (16, "event-times"),
            (17, "secret-rescan"),
            (18, "postgres-index-folded-in-python"),
            (19, "owner-indexes"),
            (20, "keyed-items"),
            (21, "session-names"),
            (22, "owner-tokens"),
            (23, "embedding-log-everywhere"),
            (24, "item-vector-models"),
            (25, "item-owner-lookup"),
        ]
        # v4 rebuilt the rows with the neighbour context: the reply to "Thanks" quotes WAL
        context = "SELECT count(*) FROM exchange_fts WHERE exchange_fts MATCH 'context : wal'"
        assert store._db.rows(context) == [(1,)]
    finally:
        store.close()
    again = sqlite_store_module.SQLiteStore(path)  # reopening migrates nothing
    assert again.schema_version() == CURRENT_VERSION and again.stats()["exchanges"] == 2
    again.close()


def test_sqlite_failed_migration_rolls_back(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "m.db"
    sqlite_store_module.SQLiteStore(path).close()
    broken = Migration(CURRENT_VERSION + 1, "broken", ("CREATE TABLE t_ok (x)", "NOT SQL"), ())
    monkeypatch.setattr(sqlite_store_module, "CURRENT_VERSION", CURRENT_VERSION + 1)
    monkeypatch.setattr(sqlite_store_module, "pending", lambda v, t=None: [broken])
    with pytest.raises(MigrationError, match="broken"):
        sqlite_store_module.SQLiteStore(path)
    with sqlite_conn(path) as conn:
        version = conn.execute("SELECT max(version) FROM schema_version").fetchone()[0]
        assert version == CURRENT_VERSION
        assert conn.execute("SELECT name FROM sqlite_master WHERE name = 't_ok'").fetchone() is None


def test_sqlite_newer_schema_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "new.db"
    sqlite_store_module.SQLiteStore(path).close()
    with sqlite_conn(path) as conn:
        conn.execute("INSERT INTO schema_version VALUES (99, 'future', 'x')")
    with pytest.raises(MigrationError, match=r"v99.*upgrade memoir"):
        sqlite_store_module.SQLiteStore(path)


VECTOR = b"\x00\x00\x80\x3f" * 2  # [1.0, 1.0] as float32


def assert_vector_kept_without_tokens(store: Store) -> None:
    """v5: a vector stored before token states existed is kept, has none, and is listed
    for re-embedding only by an embedder that has token states."""
    assert store.embeddings.load("m") == (["s1:1"], VECTOR, 2)
    assert store.embeddings.generation("m") == 0  # v6: the state found is generation 0
    assert store.embeddings.token_states("m", ["s1:1", "s1:5"]) == {}
    # v9: a vector from before recipes were recorded is redone, after the missing ones
    assert [i for i, _ in store.embeddings.backlog("m", 10)] == ["s1:5", "s1:1"]
    assert [i for i, _ in store.embeddings.backlog("m", 10, with_tokens=True)] == ["s1:1", "s1:5"]
    store.embeddings.put("m", [("s1:1", VECTOR)], 2, [b"\x02\x00\x7f\x00"])
    assert store.embeddings.token_states("m", ["s1:1"]) == {"s1:1": b"\x02\x00\x7f\x00"}
    assert [i for i, _ in store.embeddings.backlog("m", 10, with_tokens=True)] == ["s1:5"]
    assert store.embeddings.generation("m") == 1  # the first write after v6 raised it


def test_sqlite_v4_vectors_upgrade_without_token_states(tmp_path: Path) -> None:
    path = tmp_path / "v4.db"
    with sqlite_conn(path) as conn:
        sqlite_store_module.migrate(conn, target=1)
        fill_v1(lambda sql, p: conn.execute(sql, p), to_iso, "?")
        assert sqlite_store_module.migrate(conn, target=4) == 4
        conn.execute("INSERT INTO embeddings VALUES ('m', 's1:1', 2, ?)", (VECTOR,))
    store = sqlite_store_module.SQLiteStore(path)
    try:
        assert store.schema_version() == CURRENT_VERSION
        assert_vector_kept_without_tokens(store)
    finally:
        store.close()


# --- PostgreSQL ----------------------------------------------------------------------------
@pytest.mark.postgres
def test_postgres_v1_database_upgrades_with_rows_intact(pg_database: str) -> None:
    import psycopg

    from memoir.store import postgres_store as pgs

    with psycopg.connect(pg_database, autocommit=True) as conn:
        assert pgs.migrate(conn, target=1) == 1
        with conn.transaction():
            fill_v1(lambda sql, p: conn.execute(sql, p), to_utc, "%s")
        assert conn.execute("SELECT to_regclass('exchange_search')").fetchone() == (None,)
    store = pgs.PostgresStore(pg_database)
    try:
        assert_upgraded_intact(store)
        more = conversation("s2", [("new after upgrade", None, None)], start=T0)
        store.ingest.apply(batch(session("s2"), more))
        assert store.stats()["index_rows"] == 3
    finally:
        store.close()
    with psycopg.connect(pg_database) as conn:  # v4 rebuilt the rows with neighbour context
        rows = conn.execute("SELECT context_doc FROM exchange_search ORDER BY exchange_pk")
        assert ["WAL" in doc for (doc,) in rows.fetchall()] == [False, True, False]


@pytest.mark.postgres
def test_postgres_v4_vectors_upgrade_without_token_states(pg_database: str) -> None:
    import psycopg

    from memoir.store import postgres_store as pgs

    with psycopg.connect(pg_database, autocommit=True) as conn:
        pgs.migrate(conn, target=1)
        with conn.transaction():
            fill_v1(lambda sql, p: conn.execute(sql, p), to_utc, "%s")
        assert pgs.migrate(conn, target=4) == 4
        conn.execute("INSERT INTO embeddings VALUES ('m', 's1:1', 2, %s)", (VECTOR,))
    store = pgs.PostgresStore(pg_database)
    try:
        assert store.schema_version() == CURRENT_VERSION
        assert_vector_kept_without_tokens(store)
    finally:
        store.close()


@pytest.mark.postgres
def test_postgres_failed_migration_rolls_back(
    pg_database: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    import psycopg

    from memoir.store import postgres_store as pgs

    pgs.PostgresStore(pg_database).close()
    broken = Migration(CURRENT_VERSION + 1, "broken", (), ("CREATE TABLE t_ok (x int)", "NOT SQL"))
    monkeypatch.setattr(pgs, "CURRENT_VERSION", CURRENT_VERSION + 1)
    monkeypatch.setattr(pgs, "pending", lambda v, t=None: [broken])
    with pytest.raises(MigrationError, match="broken"):
        pgs.PostgresStore(pg_database)
    with psycopg.connect(pg_database) as conn:
        version = conn.execute("SELECT max(version) FROM schema_version").fetchone()
        assert version == (CURRENT_VERSION,)
        assert conn.execute("SELECT to_regclass('t_ok')").fetchone() == (None,)


# --- v23: the change log on both backends, and its pruned mark ------------------------------
def assert_logged_from_v23(store: Store) -> None:
    """A vector written at v21 is kept (at generation 1, not logged: the log starts at the
    upgrade); the first write after v23 is logged on either backend, nothing pruned yet."""
    assert store.embeddings.load("m") == (["s1:1"], VECTOR, 2)
    assert store.embeddings.generation("m") == 1
    assert store.embeddings.pruned("m") == 0
    start = store.embeddings.log_end("m")
    store.embeddings.put("m", [("s1:5", VECTOR)], 2)
    end, changed = store.embeddings.changes("m", start)
    assert changed == ["s1:5"] and end == store.embeddings.log_end("m") > start
    assert store.embeddings.generation("m") == 2


def test_sqlite_v21_vectors_upgrade_to_the_logged_schema(tmp_path: Path) -> None:
    path = tmp_path / "v21.db"
    with sqlite_conn(path) as conn:
        sqlite_store_module.migrate(conn, target=1)
        fill_v1(lambda sql, p: conn.execute(sql, p), to_iso, "?")
        assert sqlite_store_module.migrate(conn, target=21) == 21
        conn.execute(
            "INSERT INTO embeddings (model, exchange_id, dim, vec) VALUES ('m', 's1:1', 2, ?)",
            (VECTOR,),
        )
        conn.execute("DELETE FROM embedding_changes")  # v7's log, as a file's trim leaves it
    store = sqlite_store_module.SQLiteStore(path)
    try:
        assert store.schema_version() == CURRENT_VERSION
        assert_logged_from_v23(store)
    finally:
        store.close()


@pytest.mark.postgres
def test_postgres_v21_vectors_upgrade_to_the_logged_schema(pg_database: str) -> None:
    import psycopg

    from memoir.store import postgres_store as pgs

    with psycopg.connect(pg_database, autocommit=True) as conn:
        pgs.migrate(conn, target=1)
        with conn.transaction():
            fill_v1(lambda sql, p: conn.execute(sql, p), to_utc, "%s")
        assert pgs.migrate(conn, target=21) == 21
        conn.execute(
            "INSERT INTO embeddings (model, exchange_id, dim, vec) VALUES ('m', 's1:1', 2, %s)",
            (VECTOR,),
        )
        logged = conn.execute("SELECT count(*) FROM embedding_changes").fetchone()
        assert logged == (0,)  # before v23 PostgreSQL logged nothing
    store = pgs.PostgresStore(pg_database)
    try:
        assert store.schema_version() == CURRENT_VERSION
        assert_logged_from_v23(store)
    finally:
        store.close()


# --- a fresh database is created in one batch ------------------------------------------------
@pytest.mark.parametrize(
    ("current", "target", "batch"),
    [
        (0, None, True),
        (0, CURRENT_VERSION, True),
        (0, 1, False),  # an older version: one by one
        (0, CURRENT_VERSION - 1, False),
        (1, None, False),  # a schema already there: one by one
        (CURRENT_VERSION, None, False),
    ],
)
def test_only_a_database_without_schema_going_to_the_newest_is_created_in_one_batch(
    current: int, target: int | None, batch: bool
) -> None:
    assert fresh(current, target) is batch


def sqlite_schema(path: Path) -> tuple[list[tuple[str, ...]], list[tuple[int, str]]]:
    """Every schema object (type, name, table, SQL) and the recorded versions."""
    with sqlite_conn(path) as conn:
        objects = conn.execute(
            "SELECT type, name, tbl_name, coalesce(sql, '') FROM sqlite_master ORDER BY 1, 2"
        ).fetchall()
        versions = conn.execute("SELECT version, name FROM schema_version ORDER BY 1").fetchall()
    return objects, versions


def test_sqlite_a_fresh_database_gets_the_schema_the_migrations_build_one_by_one(
    tmp_path: Path,
) -> None:
    sqlite_store_module.SQLiteStore(tmp_path / "batch.db").close()
    sqlite_store_module.SQLiteStore(tmp_path / "steps.db", target_version=1).close()
    sqlite_store_module.SQLiteStore(tmp_path / "steps.db").close()  # v2 ... v23, one by one
    batch, steps = sqlite_schema(tmp_path / "batch.db"), sqlite_schema(tmp_path / "steps.db")
    assert batch == steps
    assert batch[1] == [(m.version, m.name) for m in MIGRATIONS]
    assert len(batch[0]) > 50


def test_sqlite_a_failed_batch_leaves_no_schema_and_the_next_open_creates_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "m.db"
    broken = Migration(CURRENT_VERSION + 1, "broken", ("CREATE TABLE t_ok (x)", "NOT SQL"), ())
    monkeypatch.setattr(sqlite_store_module, "pending", lambda v, t=None: [*MIGRATIONS, broken])
    with pytest.raises(MigrationError, match="broken"):
        sqlite_store_module.SQLiteStore(path)
    with sqlite_conn(path) as conn:
        names = {r[0] for r in conn.execute("SELECT name FROM sqlite_master")}
        assert names == {"schema_version"}
        assert conn.execute("SELECT count(*) FROM schema_version").fetchone() == (0,)
    monkeypatch.setattr(sqlite_store_module, "pending", pending)
    sqlite_store_module.SQLiteStore(path).close()
    assert sqlite_schema(path)[1] == [(m.version, m.name) for m in MIGRATIONS]


def test_sqlite_two_processes_creating_one_database_at_once_create_it_once(
    tmp_path: Path,
) -> None:
    """Four openers of one new file at once, 40 times over: each opens it, and the schema is
    made once. (Switching a new file to WAL, SQLite answers "database is locked" at once
    to an opener that races another: 4-7 races in 150 failed so before it was retried.)"""
    import threading

    for attempt in range(40):
        path = tmp_path / f"race-{attempt}.db"
        errors: list[BaseException] = []
        start = threading.Barrier(4)

        def open_it(
            path: Path = path, errors: list[BaseException] = errors, start: Any = start
        ) -> None:
            try:
                start.wait()
                sqlite_store_module.SQLiteStore(path).close()
            except BaseException as exc:
                errors.append(exc)

        threads = [threading.Thread(target=open_it) for _ in range(4)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert errors == [], attempt
        assert sqlite_schema(path)[1] == [(m.version, m.name) for m in MIGRATIONS]


# every object of the schema a connection's search_path names first, as text without it
_PG_CATALOG = """
SELECT 'column', c.table_name || '.' || c.column_name, concat_ws(' | ', c.data_type,
       c.is_nullable, c.column_default, c.is_generated, c.generation_expression)
  FROM information_schema.columns c WHERE c.table_schema = current_schema()
UNION ALL
SELECT 'index', indexname, replace(indexdef, current_schema() || '.', '')
  FROM pg_indexes WHERE schemaname = current_schema()
UNION ALL
SELECT 'constraint', r.relname || '.' || k.conname, pg_get_constraintdef(k.oid)
  FROM pg_constraint k JOIN pg_class r ON r.oid = k.conrelid
 WHERE r.relnamespace = current_schema()::regnamespace
UNION ALL
SELECT 'trigger', r.relname || '.' || t.tgname,
       replace(pg_get_triggerdef(t.oid), current_schema() || '.', '')
  FROM pg_trigger t JOIN pg_class r ON r.oid = t.tgrelid
 WHERE r.relnamespace = current_schema()::regnamespace AND NOT t.tgisinternal
UNION ALL
SELECT 'function', p.proname, p.prosrc
  FROM pg_proc p WHERE p.pronamespace = current_schema()::regnamespace
UNION ALL
SELECT 'relation', relname, relkind::text
  FROM pg_class WHERE relnamespace = current_schema()::regnamespace
ORDER BY 1, 2, 3
"""


def postgres_schema(url: str) -> tuple[list[tuple[str, ...]], list[tuple[int, str]]]:
    import psycopg

    with psycopg.connect(url) as conn:
        objects = conn.execute(_PG_CATALOG).fetchall()
        versions = conn.execute("SELECT version, name FROM schema_version ORDER BY 1").fetchall()
    return objects, versions


@pytest.mark.postgres
def test_postgres_a_fresh_database_gets_the_schema_the_migrations_build_one_by_one() -> None:
    from conftest import fresh_pg_schema
    from memoir.store import postgres_store as pgs

    with fresh_pg_schema() as batch_url, fresh_pg_schema() as steps_url:
        pgs.PostgresStore(batch_url).close()
        pgs.PostgresStore(steps_url, target_version=1).close()
        pgs.PostgresStore(steps_url).close()  # v2 ... v23, one by one
        batch, steps = postgres_schema(batch_url), postgres_schema(steps_url)
    assert batch == steps
    assert batch[1] == [(m.version, m.name) for m in MIGRATIONS]
    assert len([o for o in batch[0] if o[0] == "index"]) > 20


@pytest.mark.postgres
def test_postgres_a_failed_batch_leaves_no_schema_and_the_next_open_creates_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from conftest import fresh_pg_schema
    from memoir.store import postgres_store as pgs

    broken = Migration(CURRENT_VERSION + 1, "broken", (), ("CREATE TABLE t_ok (x int)", "NOT SQL"))
    monkeypatch.setattr(pgs, "pending", lambda v, t=None: [*MIGRATIONS, broken])
    with fresh_pg_schema() as url:
        with pytest.raises(MigrationError, match="broken"):
            pgs.PostgresStore(url)
        objects, versions = postgres_schema(url)
        assert versions == []
        assert {o[1] for o in objects if o[0] == "relation"} == {
            "schema_version",
            "schema_version_pkey",
        }
        monkeypatch.setattr(pgs, "pending", pending)
        pgs.PostgresStore(url).close()
        assert postgres_schema(url)[1] == [(m.version, m.name) for m in MIGRATIONS]
