"""`memoir memories …` on the demo corpus: projects and session prefixes resolved (or
refused), forget asks (an empty answer is no), file errors name the path, export to
stdout, bounded numbers, the context query checked, --as-of takes a day whole."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path

import pytest
from typer.testing import CliRunner

import memoir.cli.cmd_memories
import memoir.cli.cmd_sync  # noqa: F401
from cli_run import synced_runner
from memoir.cli.app import app
from memoir.errors import UsageError

WEBSHOP = "3f2a9c1e-5b7d-4e8a-9c0f-1a2b3c4d5e01"


@pytest.fixture
def cli(home: Path, monkeypatch: pytest.MonkeyPatch) -> CliRunner:
    return synced_runner(home, monkeypatch)


def _json(cli: CliRunner, *args: str) -> dict:
    result = cli.invoke(app, list(args))
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


def _items(cli: CliRunner, *args: str) -> list[dict]:
    return _json(cli, "memories", "list", "--json", *args)["items"]


def test_off_by_a_project_short_name_stops_extraction(cli: CliRunner) -> None:
    done = cli.invoke(app, ["memories", "off", "--project", "webshop"])
    assert done.exit_code == 0 and "-home-ann-code-webshop" in done.output
    denied = _json(cli, "remember", WEBSHOP[:8], "--json")
    assert (denied["outcome"], denied["items"]) == ("policy_denied", [])
    unknown = cli.invoke(app, ["memories", "on", "--project", "nosuch"])
    assert unknown.exit_code != 0 and "no project 'nosuch'" in str(unknown.exception)
    assert cli.invoke(app, ["memories", "on", "--project", "webshop"]).exit_code == 0


def test_forget_resolves_a_project_and_refuses_an_unknown_one(cli: CliRunner) -> None:
    _json(cli, "remember", WEBSHOP[:8], "--json")
    assert _items(cli, "--project", "webshop")
    gone = _json(cli, "memories", "forget", "--project", "webshop", "--yes", "--json")
    assert gone["forgotten"] and not _items(cli, "--project", "webshop")
    bad = cli.invoke(app, ["memories", "forget", "--project", "nosuch", "--yes"])
    assert bad.exit_code != 0 and "no project" in str(bad.exception)


def test_forget_asks_for_an_id_too_and_no_answer_is_no(cli: CliRunner) -> None:
    (first, *_) = _json(cli, "remember", WEBSHOP[:8], "--json")["items"]
    eof = cli.invoke(app, ["memories", "forget", first["id"][:8]], input="")
    assert eof.exit_code == 1 and "Nothing forgotten" in eof.output
    assert len(_items(cli)) == 2
    yes = cli.invoke(app, ["memories", "forget", first["id"][:8]], input="y\n")
    assert yes.exit_code == 0 and "Forgot" in yes.output and len(_items(cli)) == 1
    nosuch = cli.invoke(app, ["memories", "forget", "--session", "nosuch"], input="y\n")
    assert nosuch.exit_code == 1 and "Forget" not in nosuch.output  # checked before asking


def test_remember_after_forgetting_says_so(cli: CliRunner) -> None:
    _json(cli, "remember", WEBSHOP[:8], "--json")
    _json(cli, "memories", "forget", "--session", WEBSHOP[:8], "--yes", "--json")
    again = cli.invoke(app, ["remember", WEBSHOP[:8]])
    assert again.exit_code == 0 and "forgotten since" in again.output
    assert "Nothing to remember: remembered" not in again.output


def test_list_and_receipts_take_a_session_prefix_and_check_the_kind(cli: CliRunner) -> None:
    _json(cli, "remember", WEBSHOP[:8], "--json")
    assert len(_items(cli, "--session", WEBSHOP[:4])) == 2
    receipts = _json(cli, "memories", "receipts", "--session", WEBSHOP[:6], "--json")
    assert len(receipts["receipts"]) == 1
    bogus = cli.invoke(app, ["memories", "list", "--kind", "bogus"])
    assert isinstance(bogus.exception, UsageError)  # exit 2 through `memoir`
    none = cli.invoke(app, ["memories", "list", "--kind", "plan"])
    assert none.exit_code == 0 and "No memories match" in none.output


def test_numbers_and_ids_out_of_any_range(cli: CliRunner) -> None:
    _json(cli, "remember", WEBSHOP[:8], "--json")
    huge = str(10**20)
    assert len(_json(cli, "memories", "context", "--budget", huge, "--json")["items"]) == 2
    assert len(_items(cli, "--limit", huge)) == 2
    long_id = cli.invoke(app, ["memories", "show", "a" * 100_000])
    assert long_id.exit_code == 1 and "no memory item" in str(long_id.exception)
    assert len(str(long_id.exception)) < 200
    quote = cli.invoke(app, ["memories", "context", "--query", '"'])
    assert isinstance(quote.exception, UsageError)


def test_import_and_export_file_errors_name_the_path(cli: CliRunner, tmp_path: Path) -> None:
    _json(cli, "remember", WEBSHOP[:8], "--json")
    out = cli.invoke(app, ["memories", "export", "--out", "-"])
    assert out.exit_code == 0 and len(out.stdout.splitlines()) == 2
    assert not Path("-").exists()
    missing = tmp_path / "nope.jsonl"
    for path, why in (
        (missing, "no such file"),
        (tmp_path, "it is a folder"),
    ):
        got = cli.invoke(app, ["memories", "import", str(path)])
        assert isinstance(got.exception, UsageError) and str(path) in str(got.exception)
        assert why in str(got.exception)
    latin = tmp_path / "latin.jsonl"
    latin.write_bytes(b"\xff\xfe")
    got = cli.invoke(app, ["memories", "import", str(latin)])
    assert isinstance(got.exception, UsageError) and "not UTF-8" in str(got.exception)
    bom = tmp_path / "bom.jsonl"
    bom.write_bytes(b"\xef\xbb\xbf" + out.stdout.encode())
    assert _json(cli, "memories", "import", str(bom), "--json")["already"] == 2
    nowhere = cli.invoke(app, ["memories", "export", "--out", str(missing / "x.jsonl")])
    assert isinstance(nowhere.exception, UsageError) and str(missing / "x.jsonl") in str(
        nowhere.exception
    )
    assert ".tmp" not in str(nowhere.exception)


def test_as_of_a_day_is_taken_whole() -> None:
    from memoir.cli.cmd_memories import _when
    from memoir.cli.cmd_summarize import _nothing_message

    assert _when("2025-10-15") == datetime(2025, 10, 16, tzinfo=UTC)
    assert _nothing_message("not_applicable", "", 0) == "Nothing to remember: not applicable."
