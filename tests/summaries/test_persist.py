"""save_summary / read_summary_body / summary_counts / summary_problems."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from memoir.errors import NotFound, SummaryError
from memoir.llm import ScriptedModel
from memoir.llm.port import Transient
from memoir.model import Harness, Session
from memoir.summaries.persist import (
    read_summary_body,
    save_summary,
    summary_counts,
    summary_problems,
)
from memoir.summaries.state import SummaryPolicy, parse_summary_file

from .helpers import (
    HOUR_MS,
    NOW_MS,
    TINY_ID,
    append,
    archive,
    conversation,
    make_memoir,
    run_pass,
    summaries_of,
    summary_file,
)


def test_save_stamps_current_size_and_clears_failure(home, claude_fixtures) -> None:
    memoir = make_memoir(home)
    path = archive(home, TINY_ID, (claude_fixtures / "tiny-conversation.jsonl").read_bytes())
    memoir.store.index_file(path)
    summary_file(path).write_text('__ERRORED__\n{"attempts":3,"lastAttempt":1}\nboom\n')
    state = save_summary(
        summaries_of(memoir), memoir.store, TINY_ID, "  Manual summary.\n", model="offline"
    )
    text = summary_file(path).read_text()
    assert text == (
        '__COVERAGE__ {"bytes":8237,"lastExchange":"2025-09-19T17:36:33.487Z","schema":1}\n'
        "Manual summary."
    )
    assert state.failure is None
    assert read_summary_body(summaries_of(memoir), memoir.store, TINY_ID) == "Manual summary."
    assert (
        read_summary_body(
            summaries_of(memoir), memoir.store, Session(TINY_ID, "p", Harness.CLAUDE_CODE)
        )
        == "Manual summary."
    )


def test_save_for_an_api_session_uses_the_database(home) -> None:
    memoir = make_memoir(home)
    memoir.store.session_rows["api"] = Session("api", "p", Harness.API)
    save_summary(summaries_of(memoir), memoir.store, "api", "From the API.", model="m")
    assert memoir.store.rows["api"].body == "From the API."
    assert read_summary_body(summaries_of(memoir), memoir.store, "api") == "From the API."
    with pytest.raises(NotFound):
        save_summary(summaries_of(memoir), memoir.store, "ghost", "x", model=None)


@pytest.mark.parametrize(
    ("body", "stored"),
    [
        ('__COVERAGE__ {"bytes":1}\nAbout postgres.', "About postgres."),
        ("__ERRORED__\n__COVERAGE__ {}\n  Two headers, then words.", "Two headers, then words."),
        ("Words first.\n__COVERAGE__ stays as text", "Words first.\n__COVERAGE__ stays as text"),
    ],
)
def test_save_never_stores_a_header_line_as_the_body(home, body: str, stored: str) -> None:
    """Whatever a writer (the episodic merge, a model reply, a caller) hands over, the body
    never starts with a line that poses as the header or an error sentinel."""
    memoir = make_memoir(home)
    memoir.store.session_rows["api"] = Session("api", "p", Harness.API)
    save_summary(summaries_of(memoir), memoir.store, "api", body, model="m")
    assert memoir.store.rows["api"].body == stored
    assert read_summary_body(summaries_of(memoir), memoir.store, "api") == stored
    path = archive(home, "s", b"x")
    save_summary(summaries_of(memoir), memoir.store, "s", body, model="m")
    assert summary_file(path).read_text().split("\n", 1)[1] == stored
    assert read_summary_body(summaries_of(memoir), memoir.store, "s") == stored


@pytest.mark.parametrize("body", ["", "   ", '__COVERAGE__ {"bytes":1}\n', "__ERRORED__\n\n"])
def test_save_refuses_a_summary_with_no_words(home, body: str) -> None:
    memoir = make_memoir(home)
    memoir.store.session_rows["api"] = Session("api", "p", Harness.API)
    with pytest.raises(SummaryError, match="no text"):
        save_summary(summaries_of(memoir), memoir.store, "api", body, model="m")
    assert "api" not in memoir.store.rows


@pytest.mark.parametrize(
    ("content", "expected"),
    [
        ('__COVERAGE__ {"bytes":1,"schema":1}\nBody only.\n', "Body only."),
        ("Legacy body.", "Legacy body."),
        ("__COVERAGE__ {corrupt\nStill shown.", "Still shown."),
        ("", None),
        ('__ERRORED__\n{"attempts":1,"lastAttempt":1}\nboom\n', None),
        ('__COVERAGE__ {"bytes":1,"schema":1}\n   ', None),
    ],
)
def test_read_body_never_shows_the_header(home, content, expected) -> None:
    memoir = make_memoir(home)
    path = archive(home, "s", b"x")
    summary_file(path).write_text(content)
    assert read_summary_body(summaries_of(memoir), memoir.store, "s") == expected
    assert read_summary_body(summaries_of(memoir), memoir.store, "missing") is None


def test_counts_and_problems(home) -> None:
    memoir = make_memoir(home)
    now = datetime.fromtimestamp(NOW_MS / 1000, tz=UTC)
    for sid in ("ok", "grown-idle", "grown-active", "pending", "bad", "dead", "empty"):
        start = now - timedelta(minutes=5) if sid == "grown-active" else None
        memoir.store.index_file(archive(home, sid, conversation(sid, 3, start=start)))
    model = ScriptedModel(default="S.")
    run_pass(memoir, limit=10, now_ms=NOW_MS + 2 * HOUR_MS, model=model)
    archive_dir = home / "archive"
    for sid in ("grown-idle", "grown-active"):
        append(next(archive_dir.glob(f"*/{sid}.jsonl")), b"\n")
    next(archive_dir.glob("*/pending-summary.txt")).unlink()
    next(archive_dir.glob("*/empty-summary.txt")).write_text("")
    next(archive_dir.glob("*/bad-summary.txt")).write_text(
        '__ERRORED__\n{"attempts":2,"lastAttempt":1}\nboom\n'
    )
    next(archive_dir.glob("*/dead-summary.txt")).write_text(
        '__ERRORED__\n{"attempts":5,"lastAttempt":1}\nboom\n'
    )
    counts = summary_counts(
        summaries_of(memoir), SummaryPolicy.from_settings(memoir.settings), now_ms=NOW_MS
    )
    assert counts == {
        "summarized": 1,
        "stale": 2,
        "pending": 1,
        "errored": 1,
        "given_up": 1,
        "empty": 1,
    }
    problems = summary_problems(
        summaries_of(memoir), SummaryPolicy.from_settings(memoir.settings), now_ms=NOW_MS
    )
    assert len(problems) == 3
    assert problems[0].startswith("errored summary: ") and "bad" in problems[0]
    assert "boom" in problems[0]
    assert "dead" in problems[1] and "given up" in problems[1]
    assert "grown-idle" in problems[2] and "stale" in problems[2]


def test_given_up_after_failures_is_counted(home) -> None:
    memoir = make_memoir(home, summary_max_attempts=1)
    memoir.store.index_file(archive(home, "x", conversation("x", 3)))
    run_pass(memoir, limit=10, now_ms=NOW_MS, model=ScriptedModel([Transient("t")]))
    assert (
        summary_counts(
            summaries_of(memoir), SummaryPolicy.from_settings(memoir.settings), now_ms=NOW_MS
        )["given_up"]
        == 1
    )
    state = parse_summary_file(next((home / "archive").glob("*/x-summary.txt")).read_text())
    assert state.failure is not None and state.failure.attempts == 1


def test_forget_removes_file_and_row(home) -> None:
    from memoir.summaries.persist import forget_summary

    from .helpers import PROJECT

    memoir = make_memoir(home)
    path = archive(home, "gone", b"x")
    summary_file(path).write_text("private summary")
    memoir.store.session_rows["api-gone"] = Session("api-gone", "p", Harness.API)
    save_summary(summaries_of(memoir), memoir.store, "api-gone", "private row", model=None)
    assert read_summary_body(summaries_of(memoir), memoir.store, "api-gone") == "private row"

    assert (
        forget_summary(memoir.settings.archive_dir, memoir.store.summaries, "gone", PROJECT) is True
    )
    assert (
        forget_summary(memoir.settings.archive_dir, memoir.store.summaries, "api-gone", "p") is True
    )
    assert not summary_file(path).exists()
    assert read_summary_body(summaries_of(memoir), memoir.store, "gone") is None
    assert read_summary_body(summaries_of(memoir), memoir.store, "api-gone") is None
    assert (
        forget_summary(memoir.settings.archive_dir, memoir.store.summaries, "gone", PROJECT)
        is False
    )
    assert (
        forget_summary(memoir.settings.archive_dir, memoir.store.summaries, "api-gone", "p")
        is False
    )
