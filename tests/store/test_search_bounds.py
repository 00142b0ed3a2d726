"""The cost bounds of full-text search: pure decisions (tables) and their effect on a
store (ranking window on both backends; ubiquitous terms and prefilters on SQLite)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from store_builders import T0, ingest

from memoir.store import SearchFilters, Store, postgres_search, sqlite_search
from memoir.store.index_doc import month_token, project_token
from memoir.store.search_text import ParsedQuery, Term, drop_ubiquitous, parse_query


def term(*words: str) -> Term:
    return Term(words=words, text=" ".join(words))


A, B, C = term("alpha"), term("beta"), term("gamma")


@pytest.mark.parametrize(
    ("groups", "fractions", "expected", "recency"),
    [
        (((A,), (B,)), {}, ((A,), (B,)), False),
        (((A,), (B,)), {A: 0.9}, ((B,),), False),
        (((A,), (B,)), {A: 0.3}, ((A,), (B,)), False),  # at the threshold: kept
        (((A, B), (C,)), {A: 0.9}, ((B,), (C,)), False),  # an OR group loses a member
        (((A, B),), {A: 0.9, B: 0.5}, ((A, B),), True),  # nothing left: recency
        (((A,),), {A: 1.0}, ((A,),), True),
    ],
)
def test_drop_ubiquitous(
    groups: tuple[tuple[Term, ...], ...],
    fractions: dict[Term, float],
    expected: tuple[tuple[Term, ...], ...],
    recency: bool,
) -> None:
    query = ParsedQuery(groups=groups, excluded=(C,))
    reduced, got_recency = drop_ubiquitous(query, fractions, 0.3)
    assert (reduced.groups, got_recency) == (expected, recency)
    assert reduced.excluded == (C,)


D = datetime(2024, 5, 20, tzinfo=UTC)


@pytest.mark.parametrize(
    ("filters", "expected"),
    [
        (SearchFilters(), None),
        (SearchFilters(session_id="s1", role="user"), None),
        (SearchFilters(project="web"), '{meta} : ("' + project_token("web") + '")'),
        (SearchFilters(harness="claude-code"), '{meta} : ("claude code")'),
        (SearchFilters(after=D), None),  # open ranges are not narrowed
        (
            SearchFilters(after=D, before=D + timedelta(days=20)),
            '{meta} : (("ym202405" OR "ym202406"))',
        ),
        (
            SearchFilters(
                after=datetime(2023, 12, 31, tzinfo=UTC), before=datetime(2024, 1, 1, tzinfo=UTC)
            ),
            '{meta} : (("ym202312"))',
        ),
        (SearchFilters(after=D, before=D + timedelta(days=800)), None),  # > MAX_MONTHS
        (
            SearchFilters(project="p", harness="codex", after=D, before=D + timedelta(days=1)),
            '{meta} : ("' + project_token("p") + '" AND "codex" AND ("ym202405"))',
        ),
    ],
)
def test_meta_prefilter(filters: SearchFilters, expected: str | None) -> None:
    assert sqlite_search.meta_prefilter(filters) == expected


def test_month_tokens_match_the_index() -> None:
    assert month_token(D) == "ym202405"


def test_ranking_window_ranks_only_the_most_recent_matches(
    store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    for i in range(5):
        ingest(
            store,
            f"s{i}",
            [("zebra " + "zebra " * (5 - i), "ok", None)],
            start=T0 + timedelta(days=i),
        )
    everything = [h.exchange_id for h in store.index.search("zebra", SearchFilters(), 10)]
    assert everything[0] == "s0:1" and len(everything) == 5  # most zebras ranks first
    module = sqlite_search if store.backend == "sqlite" else postgres_search
    monkeypatch.setattr(module, "RANK_WINDOW", 2)
    window = [h.exchange_id for h in store.index.search("zebra", SearchFilters(), 10)]
    assert sorted(window) == ["s3:1", "s4:1"]  # the two ingested last


@pytest.fixture
def big_sqlite(tmp_path, monkeypatch: pytest.MonkeyPatch):  # type: ignore[no-untyped-def]
    from memoir.store.sqlite_store import SQLiteStore

    monkeypatch.setattr(sqlite_search, "BIG_CORPUS", 1)
    monkeypatch.setattr(sqlite_search, "SAMPLE_ROWS", 10)
    store = SQLiteStore(tmp_path / "big.db")
    for i in range(10):
        extra = " kiwi" if i == 3 else ""
        ingest(
            store,
            f"s{i}",
            [(f"common words here{extra}", "reply", None)],
            start=T0 + timedelta(days=i),
        )
    yield store
    store.close()


def test_ubiquitous_terms_are_dropped_when_rarer_ones_remain(big_sqlite: Store) -> None:
    hits = big_sqlite.index.search("common kiwi", SearchFilters(), 10)
    assert [h.exchange_id for h in hits] == ["s3:1"]
    assert "\x02common\x03" in hits[0].snippet and "\x02kiwi\x03" in hits[0].snippet


def test_only_ubiquitous_terms_rank_by_recency(big_sqlite: Store) -> None:
    hits = big_sqlite.index.search("common", SearchFilters(), 3)
    assert [h.exchange_id for h in hits] == ["s9:1", "s8:1", "s7:1"]
    assert hits[0].score > hits[1].score > hits[2].score > 0


def test_session_filter_uses_the_rowid_span(big_sqlite: Store) -> None:
    assert [
        h.exchange_id for h in big_sqlite.index.search("reply", SearchFilters(session_id="s5"), 10)
    ] == ["s5:1"]
    assert big_sqlite.index.search("reply", SearchFilters(session_id="nope"), 10) == []


def test_parse_then_drop_keeps_phrases_distinct() -> None:
    parsed = parse_query('"common words" kiwi')
    phrase = parsed.groups[0][0]
    reduced, _ = drop_ubiquitous(parsed, {phrase: 0.99}, 0.3)
    assert [g[0].words for g in reduced.groups] == [("kiwi",)]
