"""Shared test fixtures: a temp home per test, a network guard, the store backends.

The network guard fails any test that connects anywhere but the loopback range or a Unix
socket. ``store`` is parametrized over SQLite and PostgreSQL (the latter when
MEMOIR_TEST_PG_URL is set, as ``make test`` does; each test gets a migrated schema with no
rows, one a test before it emptied or a new one, and ``pg_database`` a whole fresh database).
"""

from __future__ import annotations

import atexit
import contextlib
import ipaddress
import os
import socket
import urllib.parse
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from memoir import search as backfill
from memoir.config import Settings
from memoir.store.port import Store

# Embedding on write is off in the test process (a write embeds none of its exchanges):
# with the embeddings extra installed, every sync and append of every test would run
# MiniLM. tests/search/test_fresh_*.py turn it back on for what they test.
backfill.WRITE_MAX = 0

FIXTURES = Path(__file__).resolve().parent / "fixtures"
CLAUDE_FIXTURES = FIXTURES / "claude-code"

_real_connect = socket.socket.connect


def _guarded_connect(self: socket.socket, address: object) -> object:
    if self.family in (socket.AF_INET, socket.AF_INET6) and isinstance(address, tuple):
        host = str(address[0])
        try:
            ok = ipaddress.ip_address(host).is_loopback
        except ValueError:
            ok = host == "localhost"
        if not ok:
            raise RuntimeError(f"network guard: test tried to reach {host}")
    return _real_connect(self, address)  # type: ignore[arg-type]


