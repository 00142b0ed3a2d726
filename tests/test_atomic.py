"""Whole-file writes: temp + rename, and the leftovers of killed writers swept."""

from __future__ import annotations

import os
from pathlib import Path
from typing import BinaryIO

import pytest

from memoir.home_files import temp_for, write_atomic, write_text_atomic


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


def test_a_writer_callback_fills_the_file_and_a_failed_one_changes_nothing(
    tmp_path: Path,
) -> None:
    tmp_path = tmp_path / "cache"
    tmp_path.mkdir()
    target = tmp_path / "rows.npy"
    write_atomic(target, lambda out: out.write(b"\x00\x01"))
    assert target.read_bytes() == b"\x00\x01"

    def broken(out: BinaryIO) -> None:
        out.write(b"half")
        raise OSError("disk full")

    with pytest.raises(OSError, match="disk full"):
        write_atomic(target, broken)
    assert target.read_bytes() == b"\x00\x01"
    assert [p.name for p in tmp_path.iterdir()] == [target.name]


def test_a_tagged_write_sweeps_only_its_own_temps_and_can_keep_the_mode(tmp_path: Path) -> None:
    tmp_path = tmp_path / "claude"
    tmp_path.mkdir()
    target = tmp_path / "settings.json"
    target.write_text("{}", encoding="utf-8")
    target.chmod(0o600)
    (tmp_path / ".settings.json.memoir.999999.tmp").write_text("half", encoding="utf-8")
    (tmp_path / ".settings.json.999999.tmp").write_text("another tool's", encoding="utf-8")
    write_text_atomic(target, '{"a": 1}', tag="memoir", keep_mode=True)
    assert target.read_text(encoding="utf-8") == '{"a": 1}'
    assert target.stat().st_mode & 0o777 == 0o600
    assert sorted(p.name for p in tmp_path.iterdir()) == [".settings.json.999999.tmp", target.name]
    assert temp_for(target, "memoir").name == f".settings.json.memoir.{os.getpid()}.tmp"
