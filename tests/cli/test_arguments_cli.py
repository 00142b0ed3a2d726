"""Arguments probed by QA: option values and queries that start with ``-``, an empty
session id, the query hint of each command, extreme dates, and a pipe closed early."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from cli_run import run_cli
from memoir.cli.conventions import dash_query

KNOWN = {"--project", "-p", "--limit", "-n", "--json", "--help", "--debug"}
VALUED = {"--project", "-p", "--limit", "-n"}
WEBSHOP = "-home-ann-code-webshop"  # a project name as the index stores it


@pytest.fixture
def synced(home: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> Path:
    from memoir.demo.make_corpus import corpus_sources

    monkeypatch.setenv("MEMOIR_HOME", str(home))
    monkeypatch.setenv("MEMOIR_SOURCES", os.pathsep.join(str(p) for p in corpus_sources()))
    assert run_cli(["sync", "--no-summaries", "--json"], capsys)[0] == 0
    return home


@pytest.mark.parametrize(
    ("argv", "expected"),
    [
        # one argument holding a space is no option: the query
        (["search", "--flag foo"], ["search", "--", "--flag foo"]),
        (["search", "--flag foo", "-n", "3"], ["search", "-n", "3", "--", "--flag foo"]),
        # a bare unknown --word stays an option: the parser refuses it, with a hint
        (["search", "--flag"], ["search", "--flag"]),
        (["search", "--jsn", "x"], ["search", "--jsn", "x"]),
        (["search", "--project=a b", "x"], ["search", "--project=a b", "x"]),
    ],
)
def test_dash_query_table(argv: list[str], expected: list[str]) -> None:
    assert dash_query(argv, KNOWN, VALUED) == expected


@pytest.mark.parametrize(
    "argv",
    [
        ["memories", "list", "--project", WEBSHOP],
        ["memories", "list", f"--project={WEBSHOP}"],
        ["memories", "context", "--project", WEBSHOP],
        ["memories", "off", "--project", WEBSHOP],
        ["memories", "on", "--project", WEBSHOP],
        ["memories", "forget", "--project", WEBSHOP, "--yes"],
        ["memories", "forget", "--matching", "-python", "--yes"],
        ["search", "coupon", "--project", WEBSHOP],
        ["memories", "search", "coupon", "--project", WEBSHOP],
    ],
)
def test_an_option_value_starting_with_a_dash_is_taken(
    synced: Path, argv: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    code, _, err = run_cli(argv, capsys)
    assert "No such option" not in err
    assert code == 0, err


def test_an_unknown_option_names_its_own_help_page(
    synced: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, _, err = run_cli(["memories", "list", "--projekt", WEBSHOP], capsys)
    assert code == 2 and "`memoir memories list --help`" in err


@pytest.mark.parametrize(
    ("argv", "says"),
    [
        (["search", "--flag"], "put the query after --: `memoir search -- --flag`"),
        (["memories", "search", "--flag"], "`memoir memories search -- --flag`"),
    ],
)
def test_a_dashed_word_that_is_no_option_says_how_to_search_for_it(
    synced: Path, argv: list[str], says: str, capsys: pytest.CaptureFixture[str]
) -> None:
    code, _, err = run_cli(argv, capsys)
    assert code == 2 and "No such option: --flag" in err and says in err


def test_a_query_after_double_dash_and_one_with_a_space_are_searched(
    synced: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    for argv in (["search", "--", "--flag"], ["search", "--flag coupon", "--json"]):
        code, _, err = run_cli(argv, capsys)
        assert code == 0, err


@pytest.mark.parametrize("ref", ["", "  "])
def test_an_empty_session_id_is_a_usage_error(
    synced: Path, ref: str, capsys: pytest.CaptureFixture[str]
) -> None:
    code, _, err = run_cli(["show", ref], capsys)
    assert code == 2 and "the session id is empty" in err


@pytest.mark.parametrize(
    ("argv", "hint"),
    [
        (["search", '"'], "give a word, a phrase in quotes, or -word to exclude one"),
        (["memories", "search", '"'], "give a word"),
        (["memories", "context", "--query", '"'], "give a word"),
    ],
)
def test_the_empty_query_hint_fits_the_command(
    synced: Path, argv: list[str], hint: str, capsys: pytest.CaptureFixture[str]
) -> None:
    code, _, err = run_cli(argv, capsys)
    assert code == 2 and err.rstrip().endswith(hint), err


@pytest.mark.parametrize(
    ("argv", "code", "says"),
    [
        (["search", "coupon", "--before", "9999-12-31", "--json"], 0, ""),
        (["search", "coupon", "--before", "9999-12", "--json"], 0, ""),
        (["search", "coupon", "--before", "in 9999", "--json"], 0, ""),
        (["search", "coupon", "--after", "9999-12-31T23:59:59-10:00"], 2, "date out of range"),
        (["search", "coupon", "--before", "0001-01-01T00:00:00+14:00"], 2, "date out of range"),
        (["memories", "search", "coupon", "--as-of", "9999-12-31"], 0, ""),
        (["memories", "search", "coupon", "--as-of", "-1"], 2, "'-1' is not a date"),
        (["memories", "search", "coupon", "--as-of", "12"], 2, "'12' is not a date"),
    ],
)
def test_extreme_dates_are_taken_or_refused_in_one_line(
    synced: Path, argv: list[str], code: int, says: str, capsys: pytest.CaptureFixture[str]
) -> None:
    got, _, err = run_cli(argv, capsys)
    assert got == code, err
    assert says in err and "Traceback" not in err and "internal" not in err


def test_json_into_a_pipe_closed_early_exits_as_sigpipe(tmp_path: Path) -> None:
    """A big document into ``head -c 10``: exit 141, as a program killed by SIGPIPE, even
    with an unbuffered stdout (which drops what one big write could not hand over)."""
    code = "from memoir.cli.app import print_json; print_json(['x' * 100] * 20_000)"
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    writer = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, env=env)
    assert writer.stdout is not None
    head = writer.stdout.read(10)
    writer.stdout.close()
    assert writer.wait(timeout=60) == 141 and head == b'[\n  "xxxxx'
    json.dumps(head.decode())  # what was read is the start of the document
