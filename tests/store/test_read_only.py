"""A home this process cannot write (a read-only mount, a backup, another user's files).

Reading commands must work and give what they give on the writable home; writing ones stop
with one clear ``ReadOnly`` line and change nothing. As root, permissions do not stop a
write, so the read-only view is a read-only bind mount of the folder (skipped where the
sandbox refuses to mount); as another user it is the folder with its write bits removed.
"""

from __future__ import annotations

import json
import os
import shutil
import stat
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from store_builders import ingest
from typer.testing import CliRunner

import memoir.cli.cmd_read
import memoir.cli.cmd_sync  # noqa: F401
from memoir import service
from memoir.cli.app import app
from memoir.errors import Busy, ReadOnly, StoreError
from memoir.ingest.archive import sync_lock, sync_lock_to_read
from memoir.store.sqlite_store import SQLiteStore
from memoir.store.values import SearchFilters

View = Callable[[Path], Path]


def _set_writable(folder: Path, writable: bool) -> None:
    for path in [folder, *folder.rglob("*")]:
        mode = path.stat().st_mode
        bits = stat.S_IWUSR | stat.S_IWGRP | stat.S_IWOTH
        path.chmod(mode | stat.S_IWUSR if writable else mode & ~bits)


@pytest.fixture
def read_only_view(tmp_path: Path) -> Iterator[View]:
    mounts: list[Path] = []
    locked: list[Path] = []

    def make(folder: Path) -> Path:
        if os.geteuid() != 0:
            _set_writable(folder, False)
            locked.append(folder)
            return folder
        view = tmp_path / f"read-only-{len(mounts)}"
        view.mkdir()
        bound = subprocess.run(["mount", "--bind", str(folder), str(view)], capture_output=True)
        if bound.returncode != 0:
            pytest.skip(f"cannot bind-mount here: {bound.stderr.decode().strip()}")
        mounts.append(view)
        ro = subprocess.run(["mount", "-o", "remount,bind,ro", str(view)], capture_output=True)
        if ro.returncode != 0:
            pytest.skip(f"cannot remount read-only here: {ro.stderr.decode().strip()}")
        return view

    yield make
    held = []
    for view in mounts:  # busy: a file in the view left open (a leaked connection)
        if subprocess.run(["umount", str(view)], capture_output=True).returncode != 0:
            held.append(view)
            subprocess.run(["umount", "-l", str(view)], check=True)
    for folder in locked:
        _set_writable(folder, True)
    assert not held, f"files left open in {held}"


def _snapshot(folder: Path) -> dict[str, tuple[int, int]]:
    return {
        str(p.relative_to(folder)): (p.stat().st_size, p.stat().st_mtime_ns)
        for p in folder.rglob("*")
        if p.is_file()
    }


