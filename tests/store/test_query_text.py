"""query_text: the sanitiser is pure; every string parses, and its FTS5 rendering is
always valid MATCH syntax."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from memoir.store.search_text import (
    MAX_TERMS,
    ParsedQuery,
    has_cjk,
    meaning_text,
    parse_query,
    segment_cjk,
    to_fts5,
    unsegment_cjk,
)


@pytest.mark.parametrize(
    ("raw", "fts5"),
    [
        ("", None),
        ("   ", None),
        ("wal", '(("wal"))'),
        ("WAL Mode", '(("wal") AND ("mode"))'),
        ('"journal mode"', '(("journal mode"))'),
        ('"unterminated phrase', '(("unterminated phrase"))'),
        ("journal_mode", '(("journal mode"))'),
        ("foo-bar", '(("foo bar"))'),
        ("don't", '(("don t"))'),
        ("3.14", '(("3 14"))'),
        ("a OR b", '(("b"))'),  # "a" is a stop word, "b" is kept
        ("wal OR lock", '(("wal" OR "lock"))'),
        ("wal OR lock busy", '(("wal" OR "lock") AND ("busy"))'),
        ("OR wal", '(("wal"))'),
        ("wal OR", '(("wal"))'),
        ("wal -lock", '(("wal")) NOT ("lock")'),
        ("wal NOT lock", '(("wal")) NOT ("lock")'),
        # pasted text, not operators: a command-line flag, an SQL error
        ("git --no-verify", '(("git") AND ("no verify"))'),
        ("NOT NULL constraint", '(("null") AND ("constraint"))'),
        ('wal -"busy lock"', '(("wal")) NOT ("busy lock")'),
        ("-lock", None),
        ("optim*", '(("optim" *))'),
        ("o*", '(("o"))'),
        ("*", None),
        ("NEAR(sqlite, wal)", '(("near") AND ("sqlite") AND ("wal"))'),
        ("{user}: wal", '(("user") AND ("wal"))'),
        ("'; DROP TABLE x; --", '(("drop") AND ("table") AND ("x"))'),
        ("the of and", None),
        ('"the of"', '(("the of"))'),
        ("数据库", '(("数 据 库"))'),
        ("SQLite数据库", '(("sqlite 数 据 库"))'),
        ("😀", None),
        ("\x00wal\x01", '(("wal"))'),
    ],
)
def test_fts5_rendering_table(raw: str, fts5: str | None) -> None:
    assert to_fts5(parse_query(raw)) == fts5


def test_column_filter_and_loosening() -> None:
    q = parse_query("wal lock")
    assert to_fts5(q, "user") == '{user} : ((("wal") AND ("lock")))'
    loose = q.loosened()
    assert loose is not None and to_fts5(loose) == '(("wal" OR "lock"))'
    assert parse_query("wal").loosened() is None
    assert ParsedQuery().empty


def test_terms_are_bounded() -> None:
    q = parse_query(" ".join(f"word{i}" for i in range(500)))
    assert sum(len(g) for g in q.groups) == MAX_TERMS


@pytest.mark.parametrize(
    ("text", "segmented"),
    [
        ("plain ascii", "plain ascii"),
        ("数据库", "数 据 库"),
        ("用SQLite存", "用 SQLite 存"),
        ("中文 English", "中 文 English"),
        ("カタカナ", "カ タ カ ナ"),
        ("한국어", "한 국 어"),
        ("café", "café"),
    ],
)
def test_segment_cjk(text: str, segmented: str) -> None:
    assert segment_cjk(text) == segmented


@pytest.mark.parametrize(
    ("text", "cjk"),
    [
        ("plain ascii", False),
        ("café, Ærø, Москва", False),
        ("。、「」", False),  # CJK punctuation is no CJK word: never segmented
        ("数据库 锁定", True),
        ("aカb", True),
        ("한", True),
        ("\U00020000", True),  # a han extension
    ],
)
def test_has_cjk_says_whether_segment_cjk_changes_anything(text: str, cjk: bool) -> None:
    assert has_cjk(text) is cjk
    assert (segment_cjk(f"x{text}x") != f"x{text}x") is cjk


@pytest.mark.parametrize(
    ("snippet", "shown"),
    [
        ("数 据 库", "数据库"),
        ("数 \x02据 库\x03 很", "数\x02据库\x03很"),
        ("\x02数\x03 \x02据\x03", "\x02数据\x03"),
        ("\x02foo\x03\x02bar\x03", "\x02foobar\x03"),
        ("a b", "a b"),
    ],
)
def test_unsegment_cjk(snippet: str, shown: str) -> None:
    assert unsegment_cjk(snippet) == shown


@given(st.text(alphabet=st.characters(codec="utf-8"), max_size=60))
def test_unsegment_undoes_segment_for_pure_cjk_runs(text: str) -> None:
    cjk = "".join(c for c in text if "\u4e00" <= c <= "\u9fff")
    assert unsegment_cjk(segment_cjk(cjk)) == cjk


@pytest.fixture(scope="module")
def fts() -> Iterator[sqlite3.Connection]:
    conn = sqlite3.connect(":memory:")
    conn.execute(
        "CREATE VIRTUAL TABLE t USING fts5(user, assistant, tools, meta, "
        "tokenize = 'porter unicode61 remove_diacritics 2')"
    )
    conn.execute("INSERT INTO t VALUES ('hello world', 'wal mode', 'Bash', 'proj')")
    yield conn
    conn.close()


HOSTILE_ALPHABET = st.sampled_from(
    [*"\"'*()-:^{}[]<>,;!?|&~`\\/.+=%$#@ \t\n\x00", "OR", "AND", "NOT", "NEAR", "数", "😀", "wal"]
)


@settings(max_examples=300, deadline=None)
@given(st.lists(HOSTILE_ALPHABET, max_size=25).map("".join) | st.text(max_size=80))
def test_any_string_renders_to_valid_fts5(fts: sqlite3.Connection, raw: str) -> None:
    parsed = parse_query(raw)
    for column in (None, "user", "tools"):
        match = to_fts5(parsed, column)
        if match is None:
            assert parsed.empty
            continue
        fts.execute("SELECT rowid FROM t WHERE t MATCH ?", (match,)).fetchall()
        loose = parsed.loosened()
        if loose is not None:
            fts.execute("SELECT rowid FROM t WHERE t MATCH ?", (to_fts5(loose, column),))


@pytest.mark.parametrize(
    ("raw", "meaning"),
    [
        ("What has Melanie painted?", "What has Melanie painted?"),  # unchanged, "?" kept
        ("", ""),
        ("sqlite -lock", "sqlite"),
        ("sqlite NOT lock", "sqlite"),
        ('deploy -"payment service" friday', "deploy friday"),
        ("wal OR journal mode", "wal journal mode"),
        ("a AND b", "a b"),
        ("-only", ""),
        ("NOT", ""),
        ("pre-commit hook", "pre-commit hook"),  # a hyphen inside a word is no exclusion
        ("x (-lock)", "x"),  # brackets separate, as parse_query reads them
    ],
)
def test_meaning_text_drops_exclusions_and_operators(raw: str, meaning: str) -> None:
    assert meaning_text(raw) == meaning


@given(st.text(max_size=80))
def test_meaning_text_keeps_exactly_the_positive_terms(raw: str) -> None:
    parsed = parse_query(raw)
    kept = parse_query(meaning_text(raw))
    assert kept.excluded == ()
    if len(parsed.groups) < MAX_TERMS // 2:  # the term cap can cut the longer one first
        assert [t for g in kept.groups for t in g] == [t for g in parsed.groups for t in g]
