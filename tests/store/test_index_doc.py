"""index_doc: what the index keys on, built from an exchange (pure)."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from memoir.errors import ConfigError
from memoir.model import Exchange, Harness, Session
from memoir.store.index_doc import (
    EMBED_CHARS,
    MAX_COLUMN_CHARS,
    embedding_text,
    exchange_document,
    month_token,
    project_token,
    role_column,
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
    assert embedding_text(exchange()) == "fix the lock\n\ndone"
    assert embedding_text(exchange(user_text="", assistant_text="only")) == "only"
    assert len(embedding_text(exchange(user_text="y" * 10_000))) == EMBED_CHARS


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
