"""The shared search suite: runs on every backend the ``store`` fixture provides."""

from __future__ import annotations

from datetime import timedelta

import numpy as np
import pytest
from search_corpus import CONVERSATIONS, HOSTILE, T0, fill

from memoir import service
from memoir.app import Memoir
from memoir.errors import ConfigError
from memoir.model import Author, Event, EventKind, Harness, Session, build_exchanges
from memoir.search import (
    HashEmbedder,
    SearchFilters,
    embed_backlog,
    engine,
    matches_filters,
    search,
)
from memoir.search.embedders import load_embedder, minilm_available
from memoir.search.ranking import unpack_tokens
from memoir.search.vectors import invalidate
from memoir.store import IngestBatch, Store


@pytest.fixture
def filled(store: Store) -> Store:
    fill(store)
    invalidate()
    return store


def ids(hits: list) -> list[str]:
    return [h.exchange_id for h in hits]


def test_text_search_finds_and_marks(filled: Store) -> None:
    hits = search(filled, "sqlite lock", mode="text")
    assert hits and hits[0].session_id == "s-web"
    assert hits[0].exchange_id == "s-web:1"
    assert "\x02" in hits[0].snippet and "\x03" in hits[0].snippet
    assert hits[0].project == "web"
    assert hits[0].timestamp is not None and hits[0].timestamp.date() == T0.date()
    assert "s-sub:1" not in ids(hits)  # subagents are excluded by default


def test_text_search_orders_by_relevance_and_limits(filled: Store) -> None:
    hits = search(filled, "dark mode toggle", mode="text", limit=1)
    assert ids(hits) == ["s-web:6"]


@pytest.mark.parametrize("query", HOSTILE)
@pytest.mark.parametrize("mode", ["text", "vector", "hybrid"])
def test_hostile_queries_never_fail(filled: Store, query: str, mode: str) -> None:
    embedder = HashEmbedder()
    embed_backlog(filled, embedder)
    hits = search(filled, query, mode=mode, embedder=embedder)
    assert isinstance(hits, list)
    assert all(h.snippet.count("\x02") == h.snippet.count("\x03") for h in hits)
    # the store is intact afterwards
    assert search(filled, "dark mode", mode="text")[0].exchange_id == "s-web:6"


@pytest.mark.parametrize("mode", ["text", "vector", "hybrid"])
@pytest.mark.parametrize(
    "query", ["", " \t ", '"', "*", "-- ;", "()", '"" * -', "-lock", "NOT sqlite", "-a -b"]
)
def test_a_query_with_nothing_to_look_for_returns_nothing(
    filled: Store, query: str, mode: str
) -> None:
    # vector search would rank the exchanges nearest to punctuation: noise, not hits
    embedder = HashEmbedder()
    embed_backlog(filled, embedder)
    assert search(filled, query, mode=mode, embedder=embedder) == []
    assert search(filled, query + " dark mode", mode=mode, embedder=embedder)  # words count


def test_stop_words_alone_are_a_question_for_meaning_search_only(filled: Store) -> None:
    embedder = HashEmbedder()
    embed_backlog(filled, embedder)
    assert search(filled, "the of", mode="text") == []
    assert search(filled, "When was it?", mode="vector", embedder=embedder)


def _own_words(store: Store, exchange_id: str) -> tuple[str, ...]:
    x = store.exchanges.many([exchange_id])[exchange_id]
    return engine.words_of(f"{x.user_text} {x.assistant_text}")


@pytest.mark.parametrize("mode", ["text", "vector", "hybrid"])
def test_excluded_words_hold_in_every_mode(filled: Store, mode: str) -> None:
    embedder = HashEmbedder()
    embed_backlog(filled, embedder)
    for query in ("lock -sqlite", "lock NOT sqlite"):
        hits = search(filled, query, mode=mode, embedder=embedder, limit=50)
        assert "s-web:4" in ids(hits), query  # "the lock is gone"
        assert all("sqlite" not in _own_words(filled, h.exchange_id) for h in hits)
        assert all("\x02sqlite" not in h.snippet.lower() for h in hits)
    # the same words without the exclusion find the sqlite lock exchange
    assert "s-web:1" in ids(search(filled, "lock sqlite", mode=mode, embedder=embedder))


