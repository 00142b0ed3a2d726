"""PostgreSQL reads (issue 37): a one-statement read costs one round trip on a quiet pooled
connection (no check of its own first). A read whose connection the server ended too
recently to show it fails as a read in flight in a restart does (a clear store error, a
503 over HTTP), and the pool is checked then, so the next read finds a live connection."""

from __future__ import annotations

import time
import uuid
from pathlib import Path
from typing import Any

import psycopg
import pytest
from pg_round_trips import count_round_trips

from conftest import fresh_pg_schema, pg_url
from memoir import service
from memoir.app import Memoir
from memoir.errors import StoreError
from memoir.store import postgres_store

pytestmark = pytest.mark.postgres


def _end_sessions(tag: str) -> None:
    """Terminate the server sessions of every connection named ``tag``; wait until gone."""
    admin_url = pg_url()
    assert admin_url is not None
    with psycopg.connect(admin_url, autocommit=True) as admin:
        sql = "FROM pg_stat_activity WHERE application_name = %s"
        killed = admin.execute(f"SELECT count(pg_terminate_backend(pid)) {sql}", (tag,)).fetchone()
        assert killed is not None and killed[0] >= 1
        deadline = time.monotonic() + 10
        while admin.execute(f"SELECT count(*) {sql}", (tag,)).fetchone() != (0,):
            assert time.monotonic() < deadline, "the ended sessions did not go"
            time.sleep(0.01)


def test_a_key_lookup_and_a_summary_poll_cost_one_round_trip_each(tmp_path: Path) -> None:
    with fresh_pg_schema() as url:
        made = Memoir.at(tmp_path / "home", llm="offline", database_url=url)
        try:
            key = made.store.users.add("ann")
            digest = service.key_hash(key)
            service.create_session(made, "ann", session_id="s")
            sid = service.user_session(made, "ann", "s").id
            assert service.user_for_key_hash(made, digest) == "ann"  # the pool is warm
            with count_round_trips() as lookup:
                assert service.user_for_key_hash(made, digest) == "ann"
            with count_round_trips() as unknown:
                assert service.user_for_key_hash(made, service.key_hash("mk_nobody")) is None
            with count_round_trips() as poll:
                polled = service.session_summary(made, sid, key_hash=digest)
            assert polled is not None
            assert lookup.count == 1, lookup.lines()
            assert unknown.count == 1, unknown.lines()
            assert poll.count == 1, poll.lines()
        finally:
            made.close()


def test_a_read_on_a_connection_the_server_just_ended_fails_clearly_then_reads_go_on(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    tag = f"memoir-stale-read-{uuid.uuid4().hex[:8]}"
    with fresh_pg_schema() as url:
        made = Memoir.at(
            tmp_path / "home", llm="offline", database_url=f"{url}&application_name={tag}"
        )
        try:
            key = made.store.users.add("ann")
            digest = service.key_hash(key)
            assert service.user_for_key_hash(made, digest) == "ann"
            checked: list[Any] = []
            real_check = postgres_store.ConnectionPool.check

            def spied(pool: Any, *args: Any, **kwargs: Any) -> Any:
                checked.append(pool)
                return real_check(pool, *args, **kwargs)

            # every socket reported quiet: the ended connection is handed out unchecked
            monkeypatch.setattr(postgres_store, "_quiet", lambda conn: True)
            monkeypatch.setattr(postgres_store.ConnectionPool, "check", spied)
            _end_sessions(tag)
            with pytest.raises(StoreError) as failed:
                service.user_for_key_hash(made, digest)
            assert str(failed.value).startswith("postgres: the database server is restarting")
            assert len(checked) == 1  # the pool's other connections checked at once
            assert service.user_for_key_hash(made, digest) == "ann"  # a live one now
            assert service.user_for_key_hash(made, digest) == "ann"
            assert len(checked) == 1
        finally:
            made.close()
