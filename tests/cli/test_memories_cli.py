"""`memoir remember` and `memoir memories …` end to end on the bundled demo corpus."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

import memoir.cli.cmd_memories
import memoir.cli.cmd_read
import memoir.cli.cmd_summarize
import memoir.cli.cmd_sync  # noqa: F401
from cli_run import synced_runner
from memoir.cli.app import app

CODEX = "0199f1a2-3b4c-7d5e-8f6a-7b8c9d0e1f10"
WEBSHOP = "3f2a9c1e-5b7d-4e8a-9c0f-1a2b3c4d5e01"
LONG = "8d0e6b2f-1c3a-4f5e-8a9b-7c6d5e4f3a02"


@pytest.fixture
def cli(home: Path, monkeypatch: pytest.MonkeyPatch) -> CliRunner:
    return synced_runner(home, monkeypatch)


def _json(cli: CliRunner, *args: str) -> dict:
    result = cli.invoke(app, list(args))
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


def test_remember_prints_the_items_with_their_exact_quotes(cli: CliRunner) -> None:
    out = _json(cli, "remember", CODEX[:8], "--json")
    assert out["outcome"] == "remembered"
    (item,) = out["items"]
    assert item["content"] == "We decided to support Python 3.11 and newer only."
    assert item["kind"] == "decision"
    assert item["sources"] == [
        {
            "session_id": CODEX,
            "ordinal": 7,
            "exchange_id": f"{CODEX}:7",
            "quote": "We decided to support Python 3.11 and newer only.",
        }
    ]
    assert out["receipt"]["model"] == "offline" and out["receipt"]["prompt"].startswith(
        "memory-v2+"
    )
    text = cli.invoke(app, ["remember", CODEX[:8]]).output  # the same answer again, plainly
    assert "We decided to support Python 3.11 and newer only." in text


def test_list_show_search_export_and_forget(cli: CliRunner, tmp_path: Path) -> None:
    _json(cli, "remember", WEBSHOP[:8], "--json")
    _json(cli, "remember", CODEX[:8], "--json")
    listed = _json(cli, "memories", "list", "--json")["items"]
    assert len(listed) == 3
    assert {i["kind"] for i in listed} == {"decision", "preference", "constraint"}
    only = _json(cli, "memories", "list", "--kind", "preference", "--json")["items"]
    assert [i["content"] for i in only] == ["I prefer small commits with one fix each."]
    shown = _json(cli, "memories", "show", only[0]["id"][:6], "--json")
    assert shown["sources"][0]["exchange_id"] == f"{WEBSHOP}:12"
    found = _json(cli, "memories", "search", "timezone datetimes", "--json")["items"]
    assert found[0]["kind"] == "constraint" and found[0]["score"] >= found[-1]["score"] > 0
    kinds = _json(cli, "memories", "search", "timezone commits", "--kind", "preference", "--json")
    assert [i["kind"] for i in kinds["items"]] == ["preference"]
    block = _json(cli, "memories", "context", "--budget", "60", "--json")
    assert 0 < block["tokens"] <= 60 and block["left_out"] >= 1
    assert block["text"].splitlines()[1].startswith("- [constraint]")  # constraints first
    full = _json(cli, "memories", "context", "--budget", "800", "--json")
    assert len(full["items"]) == 3 and full["left_out"] == 0
    target = tmp_path / "memories.jsonl"
    assert cli.invoke(app, ["memories", "export", "--out", str(target)]).exit_code == 0
    rows = [json.loads(line) for line in target.read_text().splitlines()]
    assert sorted(r["id"] for r in rows) == sorted(i["id"] for i in listed)
    gone = cli.invoke(app, ["memories", "forget", only[0]["id"], "--yes"])
    assert gone.exit_code == 0 and "Forgot" in gone.output
    assert len(_json(cli, "memories", "list", "--json")["items"]) == 2
    missing = cli.invoke(app, ["memories", "show", only[0]["id"]])
    assert missing.exit_code == 1 and "no memory item" in str(missing.exception)
    asked = cli.invoke(app, ["memories", "forget", "--matching", "timezone"], input="n\n")
    assert asked.exit_code == 1 and len(_json(cli, "memories", "list", "--json")["items"]) == 2
    matched = _json(cli, "memories", "forget", "--matching", "timezone", "--yes", "--json")
    assert [i["content"][:6] for i in matched["forgotten"]] == [listed_kind(listed, "constraint")]
    imported = _json(cli, "memories", "import", str(target), "--json")
    # an older export does not bring back what was forgotten since
    assert (imported["items"], imported["already"], imported["forgotten"]) == (0, 1, 2)
    assert len(_json(cli, "memories", "list", "--json")["items"]) == 1


def test_search_plainly_lists_each_item_with_its_quotes_and_exchanges(cli: CliRunner) -> None:
    _json(cli, "remember", WEBSHOP[:8], "--json")
    _json(cli, "remember", CODEX[:8], "--json")
    found = _json(cli, "memories", "search", "python version", "--json")["items"]
    out = cli.invoke(app, ["memories", "search", "python version"])  # soft-wrapped lines
    assert out.exit_code == 0, out.output
    lines = out.output.splitlines()
    assert (
        lines[0] == f"{len(found)} {'memory' if len(found) == 1 else 'memories'} for "
        "'python version', best first"
    )
    assert lines[1].startswith(f" 1. {found[0]['id'][:8]} decision · project · keys: ")
    assert lines[2].strip() == "We decided to support Python 3.11 and newer only."
    quote = "“We decided to support Python 3.11 and newer only.” — " + f"{CODEX}:7"
    assert lines[3].strip() == quote


def listed_kind(items: list[dict], kind: str) -> str:
    return next(i["content"][:6] for i in items if i["kind"] == kind)


def test_show_marks_the_events_that_are_evidence(cli: CliRunner) -> None:
    out = _json(cli, "remember", WEBSHOP[:8], "--json")
    ids = sorted(i["id"] for i in out["items"])
    events = _json(cli, "show", WEBSHOP[:8], "--json")["events"]
    marked = {e["ordinal"]: sorted(e["memories"]) for e in events if e["memories"]}
    assert marked == {12: ids}
    plain = cli.invoke(app, ["show", f"{WEBSHOP[:8]}:12"]).output
    assert "◆ memory" in plain


def test_off_for_a_session_denies_and_on_allows_again(cli: CliRunner) -> None:
    assert cli.invoke(app, ["memories", "off", "--session", CODEX[:8]]).exit_code == 0
    denied = _json(cli, "remember", CODEX[:8], "--json")
    assert (denied["outcome"], denied["items"]) == ("policy_denied", [])
    receipts = _json(cli, "memories", "receipts", "--json")["receipts"]
    assert [(r["outcome"], r["model_calls"]) for r in receipts] == [("policy_denied", 0)]
    assert cli.invoke(app, ["memories", "on", "--session", CODEX[:8]]).exit_code == 0
    both = cli.invoke(app, ["memories", "off", "--session", CODEX[:8], "--project", "x"])
    assert "--session SESSION or --project PROJECT, not both" in str(both.exception)


def test_compact_a_stored_session_then_recover_extracts_its_range(cli: CliRunner) -> None:
    done = cli.invoke(app, ["compact", "--session", LONG[:8], "--window", "2800", "--json"])
    assert done.exit_code == 0, done.output
    assert json.loads(done.stdout)["strategy"] != "none"
    report = _json(cli, "memories", "recover", "--json")
    assert report["busy"] == 0
    receipts = _json(cli, "memories", "receipts", "--json")["receipts"]
    ends = [r["range"][1] for r in receipts if r["trigger"] in ("compaction", "incidental")]
    assert ends and max(ends) > 0 and all(r["outcome"] != "discarded" for r in receipts)
    again = _json(cli, "memories", "recover", "--json")
    assert (again["checkpoints"], again["settled"]) == (0, 0)  # nothing left to do


def test_remember_on_a_home_without_an_archive_says_so(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("MEMOIR_HOME", str(tmp_path / "nowhere"))
    result = CliRunner().invoke(app, ["remember", "abc"])
    assert result.exit_code == 1 and "no Memoir archive" in str(result.exception)
