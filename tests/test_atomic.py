"""Whole-file writes: temp + rename, and the leftovers of killed writers swept."""

from __future__ import annotations

import os
from pathlib import Path

from memoir.atomic import temp_for, write_text_atomic


def test_a_write_replaces_the_file_and_sweeps_its_own_leftovers(tmp_path: Path) -> None:
    tmp_path = tmp_path / "archive"
    tmp_path.mkdir()
    target = tmp_path / "s-summary.txt"
    target.write_text("old", encoding="utf-8")
    (tmp_path / ".s-summary.txt.999999.tmp").write_text("half", encoding="utf-8")  # kill -9
    (tmp_path / ".other.txt.999999.tmp").write_text("not ours", encoding="utf-8")
    write_text_atomic(target, "new ✓")
    assert target.read_text(encoding="utf-8") == "new ✓"
    assert sorted(p.name for p in tmp_path.iterdir()) == [".other.txt.999999.tmp", target.name]
    assert temp_for(target).name == f".s-summary.txt.{os.getpid()}.tmp"
