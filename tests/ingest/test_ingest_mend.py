"""verify --repair mends what it finds: exchange rows lost (rebuilt from the events),
events lost (the transcript read again from its archived copy or source), and counts
only what it mended. Through the real ``memoir`` entry point."""

from __future__ import annotations

import shutil
import sqlite3
from pathlib import Path

import pytest

from cli_run import run_cli
from memoir.demo import ClaudeWriter
from memoir.ingest.verify import Problem, fixed

UUID = "aaaaaaaa-1111-4222-8333-444444444444"


@pytest.fixture
def synced(home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys) -> Path:
    """A home holding one synced session of three exchanges (zebra, yak, walrus)."""
    folder = tmp_path / "src" / "-tmp-proj"
    folder.mkdir(parents=True)
    writer = ClaudeWriter(UUID)
    for word in ("zebra", "yak", "walrus"):
        writer.user(f"a question about the {word}").assistant(f"an answer on the {word}")
    (folder / f"{UUID}.jsonl").write_bytes(writer.bytes())
    monkeypatch.setenv("MEMOIR_HOME", str(home))
    monkeypatch.setenv("MEMOIR_SOURCES", str(tmp_path / "src"))
    code, _, err = run_cli(["sync", "--no-summaries"], capsys)
    assert code == 0, err
    return folder


def _flat(text: str) -> str:
    """Output as one line (rich wraps long lines at the terminal's width)."""
    return " ".join(text.split())


def _sql(home: Path, sql: str) -> list[tuple[object, ...]]:
    with sqlite3.connect(home / "memoir.db") as db:
        db.execute("PRAGMA foreign_keys = OFF")
        return db.execute(sql).fetchall()


def test_a_lost_exchange_row_is_reported_and_rebuilt_from_the_events(
    home: Path, synced: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _sql(home, "DELETE FROM exchanges WHERE id LIKE '%:3'")
    code, out, _ = run_cli(["verify"], capsys)
    assert code == 1
    assert f"exchange rows lost (their events belong to no exchange): {UUID}:3" in _flat(out)
    code, out, _ = run_cli(["verify", "--repair"], capsys)
    assert code == 0 and "verify: ok" in out and "2 repaired" in _flat(out)  # row, index row
    code, out, _ = run_cli(["search", "yak", "--json"], capsys)
    assert code == 0 and f"{UUID}:3" in out
    code, out, _ = run_cli(["show", f"{UUID}:3"], capsys)
    assert code == 0 and "question about the yak" in out


@pytest.mark.parametrize("keep", ["archive", "source"])
def test_lost_events_are_read_again_from_the_archive_or_the_source(
    home: Path, synced: Path, capsys: pytest.CaptureFixture[str], keep: str
) -> None:
    if keep == "source":
        shutil.rmtree(home / "archive" / "-tmp-proj")
    else:
        shutil.rmtree(synced)
    _sql(home, "DELETE FROM events WHERE ordinal = 3")
    code, out, err = run_cli(["verify", "--repair"], capsys)
    assert code == 0, out + err
    assert "verify: ok" in _flat(out) and "not repaired" not in err
    assert _sql(home, "SELECT count(*) FROM events") == [(6,)]
    code, out, _ = run_cli(["search", "yak", "--json"], capsys)
    assert f"{UUID}:3" in out


def test_a_repair_that_mends_nothing_says_so_and_counts_nothing(
    home: Path, synced: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    shutil.rmtree(home / "archive" / "-tmp-proj")
    shutil.rmtree(synced)
    _sql(home, "DELETE FROM events WHERE ordinal = 3")
    for _ in range(2):  # the same every run: nothing claimed
        code, out, err = run_cli(["verify", "--repair"], capsys)
        assert code == 1
        assert "exchanges whose event span is missing" in _flat(out)
        assert "0 repaired" in _flat(out)
        assert f"not repaired: session {UUID}: events are missing" in _flat(err)


def _p(kind: str, where: str = "", detail: str = "") -> Problem:
    return Problem(kind, where, detail)


@pytest.mark.parametrize(
    ("before", "after", "count"),
    [
        ([], [], 0),
        ([_p("mode_too_open", "/h/x", "mode 0644")], [], 1),
        ([_p("mode_too_open", "/h/x", "mode 0644")], [_p("mode_too_open", "/h/x", "mode 0640")], 0),
        # a store problem is the same problem with another count or sample
        (
            [_p("store", "", "2 sessions with gaps: a, b")],
            [_p("store", "", "1 sessions with gaps: b")],
            0,
        ),
        (
            [_p("store", "", "1 sessions with gaps: a")],
            [_p("store", "", "1 orphan index rows: 9")],
            1,
        ),
        (
            [_p("archive_short", "/a", "1 < 2 bytes"), _p("orphan_archive", "/b")],
            [_p("archive_short", "/a", "1 < 3 bytes")],
            1,
        ),
        ([], [_p("orphan_archive", "/new")], 0),  # a problem the repair made is no repair
    ],
)
def test_repaired_counts_the_problems_gone(
    before: list[Problem], after: list[Problem], count: int
) -> None:
    assert fixed(before, after) == count
