"""Small faults found probing the CLI (issue 24, item 5): one JSON reader for sync and
compact (deep nesting, the line a JSON Lines file breaks on), a query that starts with
``-``."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from cli_run import run_cli
from memoir.cli.conventions import dash_query

KNOWN = {"--project", "-p", "--limit", "-n", "--json", "--help", "--debug"}
VALUED = {"--project", "-p", "--limit", "-n"}


@pytest.mark.parametrize(
    ("argv", "expected"),
    [
        (["search", "-prisma"], ["search", "--", "-prisma"]),
        (["search", "-prisma", "--limit", "3"], ["search", "--limit", "3", "--", "-prisma"]),
        (["search", "-p", "web", "deploy"], ["search", "-p", "web", "deploy"]),
        (["search", "deploy", "-n", "3"], ["search", "deploy", "-n", "3"]),
        (["search", "--", "-x"], ["search", "--", "-x"]),
        (["search", "-a", "-b", "--json"], ["search", "-a", "-b", "--json"]),  # 2 chars: options
        (["search", "-foo", "-bar"], ["search", "--", "-foo -bar"]),
        (["search", "orm", "-prisma", "-p", "web"], ["search", "-p", "web", "--", "orm -prisma"]),
        (["search", "--project=-odd", "-prisma"], ["search", "--project=-odd", "--", "-prisma"]),
        (["search", "-p", "-web", "x"], ["search", "-p", "-web", "x"]),  # an option's value
    ],
)
def test_a_dash_word_that_is_no_option_is_the_query(argv: list[str], expected: list[str]) -> None:
    assert dash_query(argv, KNOWN, VALUED) == expected


def test_search_dash_word_through_the_entry_point(
    home: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from memoir.demo.make_corpus import corpus_sources

    monkeypatch.setenv("MEMOIR_HOME", str(home))
    monkeypatch.setenv("MEMOIR_SOURCES", ":".join(str(p) for p in corpus_sources()))
    assert run_cli(["sync", "--no-summaries", "--json"], capsys)[0] == 0
    code, out, err = run_cli(["search", "-prisma", "--json"], capsys)
    assert code == 0, err  # before: `-p risma` and "Missing argument 'QUERY'" (exit 2)
    assert json.loads(out) == []  # an exclusion alone matches nothing
    code, out, _ = run_cli(["search", "coupon", "-prisma", "--json"], capsys)
    assert code == 0 and json.loads(out)  # the word found, the exclusion applied


def test_compact_reads_as_sync_does(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    deep = tmp_path / "deep.json"
    deep.write_text("[" * 100_000 + "]" * 100_000)
    code, _, err = run_cli(["compact", str(deep), "--window", "8000"], capsys)
    assert code == 1 and "line 1: depth limit exceeded" in err
    assert "RecursionError" not in err
    broken = tmp_path / "broken.jsonl"
    broken.write_text(json.dumps({"role": "user", "content": "hi"}) + "\n{garbage\n")
    code, _, err = run_cli(["compact", str(broken), "--window", "8000"], capsys)
    assert code == 1 and "(line 2:" in err


PROJECTS = [
    ("-home-ann-code-webshop", "/home/ann/code/webshop"),
    ("-home-ann-code-infra", "/home/ann/code/infra"),
    ("-home-bob-infra", "/home/bob/infra"),
    ("support", None),
]


@pytest.mark.parametrize(
    ("ref", "expected"),
    [
        ("-home-ann-code-webshop", ["-home-ann-code-webshop"]),  # its name
        ("/home/ann/code/webshop", ["-home-ann-code-webshop"]),  # its folder
        ("/home/ann/code/webshop/", ["-home-ann-code-webshop"]),
        ("webshop", ["-home-ann-code-webshop"]),  # the folder's last part
        ("infra", ["-home-ann-code-infra", "-home-bob-infra"]),  # two: ambiguous
        ("/home/bob/infra", ["-home-bob-infra"]),
        ("support", ["support"]),
        ("shop", []),  # a part of a word is not a name
        ("/nowhere/webshop", []),
    ],
)
def test_a_project_is_named_by_its_name_folder_or_last_part(ref: str, expected: list[str]) -> None:
    from memoir.search.request import project_matches

    assert project_matches(PROJECTS, ref) == expected


def test_project_flag_takes_the_folder_and_its_last_part(
    home: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from memoir.demo.make_corpus import corpus_sources

    monkeypatch.setenv("MEMOIR_HOME", str(home))
    monkeypatch.setenv("MEMOIR_SOURCES", ":".join(str(p) for p in corpus_sources()))
    assert run_cli(["sync", "--no-summaries", "--json"], capsys)[0] == 0
    results = []
    for ref in ("-home-ann-code-webshop", "/home/ann/code/webshop", "webshop"):
        code, out, err = run_cli(["search", "coupon", "--project", ref, "--json"], capsys)
        assert code == 0, err
        results.append([h["exchange_id"] for h in json.loads(out)])
    assert results[0] and results[0] == results[1] == results[2]
    code, _, err = run_cli(["search", "coupon", "--project", "nowhere"], capsys)
    assert code == 1 and "no project 'nowhere'" in err
