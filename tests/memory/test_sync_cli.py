"""Memory from the transcripts `memoir sync` reads, through the CLI, on SQLite and
PostgreSQL: a Claude Code transcript's "from now on…" is an item with its exact quote after
one sync once the session is idle; bounded per run; resumed after a kill; the cursor; the
off switches (home-wide, per session, environment); the sync report in text and JSON; the
hook's background sync doing it; the MCP `memories` tool answering from it."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from cli_run import run_cli
from conftest import fresh_pg_schema
from memoir import Memoir, service
from memoir.demo import ClaudeWriter
from memoir.llm import OfflineModel
from memoir.llm.port import Purpose

SRC = Path(__file__).resolve().parents[2] / "src"
LINTER = "from now on, always run the linter before committing"
PROJECT = "-home-ann-code-app"
SID = "aaaaaaaa-1111-4222-8333-444444444401"


def _transcript(source: Path, sid: str, said: str, *, ago: timedelta = timedelta(hours=3)) -> Path:
    """A Claude Code transcript of one exchange, its messages ``ago`` before now."""
    writer = ClaudeWriter(sid, cwd="/home/ann/code/app", start=datetime.now(UTC) - ago)
    writer.user(said)
    writer.assistant("Understood.")
    folder = source / PROJECT
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{sid}.jsonl"
    path.write_bytes(writer.bytes())
    return path


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def home(
    request: pytest.FixtureRequest, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> Iterator[Path]:
    """A home (SQLite in it, or a fresh PostgreSQL schema) syncing ``tmp_path/projects``."""
    where = tmp_path / "memoir-home"
    monkeypatch.setenv("MEMOIR_HOME", str(where))
    monkeypatch.setenv("MEMOIR_SOURCES", str(tmp_path / "projects"))
    monkeypatch.setenv("MEMOIR_EMBEDDER", "none")
    if request.param == "sqlite":
        yield where
        return
    with fresh_pg_schema() as url:
        monkeypatch.setenv("MEMOIR_DATABASE_URL", url)
        yield where


@pytest.fixture
def source(tmp_path: Path) -> Path:
    return tmp_path / "projects"


def _json(capsys: pytest.CaptureFixture[str], *args: str) -> Any:
    code, out, err = run_cli([*args, "--json"], capsys)
    assert code == 0, out + err
    return json.loads(out)


def _rows(table: str) -> dict[str, str]:
    """The sync table's rows: what → count."""
    rows = {}
    for line in table.splitlines():
        cells = [c.strip() for c in line.strip("│ ").split("│")]
        if len(cells) == 2:
            rows[cells[0]] = cells[1]
    return rows


def _items(capsys: pytest.CaptureFixture[str]) -> list[dict[str, Any]]:
    return _json(capsys, "memories", "list")["items"]


