"""Everything under a Memoir home is owner-only (0700 folders, 0600 files), whatever the umask.

A matrix over umask 000, 022 and 077, on a fresh home and on an upgraded one (a home an
older Memoir left with loose modes, then written again), over every kind of file Memoir
makes: the database with its -wal and -shm, archive copies and the copies a rewritten
source pushes aside, summaries, the summary scan cache, the ignored-files list, vector
matrix files, the sync/embed locks and a claim, and a background sync's log. A compaction
checkpoint and a summary are written too (rows in the database). ``memoir verify`` reports
a path that is too open, and ``--repair`` tightens it.
"""

from __future__ import annotations

import json
import os
import shutil
import stat
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

import memoir.cli.cmd_sync
import memoir.search.matrix_files as matrix_file
from compaction.helpers import big_text, call, result, system, user
from conftest import fresh_pg_schema
from memoir import service
from memoir.app import Memoir
from memoir.cli.app import app
from memoir.compaction import Compactor
from memoir.config import Settings
from memoir.home_files import loose_modes, private_dir, tighten_home
from memoir.ingest.archive import embed_lock, sync_lock
from memoir.llm import ScriptedModel

UMASKS = [0o000, 0o022, 0o077]
BACKENDS = ["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)]


@pytest.fixture(params=UMASKS, ids=lambda m: f"umask{m:03o}")
def umask(request: pytest.FixtureRequest) -> Iterator[int]:
    old = os.umask(request.param)
    try:
        yield request.param
    finally:
        os.umask(old)


@pytest.fixture(params=BACKENDS)
def database_url(request: pytest.FixtureRequest) -> Iterator[str | None]:
    if request.param == "sqlite":
        yield None
        return
    with fresh_pg_schema() as url:
        yield url


@pytest.fixture
def sources(tmp_path: Path, claude_fixtures: Path) -> Path:
    """A Claude Code projects folder: world-readable transcripts and a junk file."""
    project = tmp_path / "projects" / "-home-ann-app"
    project.mkdir(parents=True)
    for f in claude_fixtures.glob("*.jsonl"):
        shutil.copy(f, project / f.name)
        os.chmod(project / f.name, 0o644)
    (project / "notes.jsonl").write_bytes(b"\x00\x01 binary junk \xff\xfe")
    return tmp_path / "projects"


def _settings(home: Path, sources: Path, database_url: str | None) -> Settings:
    return Settings.from_env(
        {"MEMOIR_HOME": str(home)},
        sources=(sources,),
        database_url=database_url,
        llm="offline",
        embedder="hash",
        summary_limit=50,
    )


def _work(
    home: Path, sources: Path, database_url: str | None, monkeypatch: pytest.MonkeyPatch
) -> list[tuple[Path, int]]:
    """Write every kind of file into ``home``; the modes found while all are there (the
    database open, so its -wal and -shm exist; the locks and a claim held)."""
    monkeypatch.setattr(matrix_file, "FILE_MIN_ROWS", 1)  # matrix files for a tiny archive
    settings = _settings(home, sources, database_url)
    with Memoir.open(settings) as memoir:
        memoir.sync()
        # a rewritten source: its old archive copy is pushed aside into .replaced/
        rewritten = sorted(sources.rglob("*-conversation.jsonl"))[0]
        rewritten.write_bytes(rewritten.read_bytes()[:200].replace(b"{", b"[", 1) + b"\n")
        memoir.sync()
        service.summarize_pending(memoir)
        service.embed_pending(memoir)
        _compact(memoir)
        _background_log(home, sources, database_url, monkeypatch)
        with (
            sync_lock(home),
            embed_lock(home),
            memoir.store.claims.hold("summary:s-perm", "busy"),
        ):
            return _modes(home)


def _compact(memoir: Memoir) -> None:
    """A compaction checkpoint (a database row) for a session."""
    compactor = Compactor(ScriptedModel(default="Summary."), store=memoir.store)
    history: list[dict[str, Any]] = [system(), user("Refactor the parser.")]
    for k in range(40):
        history.append(call((f"c{k}", "read_file"), text=f"part {k}"))
        history.append(result(f"c{k}", big_text(2_000, seed=k)))
    done = compactor.compact(history, window=32_000, session_id="s-perm")
    assert (done.checkpoint_id or done.replayed_from) is not None  # the 2nd time: replayed


def _background_log(
    home: Path, sources: Path, database_url: str | None, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``memoir sync --background`` writes its log (the detached process is not started)."""
    monkeypatch.setenv("MEMOIR_HOME", str(home))
    monkeypatch.setenv("MEMOIR_SOURCES", str(sources))
    if database_url:
        monkeypatch.setenv("MEMOIR_DATABASE_URL", database_url)
    monkeypatch.setattr(memoir.cli.cmd_sync.subprocess, "Popen", lambda *a, **k: None)
    out = CliRunner().invoke(app, ["sync", "--background"])
    assert out.exit_code == 0, out.output


def _modes(home: Path) -> list[tuple[Path, int]]:
    found = [(home, stat.S_IMODE(os.lstat(home).st_mode))]
    for folder, dirs, files in os.walk(home):
        for name in [*dirs, *files]:
            path = Path(folder) / name
            found.append((path, stat.S_IMODE(os.lstat(path).st_mode)))
    return found


def _assert_owner_only(found: list[tuple[Path, int]], home: Path, sqlite: bool) -> None:
    wrong = [
        f"{p.relative_to(home.parent)} {m:04o}"
        for p, m in found
        if m != (0o700 if p.is_dir() else 0o600)
    ]
    assert wrong == []
    names = {str(p.relative_to(home)) for p, _ in found if p != home}
    kinds = {
        "archive copy": any(n.startswith("archive/") and n.endswith(".jsonl") for n in names),
        "replaced copy": any(n.startswith("archive/-home-ann-app/.replaced/") for n in names),
        "summary": any(n.endswith("-summary.txt") for n in names),
        "ignored list": "state/ingest-ignored.json" in names,
        "locks": {"locks/sync.lock", "locks/embed.lock"} <= names,
        "log": any(n.startswith("logs/sync-") for n in names),
    }
    if sqlite:
        kinds["database"] = {"memoir.db", "memoir.db-wal", "memoir.db-shm"} <= names
        kinds["claim"] = any(n.startswith("locks/claims/") for n in names)
        kinds["matrix"] = any(n.startswith("cache/vectors/") and n.endswith(".npy") for n in names)
        kinds["scan cache"] = any(n.startswith("cache/") and n.endswith(".json") for n in names)
    assert [k for k, seen in kinds.items() if not seen] == []


def test_a_fresh_home_is_owner_only(
    umask: int,
    database_url: str | None,
    tmp_path: Path,
    sources: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    home = tmp_path / "new" / "memoir-home"  # neither folder exists yet
    found = _work(home, sources, database_url, monkeypatch)
    _assert_owner_only(found, home, sqlite=database_url is None)
    assert stat.S_IMODE(os.stat(home.parent).st_mode) == 0o700  # a parent Memoir made


def _loosen(home: Path) -> int:
    """What an older Memoir left under a 022 umask (and a bit worse): every folder 0755,
    every file 0644, the database 0666."""
    count = 0
    for path, _ in _modes(home):
        os.chmod(path, 0o755 if path.is_dir() else 0o644)
        count += 1
    if (home / "memoir.db").exists():
        os.chmod(home / "memoir.db", 0o666)
    return count


def test_an_upgraded_home_is_tightened_on_the_next_write(
    umask: int,
    database_url: str | None,
    tmp_path: Path,
    sources: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    home = tmp_path / "memoir-home"
    _work(home, sources, database_url, monkeypatch)
    loosened = _loosen(home)
    outside = tmp_path / "outside.txt"  # a symlink out of the home is never followed
    outside.write_text("not Memoir's")
    os.chmod(outside, 0o644)
    (home / "link").symlink_to(outside)
    assert len(loose_modes(home)) == loosened
    found = _work(home, sources, database_url, monkeypatch)
    _assert_owner_only([(p, m) for p, m in found if p.name != "link"], home, database_url is None)
    assert stat.S_IMODE(outside.stat().st_mode) == 0o644


def test_only_a_write_tightens_a_home(
    tmp_path: Path, sources: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    home = tmp_path / "memoir-home"
    settings = _settings(home, sources, None)
    with Memoir.open(settings) as memoir:
        memoir.sync()
    _loosen(home)
    with Memoir.open(settings) as memoir:  # opening to read changes nothing
        memoir.search("parser")
    assert stat.S_IMODE(home.stat().st_mode) == 0o755
    with Memoir.open(settings) as memoir:
        memoir.sync()
    assert loose_modes(home) == []


def test_an_owner_only_home_looks_only_at_its_own_entries(tmp_path: Path) -> None:
    """Once the home is 0700 nobody else can reach inside, so a write checks only its top
    level (cheap); ``verify`` still walks everything."""
    home = private_dir(tmp_path / "home")
    deep = private_dir(home / "archive" / "p") / "a.jsonl"
    deep.write_text("{}\n")
    os.chmod(deep, 0o644)
    (home / "memoir.db").write_text("")
    os.chmod(home / "memoir.db", 0o644)
    assert tighten_home(home) == 1
    assert [p for p, _ in loose_modes(home)] == [deep]


@pytest.fixture
def verify_home(tmp_path: Path, sources: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    home = tmp_path / "memoir-home"
    (sources / "-home-ann-app" / "notes.jsonl").unlink()  # verify would list it: unreadable
    monkeypatch.setenv("MEMOIR_HOME", str(home))
    monkeypatch.setenv("MEMOIR_SOURCES", str(sources))
    monkeypatch.setenv("MEMOIR_LLM", "offline")
    out = CliRunner().invoke(app, ["sync", "--no-summaries"])
    assert out.exit_code == 0, out.output
    return home


def test_verify_reports_a_path_too_open_and_repair_tightens_it(verify_home: Path) -> None:
    copy = next((verify_home / "archive").rglob("*.jsonl"))
    os.chmod(copy, 0o644)
    os.chmod(copy.parent, 0o755)
    cli = CliRunner()
    out = cli.invoke(app, ["verify", "--json"])
    assert out.exit_code == 1
    problems = sorted(json.loads(out.stdout)["problems"], key=lambda p: p["where"])
    assert problems == [
        {
            "kind": "mode_too_open",
            "where": str(copy.parent),
            "detail": "mode 0755, owner-only is 0700",
        },
        {"kind": "mode_too_open", "where": str(copy), "detail": "mode 0644, owner-only is 0600"},
    ]
    assert stat.S_IMODE(copy.stat().st_mode) == 0o644  # a plain verify changes nothing
    out = cli.invoke(app, ["verify", "--repair"])
    assert out.exit_code == 0, out.output
    assert "2 repaired" in out.output
    assert stat.S_IMODE(copy.stat().st_mode) == 0o600
    assert stat.S_IMODE(copy.parent.stat().st_mode) == 0o700
    assert cli.invoke(app, ["verify"]).exit_code == 0