@pytest.fixture(autouse=True)
def _network_guard(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(socket.socket, "connect", _guarded_connect)


@pytest.fixture(autouse=True)
def _clean_env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """No test sees the developer's own settings, keys or home."""
    for key in list(os.environ):
        if key.startswith(("MEMOIR_", "EPISODIC_MEMORY_")) and not key.startswith("MEMOIR_TEST_"):
            monkeypatch.delenv(key, raising=False)
    for key in ("OPENAI_API_KEY", "ANTHROPIC_API_KEY", "OPENAI_BASE_URL", "ANTHROPIC_BASE_URL"):
        monkeypatch.delenv(key, raising=False)
    monkeypatch.setenv("HOME", str(tmp_path / "user-home"))
    (tmp_path / "user-home").mkdir()


@pytest.fixture
def home(tmp_path: Path) -> Path:
    path = tmp_path / "memoir-home"
    path.mkdir()
    return path


@pytest.fixture
def settings(home: Path) -> Settings:
    return Settings.from_env({"MEMOIR_HOME": str(home)}, sources=())


@pytest.fixture
def claude_fixtures() -> Path:
    if not CLAUDE_FIXTURES.exists():
        pytest.skip("shared/fixtures not present")
    return CLAUDE_FIXTURES


def pg_url() -> str | None:
    return os.environ.get("MEMOIR_TEST_PG_URL")


def redis_url() -> str | None:
    return os.environ.get("MEMOIR_TEST_REDIS_URL")


@pytest.fixture
def anyio_backend() -> Iterator[str]:
    yield "asyncio"


# --- store backends (store engineer) ------------------------------------------------------
@contextlib.contextmanager
def fresh_pg_database() -> Iterator[str]:
    """A new, empty PostgreSQL database on the test cluster; dropped afterwards."""
    import psycopg

    admin_url = pg_url()
    if not admin_url:
        pytest.skip("MEMOIR_TEST_PG_URL is not set")
    name = f"memoir_t_{uuid.uuid4().hex[:16]}"
    with psycopg.connect(admin_url, autocommit=True) as admin:
        admin.execute(f'CREATE DATABASE "{name}"')
    parts = urllib.parse.urlsplit(admin_url)
    try:
        yield urllib.parse.urlunsplit(parts._replace(path=f"/{name}"))
    finally:
        with psycopg.connect(admin_url, autocommit=True) as admin:
            admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


@contextlib.contextmanager
def fresh_pg_schema() -> Iterator[str]:
    """A URL whose connections see only a new, empty schema (first on ``search_path``) of
    the test cluster's database: as isolated as a fresh database for everything Memoir
    does, and ~50x cheaper to create than CREATE DATABASE. Dropped afterwards."""
    import psycopg

    admin_url = pg_url()
    if not admin_url:
        pytest.skip("MEMOIR_TEST_PG_URL is not set")
    name = f"memoir_t_{uuid.uuid4().hex[:16]}"
    with psycopg.connect(admin_url, autocommit=True) as admin:
        admin.execute(f'CREATE SCHEMA "{name}"')
    try:
        yield _schema_url(admin_url, name)
    finally:
        _drop_schema(admin_url, name)


# A migrated schema emptied after its test serves the next one in this process: creating a
# schema, migrating it and dropping it cost ~0.25 s per test, about a fifth of the suite's
# time. Emptied is what a new one is (tests/store/test_recycled_schema.py checks it): every
# table but ``schema_version`` truncated and its sequences restarted. A schema whose tables
# are not exactly the migrated ones, or that cannot be emptied at once, is dropped instead.
_EMPTIED: list[str] = []
_TABLES: dict[str, frozenset[str]] = {}  # "tables": the migrated schema's tables


def _schema_url(admin_url: str, name: str) -> str:
    parts = urllib.parse.urlsplit(admin_url)
    query = [*urllib.parse.parse_qsl(parts.query), ("options", f"-c search_path={name}")]
    encoded = urllib.parse.urlencode(query, quote_via=urllib.parse.quote)
    return urllib.parse.urlunsplit(parts._replace(query=encoded))


def _drop_schema(admin_url: str, name: str) -> None:
    import psycopg

    with psycopg.connect(admin_url, autocommit=True) as admin:
        admin.execute(f'DROP SCHEMA IF EXISTS "{name}" CASCADE')


_EMPTIERS: dict[str, Any] = {}  # url -> this process's connection that empties that schema


def _emptier(url: str) -> Any:
    """This process's connection to the schema at ``url``, kept between tests (a new one
    starts a server process: a few ms of PostgreSQL's CPU per test)."""
    import psycopg

    conn = _EMPTIERS.get(url)
    if conn is None or conn.closed or conn.broken:
        conn = _EMPTIERS[url] = psycopg.connect(url, autocommit=True)
        conn.execute("SET lock_timeout = '2s'")
    return conn


def _forget_emptier(url: str) -> None:
    conn = _EMPTIERS.pop(url, None)
    if conn is not None:
        conn.close()


def _emptied(url: str) -> bool:
    """Empty the migrated schema at ``url`` for the next test; False when it is not one
    (or is still in use), so the caller drops it."""
    import psycopg

    from memoir.store.migrations import CURRENT_VERSION

    try:
        conn = _emptier(url)
        tables = frozenset(
            r[0]
            for r in conn.execute(
                "SELECT tablename FROM pg_tables WHERE schemaname = current_schema()"
            )
        )
        if "schema_version" not in tables:
            return False
        version = conn.execute("SELECT max(version) FROM schema_version").fetchone()
        if version != (CURRENT_VERSION,) or tables != _TABLES.setdefault("tables", tables):
            return False
        _empty(conn, tables - {"schema_version"})
        return True
    except psycopg.Error:
        _forget_emptier(url)
        return False


def _empty(conn: Any, tables: frozenset[str]) -> None:
    """Truncate the tables a test wrote to, drop the schema's statistics and put every
    sequence back at its start: what ``TRUNCATE <all> RESTART IDENTITY`` leaves. A table
    not written since its last truncation has no page (each TRUNCATE gives it new, empty
    files) and is left as it is: a test writes to a few of the ~30, and each TRUNCATE
    costs ~5 ms (new files for the table and its indexes), a tenth of the suite's
    PostgreSQL time when every table was truncated. ``CASCADE``: a written table that
    others reference (``sessions``, when a test made only a session) takes them along;
    without it the truncation failed and the schema was dropped, so the next test
    migrated a new one."""
    from psycopg import sql

    written = [
        str(name)
        for (name,) in conn.execute(
            "SELECT relname FROM (SELECT relname, oid FROM pg_class WHERE relkind = 'r' "
            "AND relnamespace = current_schema()::regnamespace OFFSET 0) mine "  # the fence:
            "WHERE pg_relation_size(oid) > 0 ORDER BY relname"  # sizes of this schema's only
        ).fetchall()
        if name in tables
    ]
    if written:
        names = sql.SQL(", ").join(sql.Identifier(t) for t in written)
        conn.execute(sql.SQL("TRUNCATE {} RESTART IDENTITY CASCADE").format(names))
    # and no statistics: a test that ran ANALYZE leaves none for the next one's plans
    conn.execute(
        "DELETE FROM pg_statistic WHERE starelid IN (SELECT oid FROM pg_class "
        "WHERE relnamespace = current_schema()::regnamespace)"
    )
    for name, start in conn.execute(  # one advanced by a statement that wrote no row
        "SELECT sequencename, start_value FROM pg_sequences "
        "WHERE schemaname = current_schema() AND last_value IS NOT NULL"
    ).fetchall():
        regclass = sql.Identifier(name).as_string(conn)  # the name quoted, as regclass reads it
        conn.execute("SELECT setval(%s::regclass, %s, false)", (regclass, start))


@contextlib.contextmanager
def migrated_pg_schema() -> Iterator[str]:
    """A URL whose connections see only a migrated schema with no rows (first on
    ``search_path``): one a test before this one emptied, or a new one. Emptied (or
    dropped) afterwards. For a schema with no tables at all, :func:`fresh_pg_schema`."""
    import psycopg

    admin_url = pg_url()
    if not admin_url:
        pytest.skip("MEMOIR_TEST_PG_URL is not set")
    if _EMPTIED:
        url = _EMPTIED.pop()
    else:
        name = f"memoir_t_{uuid.uuid4().hex[:16]}"
        with psycopg.connect(admin_url, autocommit=True) as admin:
            admin.execute(f'CREATE SCHEMA "{name}"')
        url = _schema_url(admin_url, name)
    done = False
    try:
        yield url
        done = True
    finally:
        if done and _emptied(url):
            _EMPTIED.append(url)
        else:
            _forget_emptier(url)
            _drop_schema(admin_url, _schema_of(url))


def _schema_of(url: str) -> str:
    options = dict(urllib.parse.parse_qsl(urllib.parse.urlsplit(url).query))["options"]
    return options.split("search_path=", 1)[1]


def pytest_sessionfinish(session: pytest.Session) -> None:
    admin_url = pg_url()
    while admin_url and _EMPTIED:
        url = _EMPTIED.pop()
        with contextlib.suppress(Exception):
            _forget_emptier(url)
            _drop_schema(admin_url, _schema_of(url))


@pytest.fixture
def pg_database() -> Iterator[str]:
    with fresh_pg_database() as url:
        yield url


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Store]:
    """A migrated, empty store on each backend (PostgreSQL: a migrated schema with no rows,
    :func:`migrated_pg_schema`)."""
    with fresh_store(request.param, tmp_path / "store.db") as made:
        yield made


