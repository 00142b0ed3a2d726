"""open_store: backend choice from the settings, SQLite pragmas, clear one-line errors."""

from __future__ import annotations

import os
import sqlite3
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from pathlib import Path

import pytest

from memoir.config import Settings
from memoir.errors import ConfigError, StoreError
from memoir.store import is_postgres_url, open_store
from memoir.store.migrations import CURRENT_VERSION


def test_default_is_sqlite_under_home_in_wal_mode(settings: Settings) -> None:
    store = open_store(settings)
    try:
        assert store.backend == "sqlite"
        assert store.schema_version() == CURRENT_VERSION
        assert settings.sqlite_path.exists()
        with store._reading() as conn:  # type: ignore[attr-defined]
            assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
            assert conn.execute("PRAGMA foreign_keys").fetchone()[0] == 1
            assert conn.execute("PRAGMA synchronous").fetchone()[0] == 1  # NORMAL
            assert conn.execute("PRAGMA busy_timeout").fetchone()[0] >= 5000
    finally:
        store.close()


def test_sqlite_url_names_the_file(home: Path) -> None:
    target = home / "elsewhere" / "x.db"
    store = open_store(Settings.from_env({}, home=home, database_url=f"sqlite:///{target}"))
    store.close()
    assert target.exists() and not (home / "memoir.db").exists()


@pytest.mark.parametrize(
    ("url", "expected"),
    [
        ("postgresql://u@h/db", True),
        ("postgres://u@h/db", True),
        ("  POSTGRESQL://u@h/db", True),
        ("sqlite:///x.db", False),
        ("mysql://h/db", False),
        (None, False),
        ("", False),
    ],
)
def test_is_postgres_url(url: str | None, expected: bool) -> None:
    assert is_postgres_url(url) is expected


@pytest.mark.parametrize("url", ["mysql://u:secret@h/db", "postgressql://h/db", "memoir.db"])
def test_unknown_url_is_a_config_error_without_secrets(home: Path, url: str) -> None:
    with pytest.raises(ConfigError) as info:
        open_store(Settings.from_env({}, home=home, database_url=url))
    assert "secret" not in str(info.value) and "\n" not in str(info.value)


def test_unreachable_postgres_is_one_clear_line(home: Path) -> None:
    url = "postgresql://memoir:hunter2@127.0.0.1:1/nowhere?connect_timeout=2"
    with pytest.raises(StoreError) as info:
        open_store(Settings.from_env({}, home=home, database_url=url))
    message = str(info.value)
    assert message.startswith("cannot open PostgreSQL at postgresql://memoir:***@127.0.0.1:1")
    assert "hunter2" not in message and "\n" not in message


def test_sqlite_file_that_is_not_a_database(home: Path) -> None:
    bad = home / "memoir.db"
    bad.write_bytes(b"this is not a database" * 100)
    with pytest.raises(StoreError, match="cannot open the SQLite database"):
        open_store(Settings.from_env({}, home=home))


def test_closed_store_refuses_work(settings: Settings) -> None:
    store = open_store(settings)
    store.close()
    with pytest.raises(StoreError, match="closed"):
        store.stats()


@pytest.mark.postgres
def test_postgres_url_opens_postgres(home: Path, pg_database: str) -> None:
    store = open_store(Settings.from_env({}, home=home, database_url=pg_database))
    try:
        assert store.backend == "postgres"
        assert store.schema_version() == CURRENT_VERSION
    finally:
        store.close()


def test_sqlite_is_a_real_file_other_processes_can_read(settings: Settings) -> None:
    store = open_store(settings)
    store.close()
    conn = sqlite3.connect(settings.sqlite_path)
    try:
        tables = {r[0] for r in conn.execute("SELECT name FROM sqlite_master")}
    finally:
        conn.close()
    assert {"sessions", "events", "exchanges", "exchange_fts", "schema_version"} <= tables
    assert os.path.getsize(settings.sqlite_path) > 0


