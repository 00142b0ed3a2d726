"""Archive copies: temp + rename, safe appends, preserving a diverged copy."""

from __future__ import annotations

from pathlib import Path

import pytest

from memoir.ingest.archive import ArchiveCopy, is_prefix_of, preserve, span_hashes


def test_fresh_copy_is_renamed_into_place(tmp_path: Path) -> None:
    target = tmp_path / "proj" / "s.jsonl"
    copy = ArchiveCopy(target, None)
    copy.feed(0, b"abc\n")
    assert not target.exists()  # only the temp file so far
    copy.feed(4, b"def\n")
    copy.commit()
    assert target.read_bytes() == b"abc\ndef\n"
    assert [p.name for p in target.parent.iterdir()] == ["s.jsonl"]


def test_temp_copies_a_killed_sync_left_are_swept(tmp_path: Path) -> None:
    target = tmp_path / "proj" / "s.jsonl"
    target.parent.mkdir()
    (target.parent / ".s.jsonl.4242.tmp").write_bytes(b"half a transcript")  # kill -9
    (target.parent / ".other[1].jsonl.4242.tmp").write_bytes(b"another's: not ours")
    copy = ArchiveCopy(target, None)
    copy.feed(0, b"abc\n")
    copy.commit()
    names = sorted(p.name for p in target.parent.iterdir())
    assert names == [".other[1].jsonl.4242.tmp", "s.jsonl"]


def test_abort_leaves_nothing(tmp_path: Path) -> None:
    target = tmp_path / "p" / "s.jsonl"
    copy = ArchiveCopy(target, None)
    copy.feed(0, b"x")
    copy.abort()
    assert list(target.parent.iterdir()) == []


def test_append_truncates_to_known_size_first(tmp_path: Path) -> None:
    target = tmp_path / "s.jsonl"
    target.write_bytes(b"line1\nGARBAGE-FROM-A-CRASH")
    copy = ArchiveCopy(target, keep=6)
    copy.feed(0, b"line1\nline2\n")  # overlapping chunk: only new bytes are written
    copy.commit()
    assert target.read_bytes() == b"line1\nline2\n"
    assert copy.written == 6


def test_gap_is_refused_and_fill_closes_it(tmp_path: Path) -> None:
    source = tmp_path / "src.jsonl"
    source.write_bytes(b"aaaa\nbbbb\n")
    target = tmp_path / "arch" / "s.jsonl"
    copy = ArchiveCopy(target, None)
    with pytest.raises(ValueError, match="gap"):
        copy.feed(5, b"bbbb\n")
    with open(source, "rb") as fp:
        copy.fill(fp.fileno(), 5)
    copy.feed(5, b"bbbb\n")
    copy.commit()
    assert target.read_bytes() == source.read_bytes()


def test_prefix_check_and_preserve(tmp_path: Path) -> None:
    source = tmp_path / "src.jsonl"
    source.write_bytes(b"one\ntwo\nthree\n")
    archived = tmp_path / "p" / "s.jsonl"
    archived.parent.mkdir()
    archived.write_bytes(b"one\ntwo\n")
    with open(source, "rb") as fp:
        assert is_prefix_of(archived, fp.fileno(), 14)
        archived.write_bytes(b"one\nTWO\n")
        assert not is_prefix_of(archived, fp.fileno(), 14)
        a, b = span_hashes(fp.fileno(), 8)
        assert a == b  # under 4 KiB the head and the tail span are the same bytes
    moved = preserve(archived)
    assert moved is not None and moved.parent.name == ".replaced"
    assert moved.read_bytes() == b"one\nTWO\n" and not archived.exists()
