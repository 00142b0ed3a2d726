"""One filter, two readings: the SQL :func:`~memoir.store.search_sql.filter_sql` renders
(run on every backend the ``store`` fixture provides) keeps exactly the exchanges the
Python predicate vector candidates go through keeps, case by case — and the session list
(``store.sessions.ids``) the sessions of those, dates aside. The role is read differently
by design (text: words in that column; meaning: the exchange has that part), so it is in
the predicate's own table (``test_search_pure.test_vector_filter_table``), not here."""

from __future__ import annotations

from dataclasses import replace
from datetime import timedelta

import pytest
from search_corpus import T0, fill

from memoir.model import Author, Event, EventKind, Harness, Session, build_exchanges
from memoir.search import SearchFilters, matches_filters
from memoir.store import IngestBatch, Store
from memoir.store.db import POSTGRES, SQLITE
from memoir.store.search_sql import filter_sql

DAY = timedelta(days=1)
# each case: the filters and the sessions whose exchanges pass them (search_corpus: s-web
# web/claude-code day 0, s-sub its subagent day 1, s-api api/codex day 45, s-cjk
# notes/generic day 60; and one undated session, s-undated, web/claude-code)
CASES: list[tuple[SearchFilters, set[str]]] = [
    (SearchFilters(), {"s-web", "s-api", "s-cjk", "s-undated"}),
    (SearchFilters(include_subagents=True), {"s-web", "s-sub", "s-api", "s-cjk", "s-undated"}),
    (SearchFilters(project="web"), {"s-web", "s-undated"}),
    (SearchFilters(project="web", include_subagents=True), {"s-web", "s-sub", "s-undated"}),
    (SearchFilters(project="nowhere"), set()),
    (SearchFilters(harness="codex"), {"s-api"}),
    (
        SearchFilters(harness="claude-code", include_subagents=True),
        {"s-web", "s-sub", "s-undated"},
    ),
    (SearchFilters(session_id="s-web"), {"s-web"}),
    (SearchFilters(session_id="s-sub"), set()),  # a subagent's, left out by default
    (SearchFilters(session_id="s-sub", include_subagents=True), {"s-sub"}),
    (SearchFilters(after=T0 + DAY), {"s-api", "s-cjk"}),
    (SearchFilters(before=T0 + DAY), {"s-web"}),
    (
        SearchFilters(after=T0, before=T0 + 46 * DAY, include_subagents=True),
        {"s-web", "s-sub", "s-api"},
    ),
    (SearchFilters(after=T0 + 100 * DAY), set()),
    (SearchFilters(project="web", after=T0 - DAY), {"s-web"}),  # undated: no time to pass
    (SearchFilters(project="api", harness="codex", before=T0 + 50 * DAY), {"s-api"}),
    (SearchFilters(project="api", harness="generic"), set()),
]


@pytest.fixture
def corpus(store: Store) -> Store:
    fill(store)
    events = [
        Event("s-undated", 1, EventKind.USER_TEXT, Author.USER, "when was this?"),
        Event("s-undated", 2, EventKind.ASSISTANT_TEXT, Author.ASSISTANT, "nobody knows"),
    ]
    session = Session(id="s-undated", project="web", harness=Harness.CLAUDE_CODE)
    store.ingest.apply(
        IngestBatch(session=session, events=tuple(events), exchanges=tuple(build_exchanges(events)))
    )
    return store


def _by_sql(store: Store, filters: SearchFilters) -> set[str]:
    dialect = SQLITE if store.backend == "sqlite" else POSTGRES
    where, params = filter_sql(filters, dialect)
    sql = f"SELECT e.id FROM exchanges e JOIN sessions s ON s.id = e.session_id WHERE 1 = 1{where}"
    with store._db.read() as conn:  # type: ignore[attr-defined]  # the backend's own driver
        return {str(row[0]) for row in conn.execute(sql, params).fetchall()}


def _by_python(store: Store, filters: SearchFilters) -> set[str]:
    out = set()
    for info in store.sessions.recent():
        session = store.sessions.get(info.session.id)
        for exchange in store.exchanges.of(info.session.id):
            if matches_filters(exchange, session, filters):
                out.add(exchange.id)
    return out


@pytest.mark.parametrize(("filters", "sessions"), CASES)
def test_sql_and_python_keep_the_same_exchanges(
    corpus: Store, filters: SearchFilters, sessions: set[str]
) -> None:
    kept = _by_python(corpus, filters)
    assert {i.rpartition(":")[0] for i in kept} == sessions
    assert _by_sql(corpus, filters) == kept
    dateless = replace(filters, after=None, before=None)  # the session list reads no dates
    assert set(corpus.sessions.ids(filters)) == {
        i.rpartition(":")[0] for i in _by_python(corpus, dateless)
    }


def test_an_unstored_session_passes_nothing(corpus: Store) -> None:
    exchange = corpus.exchanges.of("s-web")[0]
    assert not matches_filters(exchange, None, SearchFilters(include_subagents=True))
