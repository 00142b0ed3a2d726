"""The shared store suite, part 2: full-text search (both backends)."""

from __future__ import annotations

import dataclasses
from datetime import timedelta
from pathlib import Path

import pytest
from store_builders import T0, ingest, session

from memoir.errors import ConfigError
from memoir.model import Harness
from memoir.store import IngestBatch, SearchFilters, Store


@pytest.fixture
def corpus(store: Store) -> Store:
    ingest(
        store,
        "web",
        [
            ("How do I fix the sqlite database lock?", "Use WAL mode and a busy timeout.", "Bash"),
            ("Add a dark mode toggle to the settings page", "Added a toggle component.", None),
            ("Tell me about penguins", "Penguins live in the southern hemisphere.", None),
        ],
        project="webapp",
    )
    ingest(
        store,
        "api",
        [
            ("Why is the API slow?", "The lock on the cache table serialises writers.", "Grep"),
            ("数据库连接池怎么配置？", "使用 psycopg_pool 配置连接池。", None),
        ],
        start=T0 + timedelta(days=10),
        project="api",
        harness=Harness.CODEX,
    )
    ingest(
        store,
        "sub",
        [("subagent: search for sqlite lock usages", "found 3", None)],
        project="webapp",
        subagent=True,
    )
    return store


def ids(store: Store, query: str, limit: int = 10, **filters: object) -> list[str]:
    return [h.exchange_id for h in store.index.search(query, SearchFilters(**filters), limit)]  # type: ignore[arg-type]


def test_finds_ranks_and_marks_the_match(corpus: Store) -> None:
    hits = corpus.index.search("sqlite lock", SearchFilters(), 10)
    assert hits[0].exchange_id == "web:1"
    assert "\x02sqlite\x03" in hits[0].snippet.lower()
    assert all(h.snippet.count("\x02") == h.snippet.count("\x03") for h in hits)
    assert [h.score for h in hits] == sorted((h.score for h in hits), reverse=True)


def test_user_column_outranks_the_same_word_in_tools(corpus: Store) -> None:
    ingest(corpus, "w2", [("deploy the grep service", "ok", None)])
    assert ids(corpus, "grep")[0] == "w2:1"  # "grep" in the prompt beats Grep the tool


def test_stemming_phrases_prefixes_and_exclusions(corpus: Store) -> None:
    assert ids(corpus, "penguin") == ["web:7"]
    assert ids(corpus, '"dark mode toggle"') == ["web:5"]
    assert ids(corpus, '"toggle dark"') == []
    assert ids(corpus, "pengu*") == ["web:7"]
    assert "api:1" in ids(corpus, "lock")
    assert "api:1" not in ids(corpus, "lock -cache")
    assert "api:1" not in ids(corpus, "lock NOT cache")
    assert ids(corpus, "penguins OR toggle") == ["web:5", "web:7"] or ids(
        corpus, "penguins OR toggle"
    ) == ["web:7", "web:5"]


def test_all_words_first_then_any_word(corpus: Store) -> None:
    assert ids(corpus, "penguins toggle") != []  # no exchange has both: any may match
    assert set(ids(corpus, "penguins toggle")) == {"web:5", "web:7"}
    assert ids(corpus, "sqlite database lock") == ["web:1"]  # all three: only web:1


def test_meta_words_project_date_and_tool(corpus: Store) -> None:
    assert set(ids(corpus, "webapp")) == {"web:1", "web:5", "web:7"}
    assert ids(corpus, "2024-05-11") == ["api:1", "api:5"] or set(ids(corpus, "2024-05-11")) == {
        "api:1",
        "api:5",
    }
    assert ids(corpus, "bash") == ["web:1"]


def test_cjk_text_is_findable(corpus: Store) -> None:
    hits = corpus.index.search("连接池", SearchFilters(), 10)
    assert [h.exchange_id for h in hits] == ["api:5"]
    assert "\x02连接池\x03" in hits[0].snippet
    assert ids(corpus, "数据库") == ["api:5"]
    assert ids(corpus, "池连") == []


@pytest.mark.parametrize(
    ("filters", "expected"),
    [
        ({}, {"web:1", "api:1"}),
        ({"include_subagents": True}, {"web:1", "api:1", "sub:1"}),
        ({"project": "api"}, {"api:1"}),
        ({"harness": "codex"}, {"api:1"}),
        ({"session_id": "web"}, {"web:1"}),
        ({"after": T0 + timedelta(days=1)}, {"api:1"}),
        ({"before": T0 + timedelta(days=1)}, {"web:1"}),
        ({"after": T0, "before": T0 + timedelta(minutes=1)}, {"web:1"}),
        ({"role": "assistant"}, {"api:1"}),
        ({"role": "user"}, {"web:1"}),
        ({"project": "nope"}, set()),
    ],
)
def test_filters(corpus: Store, filters: dict[str, object], expected: set[str]) -> None:
    assert set(ids(corpus, "lock", **filters)) == expected


