"""Project names kept as written, end to end through the CLI: two Cyrillic project
folders are two projects, and a home an older Memoir synced upgrades without losing its
archive (issue #24, item 3)."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path

import pytest
from typer.testing import CliRunner

import memoir.cli.cmd_read
import memoir.cli.cmd_sync  # noqa: F401
from memoir.cli.app import app
from memoir.config import Settings
from memoir.ingest import discover as detect
from memoir.ingest import sync as sync_module
from memoir.ingest.sync import sync
from memoir.store import codec, sql_ingest
from memoir.store.migrations import old_safe
from memoir.store.sqlite_store import SQLiteStore


class _Quiet:
    def rewritten(self, session_id: str) -> None:
        pass

    def removed(self, session_id: str, project: str) -> None:
        pass


def _chat(path: Path, *turns: tuple[str, str]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    lines = []
    for user, reply in turns:
        lines.append(json.dumps({"role": "user", "content": user}, ensure_ascii=False))
        lines.append(json.dumps({"role": "assistant", "content": reply}, ensure_ascii=False))
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")


@pytest.fixture
def cli(home: Path, monkeypatch: pytest.MonkeyPatch) -> CliRunner:
    monkeypatch.setenv("MEMOIR_HOME", str(home))
    return CliRunner()


@pytest.fixture
def source(tmp_path: Path) -> Path:
    root = tmp_path / "chats"
    _chat(root / "проект" / "first.jsonl", ("how do the ledgers balance", "debits equal credits"))
    _chat(root / "данные" / "second.jsonl", ("where are the ledgers kept", "in the vault"))
    return root


_PRE_V16_EVENT_INSERT = """
INSERT INTO events (session_id, ordinal, kind, author, ts, tool_name, call_id,
    source_offset, source_line, payload, text)
VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
ON CONFLICT (session_id, ordinal) DO NOTHING
"""


def _json(cli: CliRunner, *args: str) -> object:
    result = cli.invoke(app, list(args))
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


def test_two_cyrillic_folders_are_two_projects(cli: CliRunner, source: Path) -> None:
    _json(cli, "sync", "--source", str(source), "--json", "--no-summaries")
    stats = _json(cli, "stats", "--json")
    assert isinstance(stats, dict) and stats["projects"] == 2
    hits = _json(cli, "search", "ledgers", "--project", "проект", "--mode", "text", "--json")
    assert isinstance(hits, list)
    assert [(h["session_id"], h["project"]) for h in hits] == [("first", "проект")]
    both = _json(cli, "search", "ledgers", "--mode", "text", "--json")
    assert isinstance(both, list) and {h["project"] for h in both} == {"проект", "данные"}


def test_a_home_synced_before_v14_upgrades_and_verifies_clean(
    cli: CliRunner, source: Path, settings: Settings, monkeypatch: pytest.MonkeyPatch
) -> None:
    # an older Memoir: the old names, the schema at v13, events without time_inferred
    # (v16) stored without a time when the chat gave none
    with monkeypatch.context() as old:
        old.setattr(detect, "project_name", old_safe)
        old.setattr(sql_ingest, "EVENT_INSERT", _PRE_V16_EVENT_INSERT)
        old.setattr(sql_ingest, "event_params", lambda e, enc: codec.event_params(e, enc)[:11])
        old.setattr(sync_module, "with_times", lambda result, *_a, **_k: result)
        store = SQLiteStore(settings.sqlite_path, target_version=13)
        try:
            report = sync(settings, store, observer=_Quiet(), sources=[source])
            assert report.files_indexed == 2 and not report.errors
            # read as rows: today's session reads take columns a v13 schema lacks (v21 name)
            projects = store._db.rows("SELECT DISTINCT project FROM sessions")
            assert projects == [("______",)]
        finally:
            store.close()
    archived = settings.archive_dir / "______"
    assert sorted(p.name for p in archived.iterdir()) == ["first.jsonl", "second.jsonl"]

    # this Memoir: opening the home migrates; nothing is lost, nothing is orphaned
    verified = _json(cli, "verify", "--json")
    assert isinstance(verified, dict) and verified["ok"], verified
    hits = _json(cli, "search", "ledgers", "--project", "проект", "--mode", "text", "--json")
    assert isinstance(hits, list) and [h["session_id"] for h in hits] == ["first"]
    # v16 gave the untimed events the file's mtime as the sync saw it, marked inferred
    shown = _json(cli, "show", "first", "--json")
    assert isinstance(shown, dict)
    mtime_ns = (source / "проект" / "first.jsonl").stat().st_mtime_ns
    stamps = {(e["timestamp"], e["time_inferred"]) for e in shown["events"]}
    seconds, rest = divmod(mtime_ns, 10**9)
    mtime = datetime.fromtimestamp(seconds, UTC).replace(microsecond=rest // 1000)
    assert stamps == {(mtime.isoformat(), True)}

    # grown, rewritten and new transcripts after the upgrade
    with open(source / "проект" / "first.jsonl", "a", encoding="utf-8") as fp:
        fp.write(json.dumps({"role": "user", "content": "and audits?"}) + "\n")
    _chat(source / "данные" / "second.jsonl", ("rewritten from scratch", "yes"))
    _chat(source / "проект" / "third.jsonl", ("a new chat", "about ledgers"))
    report = _json(cli, "sync", "--source", str(source), "--json", "--no-summaries")
    assert isinstance(report, dict) and report["files_indexed"] == 3 and not report["errors"]
    # the old copies grow (or are replaced) in place; the new one goes under its new name
    assert sorted(p.name for p in archived.glob("*.jsonl")) == ["first.jsonl", "second.jsonl"]
    assert b"audits" in (archived / "first.jsonl").read_bytes()
    assert (settings.archive_dir / "проект" / "third.jsonl").is_file()
    verified = _json(cli, "verify", "--json")
    assert isinstance(verified, dict) and verified["ok"], verified
    hits = _json(cli, "search", "ledgers", "--project", "проект", "--mode", "text", "--json")
    assert isinstance(hits, list) and {h["session_id"] for h in hits} == {"first", "third"}


def _claude(path: Path, sid: str, cwd: str, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    base = {"sessionId": sid, "cwd": cwd, "isSidechain": False}
    user = {**base, "type": "user", "uuid": f"{sid[:8]}-u", "timestamp": "2025-10-14T09:00:40Z"}
    user["message"] = {"role": "user", "content": text}
    reply = {**base, "type": "assistant", "uuid": f"{sid[:8]}-a"}
    reply["timestamp"] = "2025-10-14T09:01:00Z"
    reply["message"] = {"role": "assistant", "content": [{"type": "text", "text": "done"}]}
    lines = [json.dumps(r, ensure_ascii=False) for r in (user, reply)]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")


def test_claude_codes_shared_folder_splits_and_output_shows_real_folders(
    cli: CliRunner, tmp_path: Path
) -> None:
    # Claude Code spells both /home/ann/проект and /home/ann/данные as -home-ann-------
    one, two = "11111111-1111-4111-8111-111111111111", "22222222-2222-4222-8222-222222222222"
    folder = tmp_path / "projects" / "-home-ann-------"
    _claude(folder / f"{one}.jsonl", one, "/home/ann/проект", "the invoice totals are wrong")
    _claude(folder / f"{two}.jsonl", two, "/home/ann/данные", "the invoice export is slow")
    _json(cli, "sync", "--source", str(tmp_path / "projects"), "--json", "--no-summaries")
    stats = _json(cli, "stats", "--json")
    assert isinstance(stats, dict) and stats["projects"] == 2
    assert stats["project_list"] == [
        {"name": "-home-ann-данные", "folder": "/home/ann/данные", "sessions": 1},
        {"name": "-home-ann-проект", "folder": "/home/ann/проект", "sessions": 1},
    ]
    # --project takes the folder, its last part or the name
    for ref in ("/home/ann/проект", "проект", "-home-ann-проект"):
        hits = _json(cli, "search", "invoice", "--project", ref, "--mode", "text", "--json")
        assert isinstance(hits, list) and [h["session_id"] for h in hits] == [one], ref
    # the real folders in the human output
    table = cli.invoke(app, ["stats"])
    assert table.exit_code == 0 and "/home/ann/данные" in table.stdout
    assert "-home-ann-проект" in table.stdout
    found = cli.invoke(app, ["search", "invoice", "--mode", "text"])
    assert found.exit_code == 0 and "/home/ann/проект" in found.stdout
    assert "/home/ann/данные" in found.stdout
    shown = cli.invoke(app, ["show", one])
    assert shown.exit_code == 0 and "/home/ann/проект" in shown.stdout.splitlines()[0]
