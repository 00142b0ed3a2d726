"""Errors and help as a newcomer meets them (issue 25, items 8, 9, 13, 14), through the real
entry point: bad values as plain sentences naming the flag, JSON errors under ``--json``,
``search ""`` a usage error, dates in words, a help list in the order a user works, flags
without ``<bool>``, ``memoir config`` naming the variables users set."""

from __future__ import annotations

import inspect
import json
from pathlib import Path

import pytest

import memoir.config
from cli_run import run_cli
from memoir.cli.conventions import (
    COMMAND_ORDER,
    error_code,
    ordered,
    plain_reason,
    short_help,
    wants_json,
)
from memoir.errors import ConfigError, NotFound, ReadOnly, UsageError


@pytest.fixture(scope="module")
def synced(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The demo corpus synced once (no summaries) into a home of this module's own."""
    from memoir.app import Memoir
    from memoir.config import Settings
    from memoir.demo.make_corpus import corpus_sources

    home = tmp_path_factory.mktemp("errors-help") / "home"
    home.mkdir()
    settings = Settings.from_env({"MEMOIR_HOME": str(home)}, sources=tuple(corpus_sources()))
    with Memoir.open(settings) as memoir:
        memoir.sync()
    return home


@pytest.fixture
def on_demo(synced: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("MEMOIR_HOME", str(synced))
    return synced


@pytest.mark.parametrize(
    ("message", "value", "plain"),
    [
        ("Input should be greater than or equal to 1", "0", "must be 1 or more, not '0'"),
        ("Input should be greater than or equal to 0", None, "must be 0 or more"),
        ("Input should be less than or equal to 1000", "5000", "must be 1000 or less, not '5000'"),
        ("Input should be greater than 0", None, "must be more than 0"),
        (
            "Input should be a valid integer, unable to parse string as an integer",
            "x",
            "must be a whole number, not 'x'",
        ),
        ("Input should be a valid number, unable to parse", None, "must be a number"),
        (
            "Value error, 'foo' is not one of 'text', 'vector', 'hybrid'.",
            "foo",
            "must be one of text, vector, hybrid, not 'foo'",
        ),
        ("Value error, something odd", None, "something odd"),
        ("Folder x is a file.", None, "folder x is a file."),
    ],
)
def test_plain_reason(message: str, value: str | None, plain: str) -> None:
    assert plain_reason(message, value) == plain


@pytest.mark.parametrize(
    ("argv", "expected"),
    [
        (["search", "x", "--json"], True),
        (["search", "--", "--json"], False),  # a query word after --
        (["stats"], False),
    ],
)
def test_wants_json(argv: list[str], expected: bool) -> None:
    assert wants_json(argv) is expected


@pytest.mark.parametrize(
    ("error", "code"),
    [
        (NotFound("x"), "not_found"),
        (ConfigError("x"), "config"),
        (UsageError("x"), "usage"),
        (ReadOnly("x"), "read_only"),
        (ValueError("x"), "internal"),
    ],
)
def test_error_code(error: Exception, code: str) -> None:
    assert error_code(error) == code


BAD_VALUES = [
    (["search", "x", "--limit", "0"], "--limit must be 1 or more, not '0'"),
    (["search", "x", "-n", "abc"], "--limit must be a whole number, not 'abc'"),
    (["search", "x", "--mode", "foo"], "--mode must be one of text, vector, hybrid, not 'foo'"),
    (["show", "x", "--context", "-1"], "--context must be 0 or more, not '-1'"),
    (["memories", "search", "x", "--limit", "0"], "--limit must be 1 or more, not '0'"),
    (["compact", "f.json", "--window", "0"], "--window must be 1 or more, not '0'"),
    (
        ["bench", "locomo", ".", "--embedder", "foo"],
        "--embedder must be one of auto, none, e5, minilm, hash, not 'foo'",
    ),
    (
        ["summarize", "x", "--full", "--incremental"],
        "--full and --incremental cannot be used together",
    ),
    (["search", ""], "QUERY '' has no words to search for"),
    (["memories", "search", "   "], "QUERY '   ' has no words to search for"),
    (["search", "x", "--after", "blah"], "--after: 'blah' is not a date"),
    (["search", "x", "--after", "2026-13-01"], "--after: '2026-13-01' is not a date"),
    (["search", "x", "--after", "2026-05-02", "--before", "2026-05-01"], "the date range is empty"),
    (["memories", "search", "x", "--as-of", "blah"], "--as-of: 'blah' is not a date"),
]


@pytest.mark.parametrize(("argv", "says"), BAD_VALUES)
def test_a_bad_value_is_one_plain_line_naming_the_flag(
    on_demo: Path, capsys: pytest.CaptureFixture[str], argv: list[str], says: str
) -> None:
    code, out, err = run_cli(argv, capsys)
    assert code == 2 and out == ""
    assert err.startswith("error: ") and says in err
    assert err.count("\n") == 1  # one line
    for machine_words in ("Input should", "Value error", "Usage:", "Traceback", "MEMOIR_EMBEDDER"):
        assert machine_words not in err


@pytest.mark.parametrize(("argv", "says"), BAD_VALUES)
def test_under_json_an_error_is_json_on_stderr_with_the_same_status(
    on_demo: Path, capsys: pytest.CaptureFixture[str], argv: list[str], says: str
) -> None:
    code, out, err = run_cli([*argv, "--json"], capsys)
    assert (code, out) == (2, "")
    document = json.loads(err)
    assert document["error"]["code"] == "usage"  # a bad argument, not a bad MEMOIR_* setting
    assert says in document["error"]["message"]


@pytest.mark.parametrize(
    ("argv", "code", "status"),
    [
        (["show", "no-such-session", "--json"], "not_found", 1),
        (["sync", "--no-such-flag", "--json"], "usage", 2),
        (["memories", "show", "999999", "--json"], "not_found", 1),
    ],
)
def test_json_errors_keep_each_status(
    on_demo: Path, capsys: pytest.CaptureFixture[str], argv: list[str], code: str, status: int
) -> None:
    got, out, err = run_cli(argv, capsys)
    assert (got, out) == (status, "")
    assert json.loads(err)["error"]["code"] == code


def test_without_json_errors_stay_text(on_demo: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run_cli(["show", "no-such-session"], capsys)
    assert code == 1 and err.startswith("error: no session") and "{" not in err


@pytest.mark.parametrize(
    ("dates", "found"),
    [
        ([], 2),
        (["--after", "2025-10"], 2),
        (["--before", "2025-10"], 2),  # a month named is the whole month
        (["--before", "2025-09"], 0),
        (["--after", "2025-11"], 0),
        (["--after", "October 2025", "--before", "October 2025"], 2),
        (["--after", "yesterday"], 0),  # the corpus is older than that
        (["--before", "2 weeks ago"], 2),
        (["--after", "2025"], 2),
        (["--before", "2024"], 0),
    ],
)
def test_dates_as_people_type_them(
    on_demo: Path, capsys: pytest.CaptureFixture[str], dates: list[str], found: int
) -> None:
    code, out, err = run_cli(["search", "coupon", "--mode", "text", *dates, "--json"], capsys)
    assert code == 0, err
    hits = json.loads(out)
    assert len(hits) == found
    assert all(h["timestamp"].startswith("2025-10") for h in hits)


def test_memories_as_of_takes_words(on_demo: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run_cli(
        ["memories", "search", "coupon", "--as-of", "yesterday", "--json"], capsys
    )
    assert code == 0, err and json.loads(out)["query"] == "coupon"
    code, _, err = run_cli(["memories", "search", "coupon", "--as-of", "soonish"], capsys)
    assert code == 2 and "--as-of: 'soonish' is not a date" in err


def test_meaning_search_without_the_extra_says_what_is_stored(
    on_demo: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """`memoir stats` counts stored vectors; a search by meaning in a Python without the
    extra says it holds them and how to read them, not only "install it"."""
    from memoir.search import embedders as e5
    from memoir.search import embedders as minilm

    monkeypatch.setenv("MEMOIR_EMBEDDER", "hash")
    assert run_cli(["embed"], capsys)[0] == 0
    monkeypatch.setenv("MEMOIR_EMBEDDER", "auto")
    monkeypatch.setattr(minilm, "minilm_available", lambda: False)
    monkeypatch.setattr(e5, "e5_available", lambda: False)
    code, _, err = run_cli(["search", "coupon", "--mode", "vector"], capsys)
    assert code == 2
    assert "this home holds vectors (hash" in err and "memoir-engine[embeddings]" in err
    assert "--mode text" in err and err.count("\n") == 1


def test_help_lists_commands_in_the_order_a_user_works(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run_cli(["--help"], capsys)
    assert code == 0
    commands = out.split("\nCommands:\n", 1)[1]  # Memoir's own list (memoir.cli.top_help)
    rows = [line.split()[0] for line in commands.splitlines() if line[2:3].strip()]
    listed = [r for r in rows if r in COMMAND_ORDER]
    assert listed[:7] == ["sync", "search", "show", "summarize", "compact", "remember", "memories"]
    assert listed == [c for c in COMMAND_ORDER if c in listed] and len(listed) >= 18


@pytest.mark.parametrize(
    ("names", "expected"),
    [
        (["demo", "zeta", "sync", "alpha", "search"], ["sync", "search", "demo", "alpha", "zeta"]),
        ([], []),
    ],
)
def test_ordered(names: list[str], expected: list[str]) -> None:
    assert ordered(names) == expected


@pytest.mark.parametrize(
    ("doc", "line"),
    [
        ("Show one job.", "Show one job."),
        (
            "Compact a context below window ×\n    RATIO: a summary. Then more.",
            "Compact a context below window × RATIO: a summary.",
        ),
        (
            "Serve (OpenAPI at /openapi.json). Same settings\n as the CLI.\n\nDetails.",
            "Serve (OpenAPI at /openapi.json).",
        ),
        ("Check e.g. this. And that.", "Check e.g. this."),
        (None, ""),
    ],
)
def test_short_help(doc: str | None, line: str) -> None:
    assert short_help(doc) == line


def _every_command() -> list[list[str]]:
    import typer

    from memoir.cli.app import _discover_all, app

    _discover_all()
    paths: list[list[str]] = []

    def walk(command: object, path: list[str]) -> None:
        paths.append(path)
        for name, sub in sorted(getattr(command, "commands", {}).items()):
            walk(sub, [*path, name])

    walk(typer.main.get_command(app), [])
    return paths


def test_no_help_shows_bool_or_breaks_a_description_mid_sentence(
    capsys: pytest.CaptureFixture[str],
) -> None:
    commands = _every_command()
    assert len(commands) > 30
    for path in commands:
        code, out, _ = run_cli([*path, "--help"], capsys)
        assert code == 0, path
        assert "<bool>" not in out, path
        assert "{query}" not in out and "{session}" not in out, path  # arguments upper-case
    from memoir.cli.app import app

    for info in app.registered_commands:
        doc = inspect.getdoc(info.callback) or ""
        assert info.short_help == short_help(doc) and info.short_help.endswith((".", ")")), (
            info.name
        )


def test_hook_help_describes_install_uninstall_status(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run_cli(["hook", "--help"], capsys)
    head = out.split("Options")[0]
    assert code == 0 and all(word in head for word in ("install", "uninstall", "status"))


def test_bench_embedder_help_lists_every_choice(capsys: pytest.CaptureFixture[str]) -> None:
    from memoir.search.embedders import EMBEDDER_CHOICES

    code, out, _ = run_cli(["bench", "locomo", "--help"], capsys)
    flat = " ".join(out.replace("│", " ").split())
    assert code == 0 and all(choice in flat for choice in EMBEDDER_CHOICES)


def test_config_names_the_variables_users_set(
    home: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from dataclasses import fields

    from memoir.cli.cmd_admin import env_name
    from memoir.config import Settings

    monkeypatch.setenv("MEMOIR_HOME", str(home))
    monkeypatch.setenv("MEMOIR_LLM_TIMEOUT_S", "33")
    code, out, _ = run_cli(["config"], capsys)
    assert code == 0
    row = next(line for line in out.splitlines() if "MEMOIR_LLM_TIMEOUT_S" in line)
    assert "33" in row and "env" in row
    assert "llm_timeout_s" not in out.split("MEMOIR_LLM_TIMEOUT_S")[0]
    code, out, _ = run_cli(["config", "--json"], capsys)
    data = json.loads(out)
    assert data["llm_timeout_s"] == {
        "env": "MEMOIR_LLM_TIMEOUT_S",
        "value": 33.0,
        "source": "env MEMOIR_LLM_TIMEOUT_S",
    }
    source = inspect.getsource(memoir.config)  # from_env reads the module's tables of names
    for field in fields(Settings):
        if field.name != "origins":  # every name shown is one from_env reads
            assert f'"{env_name(field.name)}"' in source, field.name


def test_the_library_takes_dates_as_the_cli_does(on_demo: Path) -> None:
    from datetime import UTC, datetime, timedelta

    from memoir.app import Memoir
    from memoir.store.values import SearchFilters

    def ids(hits: list) -> list[str]:  # type: ignore[type-arg]
        return [h.exchange_id for h in hits]

    with Memoir.open() as m:
        everything = ids(m.search("coupon", mode="text"))
        assert len(everything) == 2
        assert (
            ids(m.search("coupon", mode="text", after="2025-10", before="Oct 2025")) == everything
        )
        assert m.search("coupon", mode="text", before="2025-09") == []
        assert m.search("coupon", mode="text", after="yesterday") == []
        # a date given replaces the filters' own; the other filters stay
        late = SearchFilters(after=datetime(2030, 1, 1, tzinfo=UTC), role="assistant")
        found = ids(m.search("coupon", mode="text", filters=late, after="2025"))
        assert found and set(found) <= set(everything)
        assert m.search("coupon", mode="text", filters=late) == []
        today = datetime.now(UTC).replace(hour=0, minute=0, second=0, microsecond=0)
        by_words = m.recall("coupon", as_of="yesterday", history=True)
        assert by_words == m.recall("coupon", as_of=today - timedelta(days=1), history=True)
        with pytest.raises(ConfigError, match="after: 'soon' is not a date"):
            m.search("coupon", after="soon")