def test_role_tool_matches_the_tool_column_only(corpus: Store) -> None:
    assert ids(corpus, "grep", role="tool") == ["api:1"]
    assert ids(corpus, "penguins", role="tool") == []
    with pytest.raises(ConfigError):
        ids(corpus, "grep", role="robot")


def test_limit(corpus: Store) -> None:
    assert len(ids(corpus, "the OR lock OR toggle OR penguins", limit=2)) == 2
    assert ids(corpus, "lock", limit=0) == []


HOSTILE = [
    "",
    "   \t\n ",
    '"',
    '""',
    "'",
    '"unterminated phrase',
    "NEAR(",
    "NEAR(lock sqlite, 2)",
    "lock OR",
    "OR",
    "AND",
    "NOT",
    "-",
    "--",
    "-lock",
    "*",
    "**lock**",
    "lock*",
    "l*",
    "(",
    ")",
    "((lock)",
    "{user}: lock",
    "user:lock",
    "^lock",
    "lock:*",
    "'; DROP TABLE exchanges; --",
    "1=1 OR 'a'='a'",
    "lock & sqlite | !fix <-> 2",
    "\\",
    "%s %(x)s ?",
    "\x00\x01\x02\x03",
    "数据库 OR",
    "😀",
    "😀 lock 😀",
    "x" * 5000,
    " ".join(["lock"] * 200),
    "ﬁx ＳＱＬｉｔｅ",
    "the a of",
]


@pytest.mark.parametrize("query", HOSTILE)
def test_hostile_queries_are_safe(corpus: Store, query: str) -> None:
    hits = corpus.index.search(query, SearchFilters(), 10)
    assert isinstance(hits, list)
    assert all(h.snippet.count("\x02") == h.snippet.count("\x03") for h in hits)
    for role in ("user", "assistant", "tool"):
        corpus.index.search(query, SearchFilters(role=role), 3)
    assert ids(corpus, "penguins") == ["web:7"]  # still intact


@pytest.mark.parametrize("query", ["", "   ", "\n", '""', "*", "-", "😀", "the"])
def test_queries_without_words_match_nothing(corpus: Store, query: str) -> None:
    assert corpus.index.search(query, SearchFilters(), 10) == []


def test_sql_fragment_and_operators_search_as_words(corpus: Store) -> None:
    assert "web:1" in ids(corpus, "'; DROP TABLE exchanges; -- sqlite")
    assert "web:1" in ids(corpus, "NEAR(sqlite")
    assert "web:1" in ids(corpus, "**sqlite**")
    assert corpus.stats()["exchanges"] == 6


def test_a_session_that_changes_project_is_found_under_the_new_one(corpus: Store) -> None:
    moved = dataclasses.replace(session("web", project="renamed"))
    corpus.ingest.apply(IngestBatch(session=moved))
    assert set(ids(corpus, "lock", project="renamed")) == {"web:1"}
    assert ids(corpus, "lock", project="webapp") == []
    assert set(ids(corpus, "renamed")) == {"web:1", "web:5", "web:7"}
    assert corpus.integrity_problems() == []


def test_accents_fold_the_same_way_on_both_backends(store: Store) -> None:
    ingest(
        store,
        "eu",
        [
            ("Where is the café near Zürich?", "Try the naïve bakery by the lake.", None),
            ("Plain cafe here", "No accents at all.", None),
        ],
    )
    assert set(ids(store, "cafe")) == {"eu:1", "eu:3"}
    assert set(ids(store, "café")) == {"eu:1", "eu:3"}
    assert ids(store, "zurich") == ["eu:1"] and ids(store, "Zürich") == ["eu:1"]
    assert ids(store, "naive") == ["eu:1"]
    [hit] = store.index.search("zurich", SearchFilters(), 10)
    assert "\x02Zürich\x03" in hit.snippet  # the text as written, the match marked


CJK_TURNS: list[tuple[str, str | None, str | None]] = [
    ("数据库 锁定 怎么办", "使用 SQLite 数据库 的 WAL 模式。", None),
    ("日本語の テキスト です", "はい、 そうです。", None),
    ("项目 说明 " * 40 + "连接池 配置 在 这里 " + "其他 内容 " * 40, "好的", None),
    ("How do I fix the sqlite database lock?", "Use WAL mode and a busy timeout.", None),
]


@pytest.mark.parametrize(
    ("query", "filters", "exchange_id", "snippet"),
    [
        # the spaces typed between CJK words are shown; none appears before CJK punctuation
        ("锁定", {}, "cjk:1", "数据库 \x02锁定\x03 怎么办 使用 SQLite 数据库 的 WAL 模式。"),
        ("テキスト", {}, "cjk:3", "日本語の \x02テキスト\x03 です はい、 そうです。"),
        # typed without its space, the run is found and marked across it
        ("数据库锁定", {}, "cjk:1", "\x02数据库 锁定\x03 怎么办 使用 SQLite 数据库 的 WAL 模式。"),
        # mixed CJK and Latin
        ("sqlite", {}, "cjk:1", "数据库 锁定 怎么办 使用 \x02SQLite\x03 数据库 的 WAL 模式。"),
        (
            "WAL模式",
            {},
            "cjk:1",
            "数据库 锁定 怎么办 使用 SQLite 数据库 的 \x02WAL\x03 \x02模式\x03。",
        ),
        # a role filter quotes that column only
        ("锁定", {"role": "user"}, "cjk:1", "数据库 \x02锁定\x03 怎么办"),
        ("数据库", {"role": "assistant"}, "cjk:1", "使用 SQLite \x02数据库\x03 的 WAL 模式。"),
    ],
)
def test_cjk_snippets_quote_the_text_as_written(
    store: Store, query: str, filters: dict[str, object], exchange_id: str, snippet: str
) -> None:
    ingest(store, "cjk", CJK_TURNS)
    hits = {h.exchange_id: h for h in store.index.search(query, SearchFilters(**filters), 10)}  # type: ignore[arg-type]
    assert hits[exchange_id].snippet == snippet


