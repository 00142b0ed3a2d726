"""PostgreSQL writes (issue 37): an append costs a fixed handful of round trips whatever
its size, and migration v18 (index documents folded in Python, not by the generated
column) leaves every tsvector as it was."""

from __future__ import annotations

import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from pg_round_trips import count_round_trips
from store_builders import ingest

from conftest import fresh_pg_schema, pg_url
from memoir import service
from memoir.app import Memoir
from memoir.store import SearchFilters
from memoir.store.db import fold_index_text

pytestmark = pytest.mark.postgres

ROUND_TRIPS = 4  # 3 today: the transaction's (a quiet pooled connection is not checked); one spare


def _messages(tag: str, n: int, start: int = 0) -> list[dict[str, Any]]:
    return [
        {
            "role": "user" if i % 2 == 0 else "assistant",
            "content": f"{tag} message {i}: the deploy checklist for staging, step {i}",
            "id": f"{tag}-{i}",
        }
        for i in range(start, start + n)
    ]


@pytest.fixture
def memoir(tmp_path: Path) -> Iterator[Memoir]:
    with fresh_pg_schema() as url:
        made = Memoir.at(tmp_path / "home", llm="offline", database_url=url)
        try:
            yield made
        finally:
            made.close()


def test_an_append_costs_a_fixed_number_of_round_trips(memoir: Memoir) -> None:
    service.create_session(memoir, "ann", session_id="s")
    service.append_messages(memoir, "ann", "s", _messages("s", 20))  # a session with a past
    with count_round_trips() as twenty:
        assert service.append_messages(memoir, "ann", "s", _messages("s", 20, 20)) == (20, 0)
    with count_round_trips() as hundred:
        assert service.append_messages(memoir, "ann", "s", _messages("s", 100, 40)) == (100, 0)
    with count_round_trips() as retried:  # every id stored already: nothing written
        assert service.append_messages(memoir, "ann", "s", _messages("s", 20, 20)) == (0, 20)
    assert 0 < twenty.count <= ROUND_TRIPS, twenty.lines()
    assert hundred.count == twenty.count  # not one per message, row or exchange
    assert 0 < retried.count <= twenty.count
    sid = service.user_session(memoir, "ann", "s").id  # the id ann's "s" is stored under
    stored = memoir.store.events.of(sid)
    assert [e.ordinal for e in stored] == list(range(1, 141))
    assert memoir.store.api.message_ids(sid)["s-139"] == 140
    exchanges = memoir.store.exchanges.of(sid)
    assert len(exchanges) == 70 and exchanges[28].user_text.startswith("s message 56:")
    hits = memoir.store.index.search("step 56", SearchFilters(), 3)
    assert hits and hits[0].exchange_id == exchanges[28].id


@pytest.mark.parametrize(
    ("text", "folded"),
    [
        ("app.py's config_file", "app py s config file"),
        ("Café résumé — naïve über", "Cafe resume — naive uber"),  # the dash is not ASCII
        ("Ça (coûte) 5€!", "Ca  coute  5€ "),
        ("日本語のテキスト", "日本語のテキスト"),
        ("", ""),
    ],
)
def test_fold_index_text(text: str, folded: str) -> None:
    assert fold_index_text(text) == folded
    assert fold_index_text(folded) == folded  # idempotent: an older column reads it alike


TURNS = [
    ("Le café de José: résumé of app.py's config_file", "Über-naïve answer (ñandú) §3.", None),
    ("where's the deploy-checklist?", "In docs/deploy.md — see «staging»", "Bash"),
    ("Ærø and straße stay", "OK: done.", None),
]


def _tsvectors(store: Any) -> dict[str, tuple[str, ...]]:
    """Each exchange's tsvector (but for its owner's lexeme, which v22 added) and its
    documents."""
    with store._db.read() as conn:
        rows = conn.execute(
            "SELECT x.id, ts_delete(d.tsv, '#local'::text)::text, d.user_doc, "
            "d.assistant_doc, d.tools_doc, d.meta_doc, d.context_doc "
            "FROM exchange_search d JOIN exchanges x ON x.pk = d.exchange_pk"
        ).fetchall()
    return {r[0]: tuple(r[1:]) for r in rows}


def test_v18_keeps_every_tsvector(monkeypatch: pytest.MonkeyPatch) -> None:
    from memoir.store import postgres_search
    from memoir.store.postgres_store import PostgresStore

    with fresh_pg_schema() as old_url, fresh_pg_schema() as new_url:
        # at v17, written as Memoir wrote before v18: documents unfolded, the column folds
        with monkeypatch.context() as m:
            m.setattr(postgres_search, "fold_index_text", lambda text: text)
            old = PostgresStore(old_url, target_version=17)
            ingest(old, "s1", TURNS)
            before = _tsvectors(old)
            old.close()
        assert any("'" in docs[1] or "." in docs[1] for docs in before.values())
        migrated = PostgresStore(old_url)
        fresh = PostgresStore(new_url)
        try:
            ingest(fresh, "s1", TURNS)
            after, written = _tsvectors(migrated), _tsvectors(fresh)
            assert set(after) == set(before) == set(written) and len(after) == 3
            with migrated._db.read() as conn:
                owners = conn.execute("SELECT DISTINCT owner_doc FROM exchange_search")
                assert owners.fetchall() == [("local",)]
            for xid, (tsv, *docs) in after.items():
                assert tsv == before[xid][0] == written[xid][0]
                assert docs == [fold_index_text(d) for d in before[xid][1:]]
                assert docs == list(written[xid][1:])
            for store in (migrated, fresh):
                for query in ("cafe", "José", "resume", "config_file", "nandu", "straße"):
                    assert store.index.search(query, SearchFilters(), 3), query
                assert not store.index.search("cafe -resume", SearchFilters(), 3)
        finally:
            migrated.close()
            fresh.close()