@pytest.mark.postgres
def test_postgres_connections_the_server_dropped_are_replaced() -> None:
    """After a server restart every pooled connection is dead; each call must get a live
    one instead of failing once per pooled connection."""
    import uuid

    import psycopg

    from conftest import fresh_pg_schema, pg_url
    from memoir.store.postgres_store import PostgresStore

    tag = f"memoir-drop-{uuid.uuid4().hex[:8]}"
    with fresh_pg_schema() as url:
        store = PostgresStore(f"{url}&application_name={tag}", max_connections=4)
        try:
            store.stats()
            with ThreadPoolExecutor(4) as pool:  # open several pooled connections
                list(pool.map(lambda _: store.stats(), range(8)))
            with psycopg.connect(pg_url(), autocommit=True) as admin:
                killed = admin.execute(
                    "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity "
                    "WHERE application_name = %s",
                    (tag,),
                ).fetchone()
            assert killed is not None and killed[0] >= 1
            assert [store.stats()["sessions"] for _ in range(6)] == [0] * 6
        finally:
            store.close()


@pytest.mark.postgres
@pytest.mark.parametrize(("given", "shown"), [("2.5", "2500ms"), ("0", "0")])
def test_postgres_pool_settings_reach_every_pooled_connection(
    home: Path, given: str, shown: str
) -> None:
    """MEMOIR_PG_STATEMENT_TIMEOUT_S is each pooled connection's statement_timeout (0: none),
    and the URL's own options (the schema's search_path) are kept beside it."""
    from conftest import fresh_pg_schema

    with fresh_pg_schema() as url:
        env = {
            "MEMOIR_HOME": str(home),
            "MEMOIR_DATABASE_URL": url,
            "MEMOIR_PG_POOL_SIZE": "3",
            "MEMOIR_PG_STATEMENT_TIMEOUT_S": given,
        }
        store = open_store(Settings.from_env(env, sources=()))
        try:
            assert store._pool.max_size == 3  # type: ignore[attr-defined]
            with ThreadPoolExecutor(3) as pool:  # every connection of the pool, at once

                def show(_: int) -> tuple[str, str]:
                    with store._reading() as conn:  # type: ignore[attr-defined]
                        row = conn.execute(
                            "SELECT current_setting('statement_timeout'), current_schema()"
                        ).fetchone()
                        time.sleep(0.2)
                        return str(row[0]), str(row[1])

                seen = list(pool.map(show, range(3)))
            assert {timeout for timeout, _ in seen} == {shown}
            assert {schema for _, schema in seen} == {url.rsplit("search_path%3D", 1)[1]}
        finally:
            store.close()


def test_ctrl_c_just_after_commit_keeps_the_write_and_stays_ctrl_c(settings: Settings) -> None:
    """KeyboardInterrupt can arrive between COMMIT and the end of the block: the write is
    kept and the interrupt goes on as itself (not as "cannot rollback")."""
    store = open_store(settings)
    with store._reading() as conn:  # type: ignore[attr-defined]
        pass
    real_use = store._use  # type: ignore[attr-defined]

    class InterruptAfterCommit:
        @property
        def in_transaction(self) -> bool:
            return conn.in_transaction

        def execute(self, sql: str, *args: object) -> object:
            out = conn.execute(sql, *args)
            if sql == "COMMIT":
                raise KeyboardInterrupt
            return out

    @contextmanager
    def use() -> Iterator[InterruptAfterCommit]:
        with real_use():
            yield InterruptAfterCommit()

    store._use = use  # type: ignore[attr-defined]
    with pytest.raises(KeyboardInterrupt), store._write() as c:  # type: ignore[attr-defined]
        c.execute("CREATE TABLE kept (x INTEGER)")
    assert not conn.in_transaction
    assert conn.execute("SELECT count(*) FROM kept").fetchone() == (0,)
    store.close()
