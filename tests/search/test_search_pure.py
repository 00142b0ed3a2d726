"""Pure parts of search: neighbour smoothing, snippets, summary hygiene, dates, filters."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from hypothesis import given
from hypothesis import strategies as st

from memoir.errors import ConfigError
from memoir.model import Exchange, Harness, Session, SessionFlags
from memoir.search.embedders import HashEmbedder
from memoir.search.engine import search
from memoir.search.hits import clean_summary, make_snippet, query_words, split_marks
from memoir.search.ranking import neighbour_smoothed
from memoir.search.request import matches_filters, mentions_any, parse_when, resolve_mode
from memoir.store.db import ACCENTED, PLAIN, fold_accents
from memoir.store.search_text import parse_query
from memoir.store.values import SearchFilters


def ex(xid: str, first: int, last: int, session: str = "s", **kw: object) -> Exchange:
    values: dict[str, object] = {
        "id": xid,
        "session_id": session,
        "first_ordinal": first,
        "last_ordinal": last,
        "user_text": "question",
        "assistant_text": "answer",
        "tool_names": (),
        "started_at": datetime(2024, 5, 1, 12, tzinfo=UTC),
        "ended_at": None,
    }
    values.update(kw)
    return Exchange(**values)  # type: ignore[arg-type]


SPANS = {
    "a": ex("a", 1, 3),
    "b": ex("b", 4, 6),
    "c": ex("c", 7, 9),
    "z": ex("z", 10, 12, session="other"),
}


@pytest.mark.parametrize(
    ("scores", "expected"),
    [
        # b sits between a and c: it borrows half of the better neighbour (a)
        ({"a": 10.0, "b": 6.0, "c": 1.0}, [("a", 13.0), ("b", 11.0), ("c", 4.0)]),
        # a neighbour that is not a candidate lends nothing
        ({"a": 10.0, "c": 9.0}, [("a", 10.0), ("c", 9.0)]),
        # adjacency needs the same session: z (ordinal 10) does not follow c (ends at 9)
        ({"c": 4.0, "z": 5.0}, [("z", 5.0), ("c", 4.0)]),
        # negative neighbours (cosine) never lower a score
        ({"a": -1.0, "b": 0.5}, [("b", 0.5), ("a", -0.75)]),
        ({}, []),
    ],
)
def test_neighbour_smoothing_table(
    scores: dict[str, float], expected: list[tuple[str, float]]
) -> None:
    got = neighbour_smoothed(scores, SPANS)
    assert [i for i, _ in got] == [i for i, _ in expected]
    assert [s for _, s in got] == pytest.approx([s for _, s in expected])


def test_neighbour_smoothing_weight_zero_is_plain_sort() -> None:
    assert neighbour_smoothed({"a": 1.0, "b": 2.0}, SPANS, weight=0) == [("b", 2.0), ("a", 1.0)]


@pytest.mark.parametrize(
    ("text", "query", "expected"),
    [
        ("we fixed the sqlite lock", "sqlite", "we fixed the \x02sqlite\x03 lock"),
        ("Deploy on Friday", "deploy friday", "\x02Deploy\x03 on \x02Friday\x03"),
        ("nothing here", "absent", "nothing here"),
        ("", "anything", ""),
        ("marks \x02inside\x03 text", "inside", "marks \x02inside\x03 text"),
    ],
)
def test_make_snippet_marks_query_words(text: str, query: str, expected: str) -> None:
    assert make_snippet(text, query) == expected


def test_make_snippet_windows_long_text_around_the_match() -> None:
    text = "filler " * 200 + "the needle is here " + "tail " * 200
    snippet = make_snippet(text, "needle", width=80)
    assert "\x02needle\x03" in snippet
    assert snippet.startswith("… ") and snippet.endswith(" …")
    assert len(snippet) < 110


@given(st.text(max_size=300), st.text(max_size=60))
def test_make_snippet_never_fails(text: str, query: str) -> None:
    snippet = make_snippet(text, query)
    assert snippet.count("\x02") == snippet.count("\x03")


@pytest.mark.parametrize(
    ("snippet", "text", "spans"),
    [
        ("plain", "plain", []),
        ("", "", []),
        ("a \x02lock\x03 b", "a lock b", [(2, 6)]),
        ("\x02x\x03\x02y\x03", "xy", [(0, 1), (1, 2)]),
        ("\x02\x03empty", "empty", []),  # an empty mark is no span
        ("end \x02open", "end open", [(4, 8)]),  # left open: runs to the end
        ("stray\x03 close", "stray close", []),
        ("\x02a\x02b\x03", "ab", [(0, 2)]),  # a second opening mark inside one is ignored
        ("漢\x02字\x03", "漢字", [(1, 2)]),
    ],
)
def test_split_marks_table(snippet: str, text: str, spans: list[tuple[int, int]]) -> None:
    assert split_marks(snippet) == (text, spans)


@given(st.text(alphabet=st.sampled_from("ab \x02\x03漢")))
def test_split_marks_spans_lie_inside_the_plain_text(snippet: str) -> None:
    text, spans = split_marks(snippet)
    assert "\x02" not in text and "\x03" not in text
    assert text == snippet.replace("\x02", "").replace("\x03", "")
    ends = [0] + [p for span in spans for p in span]
    assert ends == sorted(ends) and all(a < b for a, b in spans) and ends[-1] <= len(text)


def test_query_words_skip_punctuation_and_repeats() -> None:
    assert query_words('"NEAR(foo*, bar) foo OR 数据库') == ["near", "foo", "bar", "or", "数据库"]


@pytest.mark.parametrize(
    ("query", "words"),
    [
        ("用SQLite存", ["用", "sqlite", "存"]),  # a CJK run apart from the letters next to it
        ("数据库 锁定 数据库", ["数据库", "锁定"]),
        ("WAL模式", ["wal", "模式"]),
        ("plain words", ["plain", "words"]),
    ],
)
def test_query_words_part_cjk_runs_as_the_index_segments_them(query: str, words: list[str]) -> None:
    assert query_words(query) == words


@pytest.mark.parametrize(
    ("text", "query", "expected"),
    [
        # the spaces typed between CJK words stay; none is added before CJK punctuation
        ("数据库 锁定 怎么办", "锁定", "数据库 \x02锁定\x03 怎么办"),
        ("使用 WAL 模式。", "模式", "使用 WAL \x02模式\x03。"),
        ("日本語の テキスト です", "テキスト", "日本語の \x02テキスト\x03 です"),
        # a CJK run matches across the separators the index ignores, and is marked whole
        ("数据库 锁定 怎么办", "数据库锁定", "\x02数据库 锁定\x03 怎么办"),
        ("数据库，锁定", "数据库锁定", "\x02数据库，锁定\x03"),
        ("数据库A锁定", "数据库锁定", "数据库A锁定"),  # a letter between: no phrase there
        # mixed text: a Latin word begins after a CJK character, as the index reads it
        ("使用SQLite数据库", "sqlite", "使用\x02SQLite\x03数据库"),
        ("使用 SQLite 数据库", "使用SQLite", "\x02使用\x03 \x02SQLite\x03 数据库"),
        # text without CJK: words still marked only where they begin
        ("latest tests", "test", "latest \x02test\x03s"),
        ("a\x1cb  c\n d", "zzz", "a\x1cb c d"),  # \x1c is no white space to a snippet
    ],
)
def test_make_snippet_quotes_cjk_as_written(text: str, query: str, expected: str) -> None:
    assert make_snippet(text, query) == expected


def test_make_snippet_windows_around_a_cjk_match_in_a_long_text() -> None:
    text = "项目 说明 " * 40 + "连接池 配置 在 这里 " + "其他 内容 " * 40
    snippet = make_snippet(text, "连接池", width=60)
    assert snippet.startswith("… ") and snippet.endswith(" …")
    assert "说明 项目 说明 \x02连接池\x03 配置 在 这里 其他 内容" in snippet
    plain = snippet.replace("\x02", "").replace("\x03", "").removeprefix("… ")
    assert plain.removesuffix(" …") in text  # the text as written, spaces and all


@pytest.mark.parametrize(
    ("body", "expected"),
    [
        (None, None),
        ("", None),
        ("   \n", None),
        ('__COVERAGE__ {"bytes":10,"schema":1}\nFixed the login bug.', "Fixed the login bug."),
        ('__COVERAGE__ {"bytes":10}\n', None),
        ('__ERRORED__\n{"attempts":2,"lastAttempt":1}\nrate limited', None),
        ("Plain summary\nsecond line", "Plain summary\nsecond line"),
    ],
)
def test_clean_summary_never_shows_machine_lines(body: str | None, expected: str | None) -> None:
    assert clean_summary(body) == expected


@pytest.mark.parametrize(
    ("value", "end", "expected"),
    [
        ("2024-05-01", False, datetime(2024, 5, 1, tzinfo=UTC)),
        # an upper bound is exclusive: the first instant after the day or instant named
        ("2024-05-01", True, datetime(2024, 5, 2, tzinfo=UTC)),
        ("20240501", True, datetime(2024, 5, 2, tzinfo=UTC)),  # the compact form: a day too
        ("20240501", False, datetime(2024, 5, 1, tzinfo=UTC)),
        ("2024-05-01T14:30", False, datetime(2024, 5, 1, 14, 30, tzinfo=UTC)),
        ("2024-05-01 14:30:05Z", True, datetime(2024, 5, 1, 14, 30, 5, 1, tzinfo=UTC)),
        ("2024-05-01T14:30+02:00", False, datetime(2024, 5, 1, 12, 30, tzinfo=UTC)),
    ],
)
def test_parse_when(value: str, end: bool, expected: datetime) -> None:
    assert parse_when(value, end_of_day=end) == expected


@pytest.mark.parametrize(
    "value", ["", "  ", "2024-13-01", "2024-13", "2024-05-01T25", "blah", "the day after never"]
)
def test_parse_when_rejects_with_one_line(value: str) -> None:
    with pytest.raises(ConfigError, match="--after") as raised:
        parse_when(value, option="--after")
    assert "\n" not in str(raised.value)


NOW = datetime(2026, 12, 2, 14, 30, tzinfo=UTC)


def _utc(*parts: int) -> datetime:
    return datetime(*parts, tzinfo=UTC)  # type: ignore[misc]


@pytest.mark.parametrize(
    ("value", "end", "expected"),
    [
        # a day named in words is the whole day: --after from its start, --before through it
        ("yesterday", False, _utc(2026, 12, 1)),
        ("yesterday", True, _utc(2026, 12, 2)),
        ("today", False, _utc(2026, 12, 2)),
        ("3 days ago", False, _utc(2026, 11, 29)),
        ("2 weeks ago", False, _utc(2026, 11, 18)),
        ("2 weeks ago", True, _utc(2026, 11, 19)),
        ("a month ago", False, _utc(2026, 11, 2)),
        ("last monday", False, _utc(2026, 11, 30)),
        ("March 5", False, _utc(2026, 3, 5)),  # the past one, not next March
        ("Dec 1 2025", True, _utc(2025, 12, 2)),
        # a time of day given: that instant
        ("2 hours ago", False, _utc(2026, 12, 2, 12, 30)),
        ("yesterday 3pm", False, _utc(2026, 12, 1, 15)),
        ("yesterday 3pm", True, _utc(2026, 12, 1, 15) + timedelta(microseconds=1)),
        # a month or a year: the whole of it
        ("2026-03", False, _utc(2026, 3, 1)),
        ("2026-03", True, _utc(2026, 4, 1)),
        ("2025-12", True, _utc(2026, 1, 1)),
        ("March 2026", False, _utc(2026, 3, 1)),
        ("March 2026", True, _utc(2026, 4, 1)),
        ("2025", False, _utc(2025, 1, 1)),
        ("2025", True, _utc(2026, 1, 1)),
    ],
)
def test_parse_when_reads_dates_as_people_type_them(
    value: str, end: bool, expected: datetime
) -> None:
    assert parse_when(value, end_of_day=end, now=NOW) == expected


SESSION = Session(id="s", project="web", harness=Harness.CLAUDE_CODE)
SUB = Session(id="s", project="web", harness=Harness.CLAUDE_CODE, flags=SessionFlags(subagent=True))
MAY1 = datetime(2024, 5, 1, tzinfo=UTC)
MAY2 = datetime(2024, 5, 2, tzinfo=UTC)


@pytest.mark.parametrize(
    ("exchange", "session", "filters", "keep"),
    [
        (ex("a", 1, 2), SESSION, SearchFilters(), True),
        (ex("a", 1, 2), SUB, SearchFilters(), False),
        (ex("a", 1, 2), SUB, SearchFilters(include_subagents=True), True),
        (ex("a", 1, 2), SESSION, SearchFilters(project="web"), True),
        (ex("a", 1, 2), SESSION, SearchFilters(project="api"), False),
        (ex("a", 1, 2), SESSION, SearchFilters(harness="claude-code"), True),
        (ex("a", 1, 2), SESSION, SearchFilters(harness="codex"), False),
        (ex("a", 1, 2), SESSION, SearchFilters(session_id="other"), False),
        (ex("a", 1, 2), SESSION, SearchFilters(role="tool"), False),
        (ex("a", 1, 2, tool_names=("Bash",)), SESSION, SearchFilters(role="tool"), True),
        (ex("a", 1, 2, assistant_text=""), SESSION, SearchFilters(role="assistant"), False),
        (ex("a", 1, 2), SESSION, SearchFilters(after=MAY1), True),
        (ex("a", 1, 2), SESSION, SearchFilters(after=MAY2), False),
        (ex("a", 1, 2), SESSION, SearchFilters(before=MAY2), True),
        (ex("a", 1, 2), SESSION, SearchFilters(before=MAY1), False),
        (ex("a", 1, 2, started_at=None), SESSION, SearchFilters(before=MAY2), False),
        (ex("a", 1, 2), None, SearchFilters(), False),
    ],
)
def test_vector_filter_table(
    exchange: Exchange, session: Session | None, filters: SearchFilters, keep: bool
) -> None:
    assert matches_filters(exchange, session, filters) is keep


def test_resolve_mode() -> None:
    fake = HashEmbedder()
    assert resolve_mode(None, None) == "text"
    assert resolve_mode(None, fake) == "hybrid"
    assert resolve_mode("vector", fake) == "vector"
    with pytest.raises(ConfigError, match="embeddings"):
        resolve_mode("hybrid", None)
    with pytest.raises(ConfigError, match="mode"):
        resolve_mode("fuzzy", fake)


@pytest.mark.parametrize(
    ("query", "exchange", "hit"),
    [
        ("x -lock", ex("a", 1, 2, user_text="the lock is stale"), True),
        ("x -lock", ex("a", 1, 2, user_text="the LOCK, again"), True),
        ("x -lock", ex("a", 1, 2, user_text="a locked door"), False),  # whole words only
        ("x -lock*", ex("a", 1, 2, user_text="a locked door"), True),
        ('x -"busy timeout"', ex("a", 1, 2, assistant_text="set a busy timeout"), True),
        ('x -"busy timeout"', ex("a", 1, 2, assistant_text="timeout when busy"), False),
        ("x -bash", ex("a", 1, 2, tool_names=("Bash",)), True),
        ("x -sqlite3", ex("a", 1, 2, tool_excerpt="sqlite3 db.sqlite"), True),
        ("x -数据", ex("a", 1, 2, user_text="数据库锁"), True),
        ("x NOT answer", ex("a", 1, 2), True),
        ("x", ex("a", 1, 2), False),  # nothing excluded
    ],
)
def test_mentions_any_table(query: str, exchange: Exchange, hit: bool) -> None:
    assert mentions_any(exchange, parse_query(query).excluded) is hit


@pytest.mark.parametrize("role", ["bogus", "system", "USER", ""])
def test_an_unknown_role_is_refused_whatever_the_mode(role: str) -> None:
    with pytest.raises(ConfigError, match="role must be one of user, assistant, tool"):
        SearchFilters(role=role)


@pytest.mark.parametrize("limit", [None, 2.5, "10", True])
def test_a_limit_that_is_not_a_whole_number_is_refused(limit: object) -> None:
    with pytest.raises(ConfigError, match="limit must be a whole number"):
        search(None, "anything", limit=limit)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("kwargs", "needle"),
    [
        ({"after": "2025-05-01"}, "after must be a datetime, not str"),
        ({"before": datetime(2025, 5, 1).date()}, "before must be a datetime, not date"),
        ({"after": MAY2, "before": MAY1}, "date range is empty"),
        ({"after": MAY1, "before": MAY1}, "date range is empty"),  # before is exclusive
    ],
)
def test_search_filters_refuse_what_cannot_mean_anything(kwargs: dict, needle: str) -> None:
    with pytest.raises(ConfigError, match=needle):
        SearchFilters(**kwargs)


@pytest.mark.parametrize(
    ("query", "limit", "needle"),
    [(None, 5, "query must be a string"), ("x", -1, "limit must be 0 or more")],
)
def test_search_arguments_are_checked(query: object, limit: int, needle: str) -> None:
    with pytest.raises(ConfigError, match=needle):
        search(None, query, limit=limit)  # type: ignore[arg-type]


def test_snippets_mark_words_case_and_accents_aside() -> None:
    marked = make_snippet("The Café near Zürich, a naïve place", "cafe zurich NAIVE")
    assert marked == "The \x02Café\x03 near \x02Zürich\x03, a \x02naïve\x03 place"


def test_accent_folding_keeps_every_character_in_place() -> None:
    assert len(ACCENTED) == len(PLAIN) and PLAIN.isascii()
    text = "Ærø, Straße, Việt Nam, São Paulo, Łódź"
    folded = fold_accents(text)
    assert len(folded) == len(text)
    assert folded == "Ærø, Straße, Viet Nam, Sao Paulo, Łodz"  # as FTS5: ß, æ, ø, ł stay
    assert fold_accents("数据库 café") == "数据库 cafe"
    assert fold_accents("数据库 Ærø") == "数据库 Ærø"  # nothing to fold: the same text


def test_snippets_mark_where_words_begin_and_not_stop_words() -> None:
    marked = make_snippet(
        "before today we index the invoices; tests pass on latest", "to index tests"
    )
    assert marked == "before today we \x02index\x03 the invoices; \x02tests\x03 pass on latest"
    assert (
        make_snippet("数据库连接池怎么配置", "连接池") == "数据库\x02连接池\x03怎么配置"
    )  # CJK: inside
    assert make_snippet("the cat", "the") == "\x02the\x03 cat"  # only stop words: marked still
