"""`memoir search` and `memoir embed` through the CLI entry point."""

from __future__ import annotations

import io
import json
from pathlib import Path
from types import SimpleNamespace

import pytest
from search_corpus import HOSTILE, fill

from memoir.cli.app import main
from memoir.config import Settings
from memoir.errors import MemoirError
from memoir.ingest.archive import embed_lock
from memoir.model import Harness, Session, SessionFlags
from memoir.store import open_store
from memoir.store.parts import SessionsPart


@pytest.fixture
def cli_home(home: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("MEMOIR_HOME", str(home))
    store = open_store(Settings.from_env({"MEMOIR_HOME": str(home)}, sources=()))
    try:
        fill(store)
    finally:
        store.close()
    return home


def run(args: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    try:
        main(args)
        code = 0
    except SystemExit as exc:
        code = int(exc.code or 0)
    out = capsys.readouterr()
    return code, out.out, out.err


def test_search_json(cli_home: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run(["search", "sqlite lock", "--json", "--mode", "text"], capsys)
    assert code == 0, err
    hits = json.loads(out)
    assert hits[0]["exchange_id"] == "s-web:1"
    assert hits[0]["project"] == "web"
    assert hits[0]["timestamp"].startswith("2024-05-01")
    assert hits[0]["summary"] is None
    # plain text in JSON: the matches are character spans, not control-character marks
    snippet, spans = hits[0]["snippet"], hits[0]["highlights"]
    assert "\x02" not in snippet and "\x03" not in snippet and spans
    assert {snippet[a:b].lower() for a, b in spans} <= {"sqlite", "lock", "locked", "locks"}
    assert set(hits[0]) == {
        "session_id",
        "exchange_id",
        "timestamp",
        "project",
        "score",
        "snippet",
        "highlights",
        "summary",
    }


def test_search_filters_from_the_command_line(
    cli_home: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    args = ["search", "sqlite lock", "--json", "--mode", "text"]
    _, out, _ = run([*args, "--include-subagents", "--after", "2024-05-02"], capsys)
    assert {h["session_id"] for h in json.loads(out)} == {"s-sub"}
    _, out, _ = run([*args, "--include-subagents", "--before", "2024-05-01"], capsys)
    assert {h["session_id"] for h in json.loads(out)} == {"s-web"}  # the day is included
    _, out, _ = run([*args, "--project", "api"], capsys)
    assert json.loads(out) == []
    _, out, _ = run([*args, "--role", "tool", "--limit", "1"], capsys)
    assert [h["exchange_id"] for h in json.loads(out)] == ["s-web:1"]


def test_terminal_view_is_readable(cli_home: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(["search", "dark mode"], capsys)
    assert code == 0
    assert "2024-05-01" in out and "web" in out and "s-web:6" in out
    assert "dark" in out.lower() and "\x02" not in out and "\x03" not in out


def test_no_matches_message(cli_home: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(["search", "xylophone"], capsys)
    assert code == 0 and "no matches" in out


@pytest.mark.parametrize("query", HOSTILE[:-2])
def test_hostile_queries_through_the_cli(
    cli_home: Path, capsys: pytest.CaptureFixture[str], query: str
) -> None:
    from memoir.store.search_text import words_of

    code, out, err = run(["search", "--json", "--", query], capsys)
    assert "Traceback" not in err
    if words_of(query):
        assert code == 0, err
        assert isinstance(json.loads(out), list)
    else:  # nothing to search for is a bad argument (exit 2), said as JSON under --json
        assert (code, out) == (2, "")
        assert json.loads(err)["error"]["code"] == "usage"


@pytest.mark.parametrize(
    ("query", "says"),
    [
        ("", "error: QUERY '' has no words to search for"),
        ("  !!! ", "error: QUERY '  !!! ' has no words to search for"),
        ("zebra-unicorn-xyzzy", "no matches for 'zebra-unicorn-xyzzy'"),
        ("zebraxyzzy\\", "no matches for 'zebraxyzzy\\'"),  # one backslash, as typed
        ("[bold]zebraxyzzy", "no matches for '[bold]zebraxyzzy'"),  # not read as markup
    ],
)
def test_an_empty_query_is_told_apart_from_no_matches(
    cli_home: Path, capsys: pytest.CaptureFixture[str], query: str, says: str
) -> None:
    code, out, err = run(["search", "--mode", "text", "--", query], capsys)
    if says.startswith("error:"):  # a usage error (exit 2), on stderr
        assert (code, out) == (2, "") and err.startswith(says)
    else:
        assert (code, out.strip(), err) == (0, says, "")


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        (["--after", "the tuesday after never"], "--after"),
        (["--before", "2024-13-40"], "--before"),
        (["--mode", "vector"], "MEMOIR_EMBEDDER=none switches off"),  # not "install it"
        (["--mode", "hybrid"], "MEMOIR_EMBEDDER=none switches off"),
    ],
)
def test_bad_options_are_one_line_errors(
    cli_home: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    args: list[str],
    needle: str,
) -> None:
    monkeypatch.setenv("MEMOIR_EMBEDDER", "none")
    code, _, err = run(["search", "sqlite", *args], capsys)
    assert code != 0
    assert needle in err and "Traceback" not in err
    assert err.strip().count("\n") <= 1


def test_embed_then_vector_search_with_the_hash_embedder(
    cli_home: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("MEMOIR_EMBEDDER", "hash")
    code, out, err = run(["embed", "--json"], capsys)
    assert code == 0, err
    assert json.loads(out) == {"model": "hash-256", "embedded": 6, "complete": True}
    _, out, _ = run(["embed", "--json"], capsys)
    assert json.loads(out)["embedded"] == 0
    _, out, _ = run(["search", "payment service", "--mode", "vector", "--json"], capsys)
    assert json.loads(out)[0]["exchange_id"] == "s-api:1"


def test_embed_waits_for_nothing_while_another_embeds(
    cli_home: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("MEMOIR_EMBEDDER", "hash")
    with embed_lock(cli_home):
        code, out, err = run(["embed", "--json"], capsys)
        assert code == 0, err
        assert json.loads(out) == {"busy": True, "embedded": 0}
        code, out, _ = run(["embed"], capsys)
        assert code == 0 and "another memoir embed is running" in out
    _, out, _ = run(["embed", "--json"], capsys)  # the lock let go: the work is all there
    assert json.loads(out)["embedded"] == 6


def test_embed_says_when_semantic_search_is_off(
    cli_home: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("MEMOIR_EMBEDDER", "none")
    code, out, err = run(["embed"], capsys)
    assert code != 0 and "MEMOIR_EMBEDDER=none" in err and "Traceback" not in err
    assert out == "" and err.count("\n") == 1  # one line, no progress bar drawn before it


def test_embed_piped_prints_its_result_line_and_no_bar(
    cli_home: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    # the bar is for a terminal (on stderr, gone when done, as sync's): a pipe gets the line
    monkeypatch.setenv("MEMOIR_EMBEDDER", "hash")
    code, out, err = run(["embed"], capsys)
    assert (code, out, err) == (0, "embedded 6 exchanges with hash-256\n", "")


def test_session_filter_takes_a_unique_prefix(
    cli_home: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, err = run(
        ["search", "sqlite", "--session", "s-w", "--json", "--mode", "text"], capsys
    )
    assert code == 0, err
    assert {h["session_id"] for h in json.loads(out)} == {"s-web"}
    code, _, err = run(["search", "sqlite", "--session", "s-", "--mode", "text"], capsys)
    assert code == 1 and "matches" in err and "sessions" in err  # ambiguous: said, not guessed
    code, _, err = run(["search", "sqlite", "--session", "zzz", "--mode", "text"], capsys)
    assert code == 1 and "no session 'zzz'" in err


def test_hint_when_vectors_are_missing(
    cli_home: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("MEMOIR_EMBEDDER", "hash")
    code, out, err = run(["search", "sqlite lock"], capsys)
    assert code == 0 and "s-web:1" in out
    assert "memoir embed" in err
    run(["embed", "--json"], capsys)
    _, out, err = run(["search", "sqlite lock"], capsys)
    assert "memoir embed" not in err


def test_a_session_prefix_names_the_main_session_before_its_subagents() -> None:
    def session(sid: str, sub: bool = False) -> Session:
        return Session(sid, "p", Harness.CLAUDE_CODE, flags=SessionFlags(subagent=sub))

    sessions = [session("341ef40b-1"), session("341ef40b-1-agent-a", True), session("9a-x")]
    store = SimpleNamespace(
        sessions=SimpleNamespace(
            get=lambda sid, user=None: next(
                (s for s in sessions if s.id == sid and user in (None, s.user)), None
            ),
            with_prefix=lambda prefix, user=None: sorted(
                (s for s in sessions if s.id.startswith(prefix) and user in (None, s.user)),
                key=lambda s: s.id,
            ),
        )
    )
    assert (
        SessionsPart.resolve(store.sessions, "341ef40b") == "341ef40b-1"
    )  # not "matches 2 sessions"
    assert SessionsPart.resolve(store.sessions, "341ef40b-1-agent") == "341ef40b-1-agent-a"
    sessions.append(session("341ef40b-2"))
    with pytest.raises(MemoirError, match="matches 3 sessions") as caught:
        SessionsPart.resolve(store.sessions, "341ef40b")
    assert "(341ef40b-1, 341ef40b-1-agent-a, 341ef40b-2)" in str(caught.value)
    sessions.extend(session(f"341ef40b-{n}") for n in range(3, 9))
    with pytest.raises(MemoirError, match=r"matches 9 sessions \(341ef40b-1, .*, …\)"):
        SessionsPart.resolve(store.sessions, "341ef40b")


def test_filters_say_what_is_wrong_instead_of_finding_nothing(
    cli_home: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    base = ["search", "sqlite", "--mode", "text"]
    code, _, err = run([*base, "--harness", "claude"], capsys)
    assert code == 2 and "claude-code" in err  # the valid values are listed
    code, _, err = run([*base, "--project", "nope"], capsys)
    assert code == 1 and "no project 'nope'" in err
    code, _, err = run([*base, "--after", "2024-06-01", "--before", "2024-05-01"], capsys)
    assert code == 2 and "date range is empty" in err


def test_before_a_datetime_includes_that_instant(
    cli_home: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    args = ["search", "sqlite database lock", "--json", "--mode", "text"]
    _, out, _ = run(args, capsys)
    first = next(h for h in json.loads(out) if h["exchange_id"] == "s-web:1")
    stamp = first["timestamp"]
    _, out, _ = run([*args, "--before", stamp, "--after", stamp], capsys)
    assert [h["exchange_id"] for h in json.loads(out)] == ["s-web:1"]
    _, out, _ = run([*args, "--before", "20240501"], capsys)  # a compact date is a day too
    assert "s-web:1" in [h["exchange_id"] for h in json.loads(out)]


def test_embed_on_a_terminal_draws_its_bar_on_stderr(
    cli_home: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    from rich.console import Console

    from memoir.cli import cmd_sync as cmd_embed

    terminal = io.StringIO()
    monkeypatch.setattr(cmd_embed, "err_console", Console(file=terminal, force_terminal=True))
    monkeypatch.setenv("MEMOIR_EMBEDDER", "hash")
    code, out, _ = run(["embed"], capsys)
    assert (code, out) == (0, "embedded 6 exchanges with hash-256\n")
    assert "embedding" in terminal.getvalue() and "6/6" in terminal.getvalue()
