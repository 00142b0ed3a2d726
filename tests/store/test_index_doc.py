"""index_doc: what the index keys on, built from an exchange (pure)."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from memoir.errors import ConfigError
from memoir.model import Exchange, Harness, Session
from memoir.store.index_doc import (
    CONTEXT_CHARS,
    EMBED_CHARS,
    MAX_COLUMN_CHARS,
    context_text,
    embedding_text,
    exchange_document,
    index_text,
    month_token,
    project_token,
    quoted_text,
    rewrite_span,
    role_column,
    session_documents,
    shown_text,
    stream_documents,
    tools_text,
)

SESSION = Session(id="s1", project="memoir", harness=Harness.CODEX)


def exchange(**kw: object) -> Exchange:
    base: dict[str, object] = dict(
        id="s1:1",
        session_id="s1",
        first_ordinal=1,
        last_ordinal=4,
        user_text="fix the lock",
        assistant_text="done",
        tool_names=("Bash", "Read"),
        started_at=datetime(2024, 5, 1, 9, tzinfo=UTC),
        ended_at=None,
        tool_excerpt="ls -la\nREADME.md",
    )
    base.update(kw)
    return Exchange(**base)  # type: ignore[arg-type]


def test_columns() -> None:
    doc = exchange_document(exchange(), SESSION)
    assert doc.user == "fix the lock"
    assert doc.assistant == "done"
    assert doc.tools == "Bash Read\nls -la\nREADME.md"
    assert doc.meta == (
        f"memoir codex {project_token('memoir')} 2024-05-01 May 2024 Wednesday ym202405 "
        "user assistant tool"
    )


def test_meta_without_time_or_tools() -> None:
    doc = exchange_document(
        exchange(started_at=None, tool_names=(), tool_excerpt="", assistant_text=""), SESSION
    )
    assert doc.meta == f"memoir codex {project_token('memoir')} user"
    assert doc.tools == ""


def test_markers_nul_and_cjk_are_normalised() -> None:
    doc = exchange_document(exchange(user_text="a\x02b\x03c\x00d 数据"), SESSION)
    assert doc.user == "a b c d 数 据"


def test_columns_are_bounded() -> None:
    doc = exchange_document(exchange(assistant_text="x" * (MAX_COLUMN_CHARS * 3)), SESSION)
    assert len(doc.assistant) == MAX_COLUMN_CHARS


def test_embedding_text() -> None:
    assert embedding_text(exchange()) == "fix the lock\n\nls -la\nREADME.md\n\ndone"
    assert embedding_text(exchange(user_text="", assistant_text="only", tool_excerpt="")) == "only"
    assert len(embedding_text(exchange(user_text="y" * 10_000))) == EMBED_CHARS
    with_tools = exchange(tool_excerpt="Bash pytest -x … FAILED test_parse " + "z" * 900)
    text = embedding_text(with_tools)
    assert text.startswith("fix the lock\n\nBash pytest -x … FAILED test_parse")
    assert text.endswith("\n\ndone") and len(text) == len("fix the lock") + 600 + 4 + 4


@pytest.mark.parametrize(
    ("role", "column"),
    [(None, None), ("user", "user"), ("assistant", "assistant"), ("tool", "tools")],
)
def test_role_column(role: str | None, column: str | None) -> None:
    assert role_column(role) == column


def test_unknown_role() -> None:
    with pytest.raises(ConfigError, match="role must be"):
        role_column("system")


def test_filter_tokens_are_single_index_words() -> None:
    assert month_token(datetime(2023, 3, 9, tzinfo=UTC)) == "ym202303"
    token = project_token("-home-dev-code-memoir")
    assert token.isalnum() and token.startswith("prj") and len(token) == 15
    assert token != project_token("-home-dev-code-memoir2")
    assert project_token("项目") == project_token("项目")


def turn(n: int, user: str = "", assistant: str = "") -> Exchange:
    return exchange(
        id=f"s1:{n}",
        first_ordinal=n * 10,
        last_ordinal=n * 10 + 1,
        user_text=user or f"prompt {n}",
        assistant_text=assistant or f"reply {n}",
    )


def test_context_holds_the_end_of_the_previous_and_the_start_of_the_next() -> None:
    before = turn(1, "x" * 1000 + " how was the trip", "tell me")
    after = turn(3, "we hiked", "y" * 1000)
    text = context_text(before, after)
    assert text.startswith("x") and "how was the trip\ntell me\nwe hiked\ny" in text
    assert len(text) <= 2 * CONTEXT_CHARS + 1
    assert context_text(None, None) == ""
    assert context_text(turn(1, "a", "b"), None) == "a\nb"
    assert context_text(None, turn(3, "  ", "only reply")) == "only reply"


def test_context_cuts_at_word_boundaries() -> None:
    words = " ".join(f"w{i:03d}" for i in range(300))  # 1,499 characters
    head = context_text(None, turn(2, words, " "))
    tail = context_text(turn(2, words, " "), None)
    assert words.startswith(head) and head[-1].isdigit()
    assert words.endswith(tail) and tail.startswith("w")
    assert len(head) <= CONTEXT_CHARS and len(tail) <= CONTEXT_CHARS


def test_document_context_column_and_tools_left_out() -> None:
    doc = exchange_document(turn(2), SESSION, turn(1), turn(3, "next prompt"))
    assert doc.context == "prompt 1\nreply 1\nnext prompt\nreply 3"
    assert exchange_document(turn(2), SESSION).context == ""
    assert doc.columns()[-1] == doc.context and len(doc.columns()) == 5
    assert "Bash" not in doc.context and "README" not in doc.context


@pytest.mark.parametrize(
    ("count", "changed", "expected"),
    [
        (5, [4], [3, 4]),  # appended: the previous one quotes it now
        (5, [2], [1, 2, 3]),  # grown in the middle: both neighbours
        (5, [0], [0, 1]),
        (5, [0, 1, 2, 3, 4], [0, 1, 2, 3, 4]),  # a first import
        (5, [1, 3], [0, 1, 2, 3, 4]),
        (5, [], []),
        (1, [0], [0]),
        (5, ["unknown"], []),
    ],
)
def test_rewrite_span(count: int, changed: list[object], expected: list[int]) -> None:
    ordered = [turn(i) for i in range(count)]
    ids = [ordered[c].id if isinstance(c, int) else str(c) for c in changed]
    assert [x.id for x in rewrite_span(ordered, ids)] == [ordered[i].id for i in expected]


@settings(max_examples=40, deadline=None)
@given(st.lists(st.text(max_size=30), max_size=6))
def test_streamed_documents_equal_listed_ones(texts: list[str]) -> None:
    ordered = [turn(i, t or "p", t[::-1] or "r") for i, t in enumerate(texts)]
    streamed = list(stream_documents(iter(ordered), SESSION))
    assert streamed == session_documents(ordered, SESSION)
    assert [x.id for x, _ in streamed] == [x.id for x in ordered]
    for i, (_, doc) in enumerate(streamed):
        before = ordered[i - 1] if i else None
        after = ordered[i + 1] if i + 1 < len(ordered) else None
        assert doc == exchange_document(ordered[i], SESSION, before, after)


@pytest.mark.parametrize(
    ("raw", "indexed"),
    [
        ("\x1b[31mansiword\x1b[0m done", "ansiword done"),  # colours
        ("\x1b[1;32mPASSED\x1b[0m tests/x.py::t", "PASSED tests/x.py::t"),
        ("a\x1b[2Kb", "ab"),  # erase line
        ("\x1b]0;window title\x07text", "text"),  # a terminal title
        ("no escapes here", "no escapes here"),
    ],
)
def test_terminal_escapes_are_not_part_of_the_words(raw: str, indexed: str) -> None:
    assert index_text(raw) == indexed


@pytest.mark.parametrize(
    ("raw", "shown", "indexed"),
    [
        ("数据库 锁定", "数据库 锁定", "数 据 库 锁 定"),  # the typed space is one of many there
        ("使用 SQLite 数据库。", "使用 SQLite 数据库。", "使 用 SQLite 数 据 库 。"),
        ("\x1b[31m错误\x1b[0m a\x02b\x00c", "错误 a b c", "错 误 a b c"),
        ("plain text", "plain text", "plain text"),
    ],
)
def test_shown_text_is_the_indexed_text_before_segmentation(
    raw: str, shown: str, indexed: str
) -> None:
    assert shown_text(raw) == shown
    assert index_text(raw) == indexed


@pytest.mark.parametrize(
    ("column", "quoted"),
    [
        (None, "数据库 锁定\n使用 SQLite。\nBash Read\nls 目录"),
        ("user", "数据库 锁定"),
        ("assistant", "使用 SQLite。"),
        ("tools", "Bash Read\nls 目录"),
    ],
)
def test_quoted_text_is_the_exchanges_own_text_as_written(column: str | None, quoted: str) -> None:
    x = exchange(user_text="数据库 锁定", assistant_text="使用 SQLite。", tool_excerpt="ls 目录")
    tools = tools_text(x.tool_names, x.tool_excerpt)
    assert quoted_text(x.user_text, x.assistant_text, tools, column) == quoted
    assert index_text(tools) == exchange_document(x, SESSION).tools  # the column it quotes


def test_tools_text_without_names_or_excerpt() -> None:
    assert tools_text((), "only output") == "only output"
    assert tools_text(("Bash",), "") == "Bash"
    assert tools_text((), "") == ""