def test_one_sync_keeps_what_the_user_said_with_their_exact_words(
    home: Path, source: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _transcript(source, SID, LINTER)
    code, out, err = run_cli(["sync"], capsys)
    assert code == 0, out + err
    rows = _rows(out)
    assert (rows["sessions mined for memories"], rows["memory items saved"]) == ("1", "1")
    (item,) = _items(capsys)
    assert item["content"] == LINTER and item["kind"] == "constraint"
    assert item["sources"] == [
        {"session_id": SID, "ordinal": 1, "exchange_id": f"{SID}:1", "quote": LINTER}
    ]
    (receipt,) = _json(capsys, "memories", "receipts")["receipts"]
    assert (receipt["trigger"], receipt["outcome"], receipt["items"]) == ("sync", "extracted", 1)
    # the cursor: a sync with nothing new reads nothing and saves nothing
    again = _json(capsys, "sync")
    assert again["memory_pass"]["mined"] == 0 and again["memory_pass"]["rows"] == []
    assert len(_json(capsys, "memories", "receipts")["receipts"]) == 1
    assert [i["id"] for i in _items(capsys)] == [item["id"]]
    context = run_cli(["memories", "context"], capsys)[1]
    assert context.count(LINTER) == 1


def test_a_session_still_active_waits_for_the_quiet_period(
    home: Path, source: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    _transcript(source, SID, LINTER, ago=timedelta(minutes=5))
    report = _json(capsys, "sync")["memory_pass"]
    assert (report["active"], report["mined"]) == (1, 0)
    assert _items(capsys) == []
    monkeypatch.setenv("MEMOIR_SUMMARY_QUIESCENCE_HOURS", "0.05")  # 3 minutes: now quiet
    report = _json(capsys, "sync")["memory_pass"]
    assert (report["active"], report["mined"], report["items"]) == (0, 1, 1)
    assert [i["sources"][0]["quote"] for i in _items(capsys)] == [LINTER]


def test_the_memory_limit_bounds_each_sync_and_the_rest_come_next(
    home: Path, source: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    said = ["I prefer tabs over spaces.", "We decided to use PostgreSQL.", LINTER]
    for n, text in enumerate(said):
        _transcript(source, f"{SID[:-2]}1{n}", text, ago=timedelta(hours=5 - n))
    first = _json(capsys, "sync", "--memory-limit", "1")["memory_pass"]
    assert (first["mined"], first["deferred"]) == (1, 2)
    assert [r["session"] for r in first["rows"]] == [f"{SID[:-2]}12"]  # the newest first
    assert [i["content"] for i in _items(capsys)] == [LINTER]
    code, out, _ = run_cli(["sync", "--memory-limit", "1"], capsys)
    assert code == 0
    rows = _rows(out)
    assert rows["sessions mined for memories"] == "1"
    assert rows["sessions left for the next sync (memory limit reached)"] == "1"
    os.environ["MEMOIR_MEMORY_LIMIT"] = "5"  # the setting, as the hook's sync reads it
    try:
        last = _json(capsys, "sync")["memory_pass"]
    finally:
        del os.environ["MEMOIR_MEMORY_LIMIT"]
    assert (last["mined"], last["deferred"]) == (1, 0)
    assert sorted(i["content"] for i in _items(capsys)) == sorted(said)


def test_a_sync_killed_while_extracting_is_resumed_by_the_next_without_duplicates(
    home: Path, source: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    _transcript(source, f"{SID[:-2]}21", "I prefer tabs over spaces.", ago=timedelta(hours=4))
    _transcript(source, f"{SID[:-2]}22", LINTER)
    real = OfflineModel.complete
    calls: list[int] = []

    def dies_on_the_second(self: OfflineModel, request: Any) -> Any:
        if request.meta.purpose is Purpose.EXTRACTION:
            calls.append(1)
        if len(calls) == 2:
            raise KeyboardInterrupt  # as the process being stopped mid-request
        return real(self, request)

    monkeypatch.setattr(OfflineModel, "complete", dies_on_the_second)
    code, _, err = run_cli(["sync"], capsys)
    assert code == 130 and "interrupted" in err
    assert [i["content"] for i in _items(capsys)] == [LINTER]  # the newest ran first
    monkeypatch.setattr(OfflineModel, "complete", real)
    resumed = _json(capsys, "sync")
    done = resumed["memories"]["settled"] + resumed["memory_pass"]["mined"]
    assert done == 1  # the queued operation ran once, by recovery or by the pass
    contents = sorted(i["content"] for i in _items(capsys))
    assert contents == ["I prefer tabs over spaces.", LINTER]
    receipts = _json(capsys, "memories", "receipts")["receipts"]
    assert sorted((r["session_id"][-2:], r["outcome"]) for r in receipts) == [
        ("21", "extracted"),
        ("22", "extracted"),
    ]
    assert _json(capsys, "sync")["memory_pass"]["mined"] == 0


def test_memories_off_switches_the_sync_trigger_off_for_the_home(
    home: Path, source: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _transcript(source, SID, LINTER)
    code, out, _ = run_cli(["memories", "off"], capsys)
    assert code == 0 and out.startswith("Memory from sync: off.")
    assert (home / "memory-from-sync.off").is_file()
    setting = _json(capsys, "config")["memory_from_sync"]
    assert (setting["value"], setting["source"]) == (False, "stored by `memoir memories off`")
    report = _json(capsys, "sync")
    assert report["files_indexed"] == 1
    assert report["memory_pass"]["off"] == "stored by `memoir memories off`"
    assert report["memory_pass"]["mined"] == 0 and _items(capsys) == []
    table = _rows(run_cli(["sync"], capsys)[1])
    assert table["memories from sync"].startswith("off (stored by")  # (the rest may wrap)
    # remember still works while sync's trigger is off
    remembered = _json(capsys, "remember", SID[:8])
    assert [i["content"] for i in remembered["items"]] == [LINTER]
    code, out, _ = run_cli(["memories", "on"], capsys)
    assert code == 0 and out.startswith("Memory from sync: on.")
    assert not (home / "memory-from-sync.off").exists()
    _transcript(source, f"{SID[:-2]}31", "I prefer tabs over spaces.")
    assert _json(capsys, "sync")["memory_pass"]["mined"] == 1


def test_the_environment_switch_wins_over_the_stored_one(
    home: Path, source: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    _transcript(source, SID, LINTER)
    monkeypatch.setenv("MEMOIR_MEMORY_FROM_SYNC", "off")
    report = _json(capsys, "sync")["memory_pass"]
    assert (report["off"], report["mined"]) == ("env MEMOIR_MEMORY_FROM_SYNC", 0)
    code, _, err = run_cli(["memories", "on"], capsys)
    assert code == 1 and "stays off: env MEMOIR_MEMORY_FROM_SYNC decides" in err
    monkeypatch.setenv("MEMOIR_MEMORY_FROM_SYNC", "on")
    run_cli(["memories", "off"], capsys)  # stored off, but the environment says on
    assert _json(capsys, "sync")["memory_pass"]["mined"] == 1


def test_sessions_switched_off_or_incognito_are_denied_and_never_read(
    home: Path, source: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _transcript(source, f"{SID[:-2]}41", "I live in Lisbon, near the river.")
    _transcript(source, f"{SID[:-2]}42", "I prefer vim over emacs.")
    _transcript(source, f"{SID[:-2]}43", LINTER)
    _json(capsys, "sync", "--memory-limit", "0")  # stored; nothing mined yet
    assert run_cli(["memories", "off", "--session", f"{SID[:-2]}41"], capsys)[0] == 0
    with Memoir.open() as m:
        service.set_incognito(m, f"{SID[:-2]}42")
    report = _json(capsys, "sync")["memory_pass"]
    assert (report["denied"], report["mined"]) == (2, 1)
    assert [i["content"] for i in _items(capsys)] == [LINTER]
    receipts = _json(capsys, "memories", "receipts")["receipts"]
    assert sorted((r["session_id"][-2:], r["outcome"], r["reason"]) for r in receipts) == [
        ("41", "policy_denied", "memory_disabled"),
        ("42", "policy_denied", "incognito"),
        ("43", "extracted", None),
    ]
    assert all(r["model_calls"] == 0 for r in receipts if r["outcome"] == "policy_denied")


def test_an_excluded_project_stored_before_is_never_mined(
    home: Path, source: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    _transcript(source, SID, LINTER)
    _json(capsys, "sync", "--memory-limit", "0")
    monkeypatch.setenv("MEMOIR_EXCLUDE_PROJECTS", "app")
    report = _json(capsys, "sync")["memory_pass"]
    assert (report["excluded"], report["mined"]) == (1, 0)
    assert _items(capsys) == [] and _json(capsys, "memories", "receipts")["receipts"] == []


def test_no_summaries_means_index_only(
    home: Path, source: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _transcript(source, SID, LINTER)
    report = _json(capsys, "sync", "--no-summaries")
    assert report["memory_pass"] is None and _items(capsys) == []


def _subprocess_env(home: Path, sources: Path, **more: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("MEMOIR_")}
    env.update(
        PYTHONPATH=str(SRC),
        MEMOIR_HOME=str(home),
        MEMOIR_SOURCES=str(sources),
        MEMOIR_EMBEDDER="none",
        **more,
    )
    if url := os.environ.get("MEMOIR_DATABASE_URL"):
        env["MEMOIR_DATABASE_URL"] = url
    return env


def _memoir(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "memoir.cli", *args],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


@pytest.mark.slow
def test_the_hooks_background_sync_extracts_them(home: Path, source: Path) -> None:
    """`memoir sync --background`, what the SessionStart hook runs: it returns at once and
    the detached sync it starts keeps the quote."""
    _transcript(source, SID, LINTER)
    env = _subprocess_env(home, source)
    started = _memoir(env, "sync", "--background", "--json")
    assert started.returncode == 0, started.stderr
    assert json.loads(started.stdout)["started"] is True
    deadline = time.monotonic() + 90
    items: list[dict[str, Any]] = []
    while time.monotonic() < deadline:
        listed = _memoir(env, "memories", "list", "--json")
        if listed.returncode == 0 and (items := json.loads(listed.stdout)["items"]):
            break
        time.sleep(0.3)
    assert [(i["content"], i["sources"][0]["quote"]) for i in items] == [(LINTER, LINTER)]
    (log,) = (home / "logs").glob("sync-*.log")
    deadline = time.monotonic() + 30
    while "sessions mined for memories" not in log.read_text() and time.monotonic() < deadline:
        time.sleep(0.2)
    assert "sessions mined for memories" in log.read_text()


@pytest.mark.slow
def test_the_mcp_memories_tool_answers_from_what_sync_kept(
    home: Path, source: Path, tmp_path: Path
) -> None:
    pytest.importorskip("mcp")
    import anyio
    from mcp.client.session import ClientSession
    from mcp.client.stdio import StdioServerParameters, stdio_client

    _transcript(source, SID, LINTER)
    env = _subprocess_env(home, source)
    synced = _memoir(env, "sync", "--json")
    assert synced.returncode == 0, synced.stderr
    assert json.loads(synced.stdout)["memory_pass"]["mined"] == 1

    async def ask() -> Any:
        params = StdioServerParameters(
            command=sys.executable, args=["-m", "memoir.cli", "mcp"], env=env
        )
        with (tmp_path / "mcp.log").open("a") as errlog:
            async with (
                stdio_client(params, errlog=errlog) as (read, write),
                ClientSession(read, write) as session,
            ):
                await session.initialize()
                listed = await session.call_tool("memories", {})
                found = await session.call_tool("memories", {"query": "linter committing"})
                return listed, found

    listed, found = anyio.run(ask)
    for reply in (listed, found):
        assert not reply.isError, reply.content
        (item,) = json.loads(reply.content[0].text)["items"]
        assert item["content"] == LINTER
        assert [s["quote"] for s in item["sources"]] == [LINTER]


def test_the_background_sync_is_handed_the_memory_limit(
    home: Path, source: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The hook's command returns once the detached sync is started; that sync gets the
    memory limit it was given (the memory pass runs there, never in the hook)."""
    import memoir.cli.cmd_sync as cmd_sync

    started: list[list[str]] = []

    class Started:
        def __init__(self, argv: list[str], **_: Any) -> None:
            started.append(argv)

    monkeypatch.setattr(cmd_sync.subprocess, "Popen", Started)
    _transcript(source, SID, LINTER)
    out = _json(capsys, "sync", "--background", "--memory-limit", "3")
    assert out["started"] is True
    (argv,) = started
    assert argv[argv.index("sync") :] == ["sync", "--memory-limit", "3", "--embed", "--detached"]
    assert not (home / "archive").exists()  # nothing done in the foreground