def test_sql_fragment_is_searched_as_words(filled: Store) -> None:
    hits = search(filled, "DROP TABLE exchanges; settings page --", mode="text")
    assert "s-web:6" in ids(hits)


def test_cjk_query_finds_cjk_text(filled: Store) -> None:
    hits = search(filled, "数据库", mode="text")
    assert ids(hits) == ["s-cjk:1"]


@pytest.mark.parametrize(
    ("query", "snippet"),
    [
        ("模式", "数据库锁的问题怎么解决 使用 WAL \x02模式\x03。"),  # no space before 。
        ("WAL模式", "数据库锁的问题怎么解决 使用 \x02WAL\x03 \x02模式\x03。"),
        ("数据库", "\x02数据库\x03锁的问题怎么解决 使用 WAL 模式。"),
    ],
)
def test_cjk_hits_show_the_exchange_text_as_written(
    filled: Store, query: str, snippet: str
) -> None:
    [hit] = search(filled, query, mode="text")
    assert hit.exchange_id == "s-cjk:1"
    assert hit.snippet == snippet
    assert hit.to_json()["snippet"] == "数据库锁的问题怎么解决 使用 WAL 模式。"


@pytest.mark.parametrize(
    ("filters", "expected_sessions"),
    [
        (SearchFilters(), {"s-web"}),
        (SearchFilters(include_subagents=True), {"s-web", "s-sub"}),
        (SearchFilters(project="api"), set()),
        (SearchFilters(project="web", include_subagents=True), {"s-web", "s-sub"}),
        (SearchFilters(session_id="s-sub", include_subagents=True), {"s-sub"}),
        (SearchFilters(harness="codex"), set()),
        (SearchFilters(harness="claude-code"), {"s-web"}),
        (SearchFilters(role="tool"), {"s-web"}),
        (SearchFilters(after=T0 + timedelta(days=1), include_subagents=True), {"s-sub"}),
        (SearchFilters(before=T0 + timedelta(days=1)), {"s-web"}),
        (
            SearchFilters(
                after=T0 - timedelta(days=1), before=T0 + timedelta(days=2), include_subagents=True
            ),
            {"s-web", "s-sub"},
        ),
        (SearchFilters(after=T0 + timedelta(days=2)), set()),
    ],
)
@pytest.mark.parametrize("mode", ["text", "vector", "hybrid"])
def test_filters_apply_in_every_mode(
    filled: Store, filters: SearchFilters, expected_sessions: set[str], mode: str
) -> None:
    embedder = HashEmbedder()
    embed_backlog(filled, embedder)
    hits = search(filled, "sqlite lock", filters=filters, mode=mode, embedder=embedder)
    got = {h.session_id for h in hits}
    if mode == "text":
        assert got == expected_sessions
    else:  # vector candidates are every exchange that passes the filters
        assert expected_sessions <= got
        allowed = {h.session_id for h in search(filled, "sqlite lock", filters=filters)}
        assert got <= allowed | _sessions_passing(filled, filters)


def _sessions_passing(store: Store, filters: SearchFilters) -> set[str]:
    out = set()
    for sid, *_ in CONVERSATIONS:
        session = store.sessions.get(sid)
        if any(matches_filters(x, session, filters) for x in store.exchanges.of(sid)):
            out.add(sid)
    return out


@pytest.mark.parametrize(
    ("filters", "expected"),
    [
        (SearchFilters(), {"s-web", "s-api", "s-cjk"}),  # subagents left out by default
        (SearchFilters(include_subagents=True), {"s-web", "s-api", "s-cjk", "s-sub"}),
        (SearchFilters(project="web"), {"s-web"}),
        (SearchFilters(project="web", include_subagents=True), {"s-web", "s-sub"}),
        (SearchFilters(harness="codex"), {"s-api"}),
        (SearchFilters(session_id="s-cjk"), {"s-cjk"}),
        (SearchFilters(session_id="s-cjk", project="web"), set()),
        (SearchFilters(project="nope"), set()),
        # exchange-level parts are not the store's to apply here
        (SearchFilters(project="api", role="tool", after=T0 + timedelta(days=999)), {"s-api"}),
    ],
)
def test_session_ids_apply_the_session_level_filters(
    filled: Store, filters: SearchFilters, expected: set[str]
) -> None:
    assert set(filled.sessions.ids(filters)) == expected


