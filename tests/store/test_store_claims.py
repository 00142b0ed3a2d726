"""Claims (one worker per job) on every backend, and across processes on SQLite."""

from __future__ import annotations

import subprocess
import sys
import uuid
from pathlib import Path

import pytest

from memoir.errors import Busy
from memoir.store import Store
from memoir.store.db import claim_key, summary_claim


def test_a_held_claim_turns_the_next_claimant_away(store: Store) -> None:
    name = f"summary:{uuid.uuid4()}"  # advisory locks are database-wide: a name per test
    with store.claims.hold(name, "taken"):
        with pytest.raises(Busy, match=r"^taken$"), store.claims.hold(name, "taken"):
            pass
        with store.claims.hold(f"{name}-other", "other"):  # another job is not held up
            pass
    with store.claims.hold(name, "taken"):  # released with its block
        pass


def test_a_claim_is_released_when_its_block_fails(store: Store) -> None:
    name = f"summary:{uuid.uuid4()}"
    with pytest.raises(RuntimeError), store.claims.hold(name, "taken"):
        raise RuntimeError("the job failed")
    with store.claims.hold(name, "taken"):
        pass


def test_sqlite_claims_hold_across_processes(tmp_path: Path) -> None:
    from memoir.store.sqlite_store import SQLiteStore

    store = SQLiteStore(tmp_path / "memoir.db")
    code = (
        "from memoir.store.sqlite_store import SQLiteStore\n"
        "from memoir.errors import Busy\n"
        f"s = SQLiteStore({str(tmp_path / 'memoir.db')!r})\n"
        "try:\n"
        "    with s.claims.hold('summary:s1', 'busy'): print('got it')\n"
        "except Busy: print('busy')\n"
    )
    try:
        with store.claims.hold("summary:s1", "busy"):
            held = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
        free = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    finally:
        store.close()
    assert (held.stdout.strip(), free.stdout.strip()) == ("busy", "got it"), held.stderr


def test_claim_names_and_keys() -> None:
    name, busy = summary_claim("abc")
    assert name == "summary:abc" and "abc" in busy and "another process" in busy
    assert claim_key(name) == claim_key("summary:abc") != claim_key("summary:abd")
    assert -(2**63) <= claim_key(name) < 2**63


def test_claim_files_do_not_pile_up(tmp_path: Path) -> None:
    """A claim per session would leave a lock file per session: released, it is removed."""
    from memoir.store.sqlite_store import SQLiteStore

    store = SQLiteStore(tmp_path / "memoir.db")
    try:
        for k in range(5):
            with store.claims.hold(f"summary:s{k}", "busy"):
                assert len(list((tmp_path / "locks" / "claims").glob("*.lock"))) == 1
        assert list((tmp_path / "locks" / "claims").glob("*.lock")) == []
    finally:
        store.close()


def test_a_claimant_that_locked_a_removed_file_opens_it_anew(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The race of removing lock files: B opens the file, A removes it and lets go, and
    B's lock lands on a file nobody else can see. B must notice and open the path anew, or
    a third claimant could hold the claim at the same time."""
    import os

    from memoir.store import db as claims

    path = tmp_path / "c.lock"
    real_open = os.open
    opened: list[int] = []

    def open_then_lose_it(p: object, flags: int, mode: int = 0o777) -> int:
        fd = real_open(p, flags, mode)  # type: ignore[arg-type]
        if not opened:
            os.unlink(path)  # the holder released and removed it right after B's open
        opened.append(fd)
        return fd

    monkeypatch.setattr(claims.os, "open", open_then_lose_it)
    with claims.file_claim(path, "busy", remove=True):
        assert len(opened) == 2 and path.exists()  # the second open is the real file
        monkeypatch.setattr(claims.os, "open", real_open)
        with pytest.raises(Busy), claims.file_claim(path, "busy", remove=True):
            pass  # and the claim it holds turns the next claimant away