def test_a_cjk_match_in_the_middle_of_a_long_text_is_shown_with_its_spaces(store: Store) -> None:
    ingest(store, "cjk", CJK_TURNS)
    [hit] = store.index.search("连接池", SearchFilters(), 10)
    assert hit.exchange_id == "cjk:5"
    assert hit.snippet.startswith("… 说明 项目 说明 ") and hit.snippet.endswith(" 其他 …")
    assert "项目 说明 \x02连接池\x03 配置 在 这里 其他 内容" in hit.snippet
    shown = hit.snippet.replace("\x02", "").replace("\x03", "").removeprefix("… ")
    assert shown.removesuffix(" …") in CJK_TURNS[2][0]  # a piece of the prompt as typed


@pytest.mark.parametrize(
    ("query", "snippet"),
    [
        ("sqlite lock", "How do I fix the \x02sqlite\x03 database \x02lock\x03?"),
        ("busy timeout", "Use WAL mode and a \x02busy\x03 \x02timeout\x03."),
    ],
)
def test_snippets_of_text_without_cjk_are_unchanged(store: Store, query: str, snippet: str) -> None:
    ingest(store, "cjk", CJK_TURNS)  # CJK exchanges beside it change nothing
    [hit] = store.index.search(query, SearchFilters(), 10)
    assert hit.exchange_id == "cjk:7"
    assert snippet in hit.snippet


@pytest.mark.parametrize(
    ("query", "exchange_id", "snippet"),
    [
        # no CJK: FTS5's own snippet, its stem match and line break as before
        ("locks", "mix:1", "The \x02locking\x03 code\nwas slow"),
        # CJK: made from the stored text, the typed spaces kept
        ("模式", "mix:2", "数据库 锁定 使用 locking \x02模式\x03"),
    ],
)
def test_sqlite_quotes_fts5_unless_the_exchange_holds_cjk(
    tmp_path: Path, query: str, exchange_id: str, snippet: str
) -> None:
    from memoir.store.sqlite_store import SQLiteStore

    store = SQLiteStore(tmp_path / "store.db")
    try:
        turns = [
            ("The locking code\nwas slow", None, None),
            ("数据库 锁定 使用 locking 模式", None, None),
        ]
        ingest(store, "mix", turns)
        hits = {h.exchange_id: h.snippet for h in store.index.search(query, SearchFilters(), 10)}
        assert hits[exchange_id] == snippet
    finally:
        store.close()


@pytest.mark.parametrize(
    ("query", "user", "assistant", "marked"),
    [
        # an English query matched by its stem in an exchange that also holds CJK: FTS5
        # marks the word it matched; the Python snippet, which knows no stems, marks none
        ("locks", "数据库 的 问题", "The locking code was slow", "\x02locking\x03"),
        ("paging", "本番 で 遅い です", "Each built page is kept in a list", "\x02page\x03"),
    ],
)
def test_sqlite_marks_a_stem_match_in_an_exchange_that_holds_cjk(
    tmp_path: Path, query: str, user: str, assistant: str, marked: str
) -> None:
    from memoir.store.sqlite_store import SQLiteStore

    store = SQLiteStore(tmp_path / "store.db")
    try:
        ingest(store, "mix", [(user, assistant, None)])
        [hit] = store.index.search(query, SearchFilters(), 10)
        assert marked in hit.snippet
        assert store.index.snippets(query, SearchFilters(), [hit.exchange_id]) == {
            hit.exchange_id: hit.snippet
        }
    finally:
        store.close()


def test_snippets_keep_tag_like_text_and_mark_dotted_words(store: Store) -> None:
    ingest(
        store,
        "code",
        [
            ("How do I convert a Vec<u8> into a String?", "Use String::from_utf8.", None),
            ("Run <command-name>/review</command-name> on app.py", "Reviewed app.py.", None),
        ],
    )
    [vec] = store.index.search("Vec u8", SearchFilters(), 10)
    assert "Vec<u8>" in vec.snippet.replace("\x02", "").replace("\x03", "")
    [app] = store.index.search("app.py", SearchFilters(), 10)
    plain = app.snippet.replace("\x02", "").replace("\x03", "")
    assert "<command-name>/review</command-name>" in plain
    assert "\x02app" in app.snippet  # "app.py" or "app" and "py": marked either way