_SQLITE_TEMPLATE: list[Path] = []  # this process's migrated, empty SQLite file


def _copy_migrated_sqlite(path: Path) -> None:
    """Put a copy of a migrated, empty SQLite database at ``path`` (owner-only, as Memoir
    creates one): migrating a new file runs ~180 statements (~20 ms), paid once per
    process instead of once per test. Opening the copy migrates nothing; creating and
    migrating a new file is what tests/store/test_migrations.py tests."""
    import shutil
    import tempfile

    from memoir.store.sqlite_store import SQLiteStore

    if not _SQLITE_TEMPLATE:
        made = Path(tempfile.mkdtemp(prefix="memoir-template-")) / "store.db"
        SQLiteStore(made).close()  # closed: checkpointed into the one file
        assert not made.with_name("store.db-wal").exists(), "the template is one file"
        atexit.register(shutil.rmtree, made.parent, True)
        _SQLITE_TEMPLATE.append(made)
    path.parent.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(_SQLITE_TEMPLATE[0], path)
    path.chmod(0o600)


@contextlib.contextmanager
def fresh_store(backend: str, sqlite_path: Path) -> Iterator[Store]:
    """A migrated, empty store of ``backend``: SQLite at ``sqlite_path``, or PostgreSQL in
    a migrated schema with no rows (:func:`migrated_pg_schema`). Closed afterwards."""
    if backend == "sqlite":
        from memoir.store.sqlite_store import SQLiteStore

        _copy_migrated_sqlite(sqlite_path)
        made: Store = SQLiteStore(sqlite_path)
        try:
            yield made
        finally:
            made.close()
        return
    from memoir.store.postgres_store import PostgresStore

    with migrated_pg_schema() as url:
        made = PostgresStore(url)
        try:
            yield made
        finally:
            made.close()