def test_index_rows_written_by_appends_equal_a_rebuild(memoir: Memoir) -> None:
    """An append reads its index span before writing its exchanges (one wait less); what
    it writes is what a rebuild of the whole index writes, whether the span read ahead is
    used (a tail append, an open exchange completed) or not (ids sent again are skipped:
    the batch's span is what is new)."""
    sid = service.create_session(memoir, "ann", session_id="s")[0].id  # stored under a digest
    batches = [
        _messages("s", 20),  # ten exchanges
        _messages("s", 1, 20),  # a user message alone: an open exchange
        _messages("s", 7, 21),  # completes it, and more: the read ahead is used
        _messages("s", 6, 26),  # two sent again (skipped), two exchanges after them
    ]
    for batch in batches:
        service.append_messages(memoir, "ann", "s", batch)
    appended = _tsvectors(memoir.store)
    assert len(appended) == 16
    assert memoir.store.index.repair() == 16
    rebuilt = _tsvectors(memoir.store)
    assert appended == rebuilt
    assert any("message 21" in docs[5] for docs in rebuilt.values())  # context of a neighbour
    hits = memoir.store.index.search("step 27", SearchFilters(), 3)
    assert hits and hits[0].exchange_id == f"{sid}:27"


def test_a_sync_batch_whose_first_exchanges_are_stored_alike_reads_its_span_again() -> None:
    """A transcript synced again with two turns more: its first exchanges are stored alike,
    so the changed span starts after the one read ahead, and is read after the writes; the
    rows written equal a rebuild's."""
    from memoir.store.postgres_store import PostgresStore

    turns = [(f"question {i} about the staging deploy", f"answer {i}", None) for i in range(5)]
    with fresh_pg_schema() as url:
        store = PostgresStore(url)
        try:
            ingest(store, "s1", turns[:3])
            ingest(store, "s1", turns)
            written = _tsvectors(store)
            assert len(written) == 5
            assert store.index.repair() == 5
            assert _tsvectors(store) == written
            assert any("question 3" in docs[5] for docs in written.values())  # a context
        finally:
            store.close()


def test_an_append_whose_connection_the_server_ended_runs_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An append takes its pooled connection without a round trip to check it when the
    socket is quiet. A connection the server ended too recently for its socket to show it
    (here: every socket reported quiet) fails at the append's first read, before anything
    was done; the append then runs once more on a live connection: stored once, in order."""
    import psycopg

    from memoir.store import postgres_store

    tag = f"memoir-stale-{uuid.uuid4().hex[:8]}"
    with fresh_pg_schema() as url:
        made = Memoir.at(
            tmp_path / "home", llm="offline", database_url=f"{url}&application_name={tag}"
        )
        try:
            service.create_session(made, "ann", session_id="s")
            assert service.append_messages(made, "ann", "s", _messages("s", 4)) == (4, 0)
            stale: list[bool] = []
            real_stale = postgres_store._stale

            def spied(*args: Any) -> bool:
                stale.append(real_stale(*args))
                return stale[-1]

            monkeypatch.setattr(postgres_store, "_stale", spied)
            monkeypatch.setattr(postgres_store, "_quiet", lambda conn: True)
            admin_url = pg_url()
            assert admin_url is not None
            with psycopg.connect(admin_url, autocommit=True) as admin:
                sql = "FROM pg_stat_activity WHERE application_name = %s"
                killed = admin.execute(
                    f"SELECT count(pg_terminate_backend(pid)) {sql}", (tag,)
                ).fetchone()
                assert killed is not None and killed[0] >= 1
                deadline = time.monotonic() + 10
                while admin.execute(f"SELECT count(*) {sql}", (tag,)).fetchone() != (0,):
                    assert time.monotonic() < deadline, "the ended sessions did not go"
                    time.sleep(0.01)
            assert service.append_messages(made, "ann", "s", _messages("s", 4, 4)) == (4, 0)
            assert stale == [True]  # the first try found it ended; the second ran
            sid = service.user_session(made, "ann", "s").id
            assert [e.ordinal for e in made.store.events.of(sid)] == list(range(1, 9))
            assert made.store.api.message_ids(sid) == {f"s-{i}": i + 1 for i in range(8)}
        finally:
            made.close()