def test_a_project_filter_scans_that_projects_rows_however_few(
    filled: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    # widening past the nearest rows stops at MAX_FILTER_SCAN; a project is a row mask
    # instead, so its exchanges are found even when every other row is nearer the query
    monkeypatch.setattr(engine, "MAX_FILTER_SCAN", 1)
    embedder = HashEmbedder()
    embed_backlog(filled, embedder)
    for project, query, expected in (
        ("notes", "sqlite lock busy timeout", "s-cjk"),
        ("api", "数据库 sqlite lock", "s-api"),
        ("web", "数据库 payment friday", "s-web"),
    ):
        filters = SearchFilters(project=project)
        hits = search(filled, query, filters=filters, mode="vector", embedder=embedder, pool=1)
        assert [h.session_id for h in hits] == [expected], project


def test_a_date_filter_scans_the_rows_from_then_however_few(
    filled: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(engine, "MAX_FILTER_SCAN", 1)
    embedder = HashEmbedder()
    embed_backlog(filled, embedder)
    june = SearchFilters(after=T0 + timedelta(days=40), before=T0 + timedelta(days=50))
    hits = search(
        filled, "数据库 sqlite lock", filters=june, mode="vector", embedder=embedder, pool=1
    )
    assert ids(hits) == ["s-api:1"]  # the only exchange from then, the farthest from the query
    late = SearchFilters(after=T0 + timedelta(days=50))
    hits = search(filled, "payment friday", filters=late, mode="vector", embedder=embedder, pool=1)
    assert ids(hits) == ["s-cjk:1"]
    never = SearchFilters(after=T0 + timedelta(days=999))
    assert search(filled, "payment", filters=never, mode="vector", embedder=embedder) == []


def test_embedded_times_say_when_each_embedded_exchange_happened(filled: Store) -> None:
    embedder = HashEmbedder()
    assert filled.embeddings.times(embedder.name) == []
    embed_backlog(filled, embedder)
    times = dict(filled.embeddings.times(embedder.name))
    assert len(times) == 6
    for xid, when in times.items():
        exchange = filled.exchanges.many([xid])[xid]
        assert when == (exchange.started_at or exchange.ended_at)
        assert when is not None and when.tzinfo is not None
    assert filled.embeddings.times("another-model") == []


def test_date_filter_on_the_api_session(filled: Store) -> None:
    june = SearchFilters(after=T0 + timedelta(days=40), before=T0 + timedelta(days=50))
    assert ids(search(filled, "deploy friday", filters=june, mode="text")) == ["s-api:1"]
    may = SearchFilters(before=T0 + timedelta(days=40))
    assert search(filled, "deploy friday", filters=may, mode="text") == []


@pytest.mark.parametrize("mode", ["text", "vector", "hybrid"])
def test_naive_dates_are_utc_in_every_mode(filled: Store, mode: str) -> None:
    embedder = HashEmbedder()
    embed_backlog(filled, embedder)
    naive = T0.replace(tzinfo=None)
    june = SearchFilters(after=naive + timedelta(days=40), before=naive + timedelta(days=50))
    assert june.after == T0 + timedelta(days=40) and june.after.tzinfo is not None
    hits = search(filled, "deploy friday", filters=june, mode=mode, embedder=embedder)
    assert {h.session_id for h in hits} == {"s-api"}


def test_a_hit_on_the_index_keys_is_shown_from_the_exchange_text(filled: Store) -> None:
    """The index keys an exchange by its project, harness and date words (so "May 2024"
    finds it); a snippet quotes the exchange, never those keys."""
    hits = search(filled, "Wednesday", mode="text")  # T0, 2024-05-01, was a Wednesday
    assert hits and {h.session_id for h in hits} <= {"s-web", "s-sub"}
    for hit in hits:
        assert "ym2024" not in hit.snippet and "claude-code" not in hit.snippet
        assert "Wednesday" not in hit.snippet and hit.snippet.strip()
    own = search(filled, "sqlite", mode="text")[0]
    assert "\x02" in own.snippet  # a word of the exchange itself is still marked


def test_vector_search_with_the_hash_embedder(filled: Store) -> None:
    embedder = HashEmbedder()
    first = embed_backlog(filled, embedder, batch=2)
    assert first.embedded == 6 and first.complete  # 6 exchanges in all
    assert embed_backlog(filled, embedder).embedded == 0  # caught up
    hits = search(filled, "payment service deploy", mode="vector", embedder=embedder)
    assert hits[0].exchange_id == "s-api:1"
    assert hits[0].vector_rank == 1 and hits[0].text_rank is None
    assert "\x02" in hits[0].snippet  # vector hits get a marked snippet too


def test_embed_backlog_respects_max_items(filled: Store) -> None:
    embedder = HashEmbedder(dim=32)
    partial = embed_backlog(filled, embedder, batch=4, max_items=3)
    assert partial.embedded == 3 and not partial.complete
    rest = embed_backlog(filled, embedder)
    assert rest.embedded == 3 and rest.complete


def test_hybrid_fuses_both_lists(filled: Store) -> None:
    embedder = HashEmbedder()
    embed_backlog(filled, embedder)
    hits = search(filled, "sqlite database lock", mode="hybrid", embedder=embedder)
    top = hits[0]
    assert top.exchange_id == "s-web:1"
    assert top.text_rank == 1 and top.vector_rank == 1
    # a hybrid list is not "vector hits, then text hits": every hit has a fused score
    scores = [h.score for h in hits]
    assert scores == sorted(scores, reverse=True)


def test_default_mode_is_hybrid_with_an_embedder(filled: Store) -> None:
    embedder = HashEmbedder()
    embed_backlog(filled, embedder)
    hits = search(filled, "dark mode toggle", embedder=embedder)
    assert hits[0].exchange_id == "s-web:6"
    assert hits[0].vector_rank is not None and hits[0].text_rank is not None


def test_summary_beside_hits_without_header(filled: Store) -> None:
    bodies = {"s-web": '__COVERAGE__ {"bytes":120,"schema":1}\nFixed the sqlite lock with WAL.'}
    hits = search(filled, "sqlite", mode="text", summaries=bodies.get)
    assert hits[0].summary == "Fixed the sqlite lock with WAL."
    assert "__COVERAGE__" not in str(hits[0].to_json())
    assert search(filled, "deploy", mode="text", summaries=bodies.get)[0].summary is None


def test_unreadable_summary_is_shown_as_none(filled: Store) -> None:
    def broken(session_id: str) -> str | None:
        raise OSError("permission denied")

    hits = search(filled, "sqlite", mode="text", summaries=broken)
    assert hits and hits[0].summary is None


def test_deleted_session_leaves_no_hits(filled: Store) -> None:
    embedder = HashEmbedder()
    embed_backlog(filled, embedder)
    filled.sessions.delete("s-web")
    invalidate()
    assert all(h.session_id != "s-web" for h in search(filled, "sqlite lock", mode="text"))
    hits = search(filled, "sqlite lock", mode="vector", embedder=embedder)
    assert all(h.session_id != "s-web" for h in hits)


def test_json_shape(filled: Store) -> None:
    hit = search(filled, "sqlite", mode="text")[0]
    assert set(hit.to_json()) == {
        "session_id",
        "exchange_id",
        "timestamp",
        "project",
        "score",
        "snippet",
        "highlights",
        "summary",
    }


def test_memoir_search_facade(store: Store, settings: object) -> None:
    fill(store)
    memoir = Memoir(settings, store)  # type: ignore[arg-type]
    hits = memoir.search("dark mode toggle", mode="text", embedder=None)
    assert [h.exchange_id for h in hits][:1] == ["s-web:6"]
    assert hits[0].summary is None  # no summary written for this session
    # what Memoir.search hands the engine by default
    assert service.summary_body(memoir, "s-web") is None
    hits = memoir.search("dark mode", summaries={"s-web": "Dark mode work."}.get, embedder=None)
    assert hits[0].summary == "Dark mode work."


def test_embed_backlog_stores_token_states_beside_vectors(filled: Store) -> None:
    embedder = HashEmbedder()
    assert embed_backlog(filled, embedder).embedded == 6
    ids_ = [x.id for x in filled.exchanges.of("s-web")]
    stored = filled.embeddings.token_states(embedder.name, [*ids_, "s-web:404"])
    assert sorted(stored) == sorted(ids_)
    first = unpack_tokens(stored["s-web:1"])
    assert first.shape[1] == HashEmbedder.token_dim and first.shape[0] > 5
    assert filled.embeddings.token_states("another-model", ids_) == {}


def test_hybrid_reranks_its_head_with_the_stored_token_states(
    filled: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    embedder = HashEmbedder()
    embed_backlog(filled, embedder)
    seen: dict[str, object] = {}

    def spy(
        ranked: list[str], query_tokens: np.ndarray, stored: dict[str, bytes], **more: object
    ) -> list[str]:
        seen.update(ranked=list(ranked), stored=dict(stored), width=query_tokens.shape[1])
        assert more == {"stand_in": set()}  # every exchange here has its vector
        return list(reversed(ranked))

    monkeypatch.setattr(engine, "rerank", spy)
    hits = search(filled, "sqlite database lock", mode="hybrid", embedder=embedder)
    assert seen["width"] == HashEmbedder.token_dim
    ranked = seen["ranked"]
    assert isinstance(ranked, list) and set(seen["stored"]) == set(ranked)  # type: ignore[arg-type]
    assert ids(hits) == list(reversed(ranked))[: len(hits)]  # the re-ranked order is used
    scores = [h.score for h in hits]
    assert scores == sorted(scores, reverse=True) and scores[0] > scores[-1]
    seen.clear()
    search(filled, "sqlite database lock", mode="text", embedder=embedder)
    search(filled, "sqlite database lock", mode="vector", embedder=embedder)
    assert seen == {}  # only hybrid re-ranks


def _add_session(store: Store, sid: str, days: int, user: str, assistant: str) -> None:
    start = T0 + timedelta(days=days)
    events = [
        Event(sid, 1, EventKind.USER_TEXT, Author.USER, user, start),
        Event(sid, 2, EventKind.ASSISTANT_TEXT, Author.ASSISTANT, assistant, start),
    ]
    session = Session(id=sid, project="ops", harness=Harness.GENERIC, created_at=start)
    store.ingest.apply(
        IngestBatch(session=session, events=tuple(events), exchanges=tuple(build_exchanges(events)))
    )


@pytest.mark.parametrize("mode", ["text", "vector", "hybrid"])
def test_dates_in_the_query_favour_exchanges_from_then(filled: Store, mode: str) -> None:
    # 2024-06-15: a weaker match for the words than May's s-web:1
    _add_session(filled, "s-ops", 45, "lock again?", "Yes, a sqlite lock.")
    embedder = HashEmbedder()
    embed_backlog(filled, embedder)
    plain = ids(search(filled, "sqlite database lock", mode=mode, embedder=embedder))
    assert plain.index("s-web:1") < plain.index("s-ops:1")
    for when in ("in June 2024", "on 17 June, 2024", "2024-06-12"):
        dated = ids(search(filled, f"sqlite database lock {when}", mode=mode, embedder=embedder))
        assert dated[0] == "s-ops:1", when
    # a date with nothing from then changes nothing
    assert (
        ids(search(filled, "sqlite database lock in 2019", mode=mode, embedder=embedder))[:2]
        == plain[:2]
    )


def _group_chat(store: Store) -> None:
    """A generic group chat whose messages name their speakers (OpenAI ``name``)."""
    said = [
        (Author.USER, "Ana", "Back from the lake yet?"),
        (Author.ASSISTANT, "Bo", "Yes, we kayaked all morning."),
        (Author.USER, "Ana", "Did the tent hold up in the storm?"),
        (Author.ASSISTANT, "Bo", "Barely, the poles bent."),
    ]
    events = [
        Event(
            "s-chat",
            n,
            EventKind.USER_TEXT if who is Author.USER else EventKind.ASSISTANT_TEXT,
            who,
            text,
            T0 + timedelta(days=40, minutes=n),
            payload={"speaker": name},
        )
        for n, (who, name, text) in enumerate(said, start=1)
    ]
    session = Session(
        id="s-chat", project="camp", harness=Harness.GENERIC, created_at=T0, updated_at=T0
    )
    store.ingest.apply(
        IngestBatch(session=session, events=tuple(events), exchanges=tuple(build_exchanges(events)))
    )


def test_named_speakers_are_searched_and_shown(filled: Store) -> None:
    _group_chat(filled)
    hits = search(filled, "Bo kayaked", mode="text")
    assert ids(hits)[:1] == ["s-chat:1"]
    assert "Bo" in hits[0].snippet.replace("\x02", "").replace("\x03", "")
    # the name alone finds every exchange where that person speaks, and nothing else
    assert sorted(ids(search(filled, "Ana", mode="text"))) == ["s-chat:1", "s-chat:3"]
    embedder = HashEmbedder()
    embed_backlog(filled, embedder)
    assert ids(search(filled, "Bo tent poles", mode="hybrid", embedder=embedder))[0] == "s-chat:3"


@pytest.mark.parametrize("query", ["sqlite lock", "dark mode toggle", "tests parser", "WAL"])
def test_text_mode_keeps_the_index_order_and_scores(filled: Store, query: str) -> None:
    """Text mode is the index's bm25 order: no neighbour smoothing on top (the index's
    context column already lets an exchange match its neighbours' words)."""
    hits = search(filled, query, mode="text", limit=50)
    candidates = engine.text_candidates(filled.index, query, SearchFilters(), 150)
    assert hits
    assert [h.score for h in hits] == sorted((h.score for h in hits), reverse=True)
    assert all(h.score == candidates[h.exchange_id].score for h in hits)


@pytest.mark.skipif(not minilm_available(), reason="embeddings extra not installed")
@pytest.mark.parametrize("mode", ["vector", "hybrid"])
def test_a_lone_surrogate_in_the_query_reaches_the_real_embedder_safely(
    filled: Store, mode: str
) -> None:
    embedder = load_embedder("minilm")
    assert embedder is not None
    embed_backlog(filled, embedder)
    broken = search(filled, "dark \ud800mode toggle", mode=mode, embedder=embedder)
    clean = search(filled, "dark \ufffdmode toggle", mode=mode, embedder=embedder)
    assert ids(broken) == ids(clean) and ids(broken)


@pytest.mark.parametrize(
    ("filters", "says"),
    [
        ({"project": 3}, "project must be a string"),
        ({"session_id": b"s-web"}, "session_id must be a string"),
        ({"include_subagents": "yes"}, "include_subagents must be True or False"),
    ],
)
def test_filters_of_the_wrong_type_are_config_errors(filters: dict, says: str) -> None:
    with pytest.raises(ConfigError, match=says):
        SearchFilters(**filters)


def test_filters_given_as_a_dict_are_refused_clearly(filled: Store) -> None:
    with pytest.raises(ConfigError, match="filters must be a SearchFilters, not dict"):
        search(filled, "dark mode", mode="text", filters={"project": "web"})  # type: ignore[arg-type]


def test_a_lone_surrogate_in_a_filter_matches_nothing_instead_of_failing(filled: Store) -> None:
    assert SearchFilters(project="w\udc80eb").project == "w\ufffdeb"
    assert (
        search(filled, "dark mode", mode="text", filters=SearchFilters(project="w\udc80eb")) == []
    )


def _many_matches(store: Store, sessions: int = 4, per_session: int = 60) -> None:
    """Sessions whose exchanges all share a few words in different mixes and amounts, so
    a query matches hundreds of them, some with every word and some with one."""
    words = ["cache", "eviction", "redis", "latency", "ttl", "shard", "replica", "warmup"]
    rng = np.random.default_rng(7)
    for n in range(sessions):
        sid = f"s-many-{n}"
        start = T0 + timedelta(days=n)
        events = []
        for turn in range(per_session):
            said = rng.choice(words, size=int(rng.integers(1, 6)), replace=True)
            reply = rng.choice(words, size=int(rng.integers(1, 9)), replace=True)
            events += [
                Event(sid, 2 * turn + 1, EventKind.USER_TEXT, Author.USER, " ".join(said), start),
                Event(
                    sid,
                    2 * turn + 2,
                    EventKind.ASSISTANT_TEXT,
                    Author.ASSISTANT,
                    "noted: " + " ".join(reply),
                    start,
                ),
            ]
        session = Session(id=sid, project="many", harness=Harness.GENERIC, created_at=start)
        store.ingest.apply(
            IngestBatch(
                session=session, events=tuple(events), exchanges=tuple(build_exchanges(events))
            )
        )


@pytest.mark.parametrize("mode", ["text", "vector", "hybrid"])
def test_a_smaller_limit_is_the_head_of_a_larger_one(filled: Store, mode: str) -> None:
    # the candidate pool does not grow with the limit: --limit 5 is the top 5 of --limit 40
    _many_matches(filled)
    embedder = HashEmbedder()
    embed_backlog(filled, embedder)
    query = "redis cache eviction latency"
    widest = ids(search(filled, query, mode=mode, embedder=embedder, limit=200))
    assert len(widest) == 200 == len(set(widest))  # past the default pool: filled deeper
    for limit in (1, 5, 10, 25, 40, 80, 120):
        got = ids(search(filled, query, mode=mode, embedder=embedder, limit=limit))
        assert got == widest[:limit], limit
    scores = [h.score for h in search(filled, query, mode=mode, embedder=embedder, limit=200)]
    assert scores == sorted(scores, reverse=True)


def test_an_explicit_pool_is_used_as_given(filled: Store) -> None:
    _many_matches(filled)
    hits = search(filled, "redis cache", mode="text", limit=200, pool=30)
    assert len(hits) == 30  # one pass of 30 candidates, no deeper fill
    with pytest.raises(ConfigError, match="pool"):
        search(filled, "redis cache", mode="text", pool=0)


@pytest.mark.parametrize("mode", ["text", "hybrid"])
def test_snippets_are_made_for_the_hits_shown_only(
    filled: Store, mode: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    # a snippet is a query of its own per row: the 75 candidates of each list need none
    _many_matches(filled)
    embedder = HashEmbedder()
    embed_backlog(filled, embedder)
    asked: list[list[str]] = []
    made = filled.index.snippets

    def recorded(query: str, filters: SearchFilters, exchange_ids: list[str]) -> dict[str, str]:
        asked.append(list(exchange_ids))
        return made(query, filters, exchange_ids)

    monkeypatch.setattr(filled.index, "snippets", recorded)
    hits = search(filled, "redis eviction", mode=mode, embedder=embedder, limit=4)
    assert len(hits) == 4 and len(asked) == 1
    assert set(asked[0]) <= set(ids(hits)) and asked[0]
    for hit in hits:  # every hit shown still has its words marked
        assert "\x02" in hit.snippet, hit.snippet


@pytest.mark.parametrize("mode", ["text", "vector", "hybrid"])
def test_a_hit_reports_the_same_ranks_and_snippet_whatever_the_limit(
    filled: Store, mode: str
) -> None:
    # the head of a larger limit is the smaller limit's page, field for field: a deeper
    # pass that fills a large limit must not change what the head's hits report
    _many_matches(filled)
    embedder = HashEmbedder()
    embed_backlog(filled, embedder)
    query = "redis cache eviction latency"

    def shown(limit: int) -> list[tuple[object, ...]]:
        hits = search(filled, query, mode=mode, embedder=embedder, limit=limit)
        return [(h.exchange_id, h.score, h.snippet, h.text_rank, h.vector_rank) for h in hits]

    widest = shown(200)
    for limit in (10, 40):
        assert shown(limit) == widest[:limit], limit


def test_a_vector_hit_holding_the_words_in_its_tool_output_shows_them_marked(
    filled: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    # a page deeper than the text list's candidates (here 5, as a --limit past 75 is for
    # the default pool) holds vector hits the index would match too: their snippets show
    # the query's words, as the text matches' do, not the prompt without them
    events = []
    words = ["cache", "shard", "replica", "warmup", "latency", "ttl"]
    for n in range(30):
        said, what = words[n % 6], words[(n + 2) % 6]
        events += [
            Event("s-tools", 3 * n + 1, EventKind.USER_TEXT, Author.USER, f"check {said} {n}", T0),
            Event(
                "s-tools",
                3 * n + 2,
                EventKind.TOOL_RESULT,
                Author.TOOL,
                f"redis eviction {'x' * (n * 37)} {what}",
                T0,
                tool_name="Bash",
                call_id=f"c{n}",
            ),
            Event("s-tools", 3 * n + 3, EventKind.ASSISTANT_TEXT, Author.ASSISTANT, "done", T0),
        ]
    session = Session(id="s-tools", project="tools", harness=Harness.GENERIC, created_at=T0)
    filled.ingest.apply(
        IngestBatch(session=session, events=tuple(events), exchanges=tuple(build_exchanges(events)))
    )
    embedder = HashEmbedder()
    embed_backlog(filled, embedder)
    monkeypatch.setattr(engine, "DEFAULT_POOL", 5)
    filters = SearchFilters(project="tools")
    hits = search(
        filled, "redis eviction", mode="hybrid", embedder=embedder, limit=10, filters=filters
    )
    assert len(hits) == 10 and any(h.text_rank is None for h in hits)
    for hit in hits:
        assert "\x02redis\x03" in hit.snippet, (hit.text_rank, hit.vector_rank, hit.snippet)


def test_no_deeper_pass_when_every_match_is_already_ranked(
    filled: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    # fewer matches than the pool: a page of 100 asks the index once (and once more for
    # the any-word fill), not again with a deeper pool that can find nothing more
    calls: list[int] = []
    asked = filled.index.search

    def counted(query: str, filters: SearchFilters, limit: int, **kw: bool) -> list:
        calls.append(limit)
        return asked(query, filters, limit, **kw)

    monkeypatch.setattr(filled.index, "search", counted)
    hits = search(filled, "sqlite lock", mode="text", limit=100)
    assert 0 < len(hits) < engine.DEFAULT_POOL
    assert calls and set(calls) == {engine.DEFAULT_POOL}
    calls.clear()
    _many_matches(filled)  # now the text list is cut at the pool: the deeper pass runs
    assert len(search(filled, "redis cache", mode="text", limit=100)) == 100
    assert max(calls) == 300


class _CountingEmbedder(HashEmbedder):
    """The fake, counting the texts it is asked to turn into vectors (a real model would
    be loaded by the first)."""

    def __init__(self) -> None:
        super().__init__()
        self.asked = 0

    def embed(self, texts: list[str]) -> np.ndarray:  # type: ignore[override]
        self.asked += len(texts)
        return super().embed(texts)


@pytest.mark.parametrize("mode", ["vector", "hybrid"])
def test_no_stored_vector_no_query_vector(filled: Store, mode: str) -> None:
    """With an embedder configured but no vector stored (a home synced without the
    extra), a search embeds nothing: the model is loaded only when a vector is needed.
    Once vectors are stored, the same search embeds its query."""
    embedder = _CountingEmbedder()
    hits = search(filled, "sqlite lock", mode=mode, embedder=embedder)
    assert embedder.asked == 0
    assert (ids(hits)[:1] == ["s-web:1"]) if mode == "hybrid" else (hits == [])
    embed_backlog(filled, HashEmbedder())
    invalidate()
    search(filled, "sqlite lock", mode=mode, embedder=embedder)
    assert embedder.asked >= 1