@pytest.fixture
def synced_home(tmp_path: Path, claude_fixtures: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    projects = tmp_path / "projects" / "-home-ann-app"
    projects.mkdir(parents=True)
    for f in claude_fixtures.glob("*.jsonl"):
        shutil.copy(f, projects / f.name)
    home = tmp_path / "home"
    monkeypatch.setenv("MEMOIR_HOME", str(home))
    result = CliRunner().invoke(
        app, ["sync", "--source", str(tmp_path / "projects"), "--no-summaries"]
    )
    assert result.exit_code == 0, result.output
    return home


def _run(home: Path, monkeypatch: pytest.MonkeyPatch, *args: str) -> tuple[int, str]:
    monkeypatch.setenv("MEMOIR_HOME", str(home))
    result = CliRunner().invoke(app, list(args))
    return result.exit_code, result.output


def test_reading_commands_answer_as_on_the_writable_home(
    synced_home: Path, read_only_view: View, monkeypatch: pytest.MonkeyPatch
) -> None:
    reads = [
        ("search", "instructions", "--json", "--mode", "text"),
        ("search", "class OR conversation OR tentative", "--json", "--limit", "50"),
        ("stats", "--json"),
        ("verify", "--json"),
    ]
    expected = [_run(synced_home, monkeypatch, *args) for args in reads]
    assert len(json.loads(expected[1][1])) >= 2, "without hits the comparison means little"
    copy = synced_home.parent / "copy"
    shutil.copytree(synced_home, copy)
    view = read_only_view(copy)
    before = _snapshot(view)

    got = [_run(view, monkeypatch, *args) for args in reads]

    for (want_rc, want_out), (rc, out) in zip(expected, got, strict=True):
        assert rc == want_rc
        assert json.loads(out) == json.loads(want_out)
    rc, out = _run(view, monkeypatch, "show", "67a8478e")
    assert (rc, out) == _run(synced_home, monkeypatch, "show", "67a8478e")
    assert _snapshot(view) == before


def _memoir(home: Path, *args: str, **env: str) -> subprocess.CompletedProcess[str]:
    """``memoir ARGS`` in a process of its own on ``home``, no other MEMOIR_ setting."""
    full = {k: v for k, v in os.environ.items() if not k.startswith("MEMOIR_")}
    full.update(MEMOIR_HOME=str(home), **env)
    return subprocess.run(
        [sys.executable, "-m", "memoir.cli", *args],
        capture_output=True,
        text=True,
        env=full,
        timeout=120,
    )


def test_writing_commands_stop_with_one_clear_line(synced_home: Path, read_only_view: View) -> None:
    view = read_only_view(synced_home)
    before = _snapshot(view)
    for args in (("sync", "--no-summaries"), ("verify", "--repair"), ("summarize", "67a8478e")):
        done = _memoir(view, *args)
        err = done.stderr
        assert done.returncode == 1, (args, err)
        assert err.startswith("error: ") and "read-only" in err, (args, err)
        assert "Traceback" not in err and "OSError" not in err
    assert _snapshot(view) == before


def test_embed_on_a_read_only_home_is_one_line_and_no_bar(
    synced_home: Path, read_only_view: View
) -> None:
    """The refusal comes before the progress bar: no empty bar drawn (on stdout, where
    the bar goes) ahead of the error, and the exit status sync and summarize give."""
    view = read_only_view(synced_home)
    before = _snapshot(view)

    def run(*args: str) -> subprocess.CompletedProcess[str]:
        return _memoir(view, *args, MEMOIR_EMBEDDER="hash")  # an embedder that is there

    line = (
        "error: memoir embed needs to write, and this SQLite database is read-only here (a "
        "standby, a read-only role or mount): search, show and stats work\n"
    )
    others = {
        run(*args).returncode for args in (("sync", "--no-summaries"), ("summarize", "67a8478e"))
    }
    done = run("embed")
    assert (done.returncode, done.stdout, done.stderr) == (1, "", line)
    assert others == {done.returncode}
    done = run("embed", "--json")  # the same error, as JSON on stderr
    assert (done.returncode, done.stdout) == (1, "")
    assert json.loads(done.stderr) == {
        "error": {"code": "read_only", "message": line.removeprefix("error: ").rstrip("\n")}
    }
    assert _snapshot(view) == before


def test_store_opened_read_only_refuses_writes(tmp_path: Path, read_only_view: View) -> None:
    folder = tmp_path / "db"
    store = SQLiteStore(folder / "memoir.db")
    ingest(store, "s1", [("where is the parser", "in lines.py", None)])
    store.close()
    view = read_only_view(folder)

    reader = SQLiteStore(view / "memoir.db")
    try:
        assert reader.read_only
        hits = reader.index.search("parser", SearchFilters(), 5)
        assert [h.exchange_id for h in hits] == ["s1:1"]
        with pytest.raises(ReadOnly, match="open read-only"):
            ingest(reader, "s2", [("more", "text", None)])
        assert [h.exchange_id for h in reader.index.search("more", SearchFilters(), 5)] == []
    finally:
        reader.close()
    writer = SQLiteStore(folder / "memoir.db") if os.geteuid() == 0 else None
    if writer is not None:  # the original, writable: opened as before
        assert not writer.read_only
        writer.close()


def test_unfolded_write_ahead_log_is_read_through_its_index_or_refused(
    tmp_path: Path, read_only_view: View
) -> None:
    live = tmp_path / "live"
    store = SQLiteStore(live / "memoir.db")
    ingest(store, "s1", [("where is the parser", "in lines.py", None)])
    with_index, without_index = tmp_path / "with-shm", tmp_path / "without-shm"
    try:  # copied while the writer is open: the rows are still in the -wal file
        assert (live / "memoir.db-wal").stat().st_size > 0
        for target, ends in ((with_index, ("", "-wal", "-shm")), (without_index, ("", "-wal"))):
            target.mkdir()
            for end in ends:
                shutil.copy(live / f"memoir.db{end}", target / f"memoir.db{end}")
    finally:
        store.close()

    reader = SQLiteStore(read_only_view(with_index) / "memoir.db")
    try:
        assert reader.read_only
        assert [h.exchange_id for h in reader.index.search("parser", SearchFilters(), 5)] == [
            "s1:1"
        ]
    finally:
        reader.close()
    with pytest.raises(ReadOnly, match="write-ahead log"):
        SQLiteStore(read_only_view(without_index) / "memoir.db")


def test_read_only_database_behind_the_schema_is_refused(
    tmp_path: Path, read_only_view: View
) -> None:
    folder = tmp_path / "old"
    SQLiteStore(folder / "memoir.db", target_version=7).close()
    with pytest.raises(ReadOnly, match="schema v7"):
        SQLiteStore(read_only_view(folder) / "memoir.db")


def test_a_corrupt_writable_database_is_not_mistaken_for_read_only(tmp_path: Path) -> None:
    path = tmp_path / "memoir.db"
    path.write_bytes(b"this is not an SQLite database" * 200)
    with pytest.raises(StoreError) as caught:
        SQLiteStore(path)
    assert not isinstance(caught.value, ReadOnly)
    assert "not a database" in str(caught.value)


def test_verify_on_a_read_only_home_still_keeps_out_a_running_sync(
    synced_home: Path, read_only_view: View
) -> None:
    view = read_only_view(synced_home)
    running = pytest.raises(Busy, match="sync is running")
    with sync_lock(synced_home), running, sync_lock_to_read(view):
        pass
    with sync_lock_to_read(view), pytest.raises(ReadOnly), sync_lock(view):
        pass  # the shared hold was taken without writing; a sync here cannot start


# --- PostgreSQL: a standby, or a role whose transactions are read-only ----------------------
def _read_only_url(url: str) -> str:
    joiner = "&" if "?" in url else "?"
    return f"{url}{joiner}options=-c%20default_transaction_read_only%3Don"


@pytest.mark.postgres
def test_postgres_read_only_connection_searches_and_refuses_writes(pg_database: str) -> None:
    from memoir.store.postgres_store import PostgresStore

    writer = PostgresStore(pg_database)
    try:
        ingest(writer, "s1", [("where is the parser", "in lines.py", None)])
    finally:
        writer.close()
    reader = PostgresStore(_read_only_url(pg_database))
    try:
        assert [h.exchange_id for h in reader.index.search("parser", SearchFilters(), 5)] == [
            "s1:1"
        ]
        with pytest.raises(ReadOnly, match="read-only"):
            ingest(reader, "s2", [("more", "text", None)])
        assert reader.stats()["exchanges"] == 1
    finally:
        reader.close()


@pytest.mark.postgres
def test_postgres_read_only_connection_behind_the_schema_is_refused(pg_database: str) -> None:
    from memoir.store.postgres_store import PostgresStore

    PostgresStore(pg_database, target_version=7).close()
    with pytest.raises(ReadOnly, match="upgrade it once"):
        PostgresStore(_read_only_url(pg_database))
    fresh = PostgresStore(pg_database)  # a writable connection upgrades it as before
    try:
        assert fresh.schema_version() > 7
    finally:
        fresh.close()


@pytest.mark.postgres
def test_postgres_read_only_refuses_writing_jobs_up_front(
    pg_database: str, tmp_path: Path, claude_fixtures: Path
) -> None:
    """On a standby or a read-only role, nothing is copied to the archive, no model is
    called and no file is written before the refusal (an advisory lock alone would work)."""
    from memoir.app import Memoir
    from memoir.config import Settings
    from memoir.ingest.sync import sync
    from memoir.llm import ScriptedModel
    from memoir.store.postgres_store import PostgresStore
    from memoir.summaries.session import ModelSource
    from memoir.summaries.summary_pass import PassSettings, run_summary_pass

    writer = PostgresStore(pg_database)
    assert not writer.read_only
    writer.close()
    projects = tmp_path / "projects" / "-home-ann-app"
    projects.mkdir(parents=True)
    for f in claude_fixtures.glob("*.jsonl"):
        shutil.copy(f, projects / f.name)
    env = {
        "MEMOIR_HOME": str(tmp_path / "home"),
        "MEMOIR_DATABASE_URL": _read_only_url(pg_database),
    }
    settings = Settings.from_env(env, sources=(projects.parent,), embedder="hash")
    settings.ensure_home()
    with Memoir.open(settings) as memoir:
        assert memoir.store.read_only
        with pytest.raises(ReadOnly, match="memoir sync needs to write"):
            sync(settings, memoir.store, observer=service.sync_observer(memoir))
        assert not (tmp_path / "home" / "archive").exists()
        model = ScriptedModel(default="A summary.")
        with pytest.raises(ReadOnly, match="the summary pass needs to write"):
            run_summary_pass(
                memoir.store,
                service.summary_store(memoir),
                PassSettings.from_settings(settings),
                ModelSource.of(model),
                limit=10,
            )
        assert model.calls == 0
        with pytest.raises(ReadOnly, match="memoir embed needs to write"):
            service.embed_pending(memoir)
        with pytest.raises(ReadOnly), memoir.store.claims.hold("summary:s1", "busy"):
            pass


@pytest.mark.postgres
def test_postgres_closed_store_says_so_as_sqlite_does(pg_database: str) -> None:
    from memoir.store.postgres_store import PostgresStore

    store = PostgresStore(pg_database)
    store.close()
    with pytest.raises(StoreError, match=r"^the store is closed$"):
        store.index.search("parser", SearchFilters(), 5)
    with (
        pytest.raises(StoreError, match=r"^the store is closed$"),
        store.claims.hold("embed", "busy"),
    ):
        pass


def test_a_read_only_view_follows_its_owner_writing_on(
    tmp_path: Path, read_only_view: View
) -> None:
    """Another user's home, read through a read-only view while its owner syncs: each call
    sees the database as it is now — through the owner's write-ahead log while one holds
    writes — never a stale or torn copy."""
    folder = tmp_path / "owned"
    owner = SQLiteStore(folder / "memoir.db")
    ingest(owner, "s1", [("where is the parser", "in lines.py", None)])
    owner.close()
    reader = SQLiteStore(read_only_view(folder) / "memoir.db")
    owner = SQLiteStore(folder / "memoir.db")
    try:
        assert reader.read_only and reader.stats()["exchanges"] == 1
        for i in range(2, 40):  # the owner writes on, its WAL still open
            ingest(owner, f"s{i}", [(f"parser note {i}", "ok", None)])
        assert reader.stats()["exchanges"] == 39  # read through the owner's WAL
        owner.close()  # checkpointed and the WAL removed: read as immutable again
        assert reader.stats()["exchanges"] == 39
        hits = reader.index.search("parser", SearchFilters(), 50)
        assert len(hits) == 39
    finally:
        owner.close()
        reader.close()
