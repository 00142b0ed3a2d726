"""How far the index has read an archive: bytes past its offset that hold nothing to index
(a JSON list's closing bracket, a JSONL transcript's unfinished last line) count as read,
anything else does not."""

from __future__ import annotations

from pathlib import Path

import pytest

from memoir.summaries.persist import TRAILER_BYTES, ArchiveTail, _archive_tail, indexed_through


def _whole(data: bytes) -> ArchiveTail:
    """The tail as read to its end."""
    return ArchiveTail(len(data), data[:TRAILER_BYTES], b"\n" in data)


HALF = b'{"type":"user","uuid":"x","message":{"role":"user","content":"half'
LONG_HALF = HALF + b"x" * (5 * TRAILER_BYTES)


@pytest.mark.parametrize(
    ("offset", "size", "tail", "lines", "recorded", "expected"),
    [
        # a JSON list (read whole): its closing bracket and the blanks around it
        (438, 440, _whole(b"\n]"), False, 440, 440),  # an indented JSON list
        (100, 101, _whole(b"]"), False, 101, 101),  # a compact one
        (100, 104, _whole(b"\n]\n\n"), False, 104, 104),  # blank lines after it
        (100, 103, _whole(b",{]"), False, 103, 100),  # a list being appended to
        (100, 110, _whole(b'{"role": "'), False, 110, 100),  # no newline, but not JSONL
        (100, 103, ArchiveTail(2, b"\n]", True), False, 103, 100),  # not read whole
        (100, 100 + TRAILER_BYTES + 1, ArchiveTail(), False, 165, 100),  # too far to read
        # JSONL (read line by line)
        (100, 102, _whole(b"\n\n"), True, 102, 102),  # blank lines after the last line
        (100, 100, ArchiveTail(), True, 100, 100),  # read to the end
        (120, 100, ArchiveTail(), True, 100, 120),  # a shorter archive: the caller caps it
        (1992, 2058, _whole(HALF), True, 2058, 2058),  # a crashed session's half line
        (100, 486, _whole(LONG_HALF), True, 486, 486),  # a longer one, read on to its end
        (100, 100 + len(HALF), _whole(HALF), True, 100, 100),  # a sync copied it, not done
        (100, 100 + len(HALF), _whole(HALF), True, 90, 100),  # the file has grown since
        (100, 100 + len(HALF), ArchiveTail(10, HALF[:10]), True, 166, 100),  # cut meanwhile
        (100, 110, _whole(b'{"a": 1}\n{'), True, 110, 100),  # a finished line not indexed
        (100, 109, _whole(b'{"a": 1}\n'), True, 109, 100),  # ... even the last one
        (100, 400, ArchiveTail(200, b"x" * TRAILER_BYTES, True), True, 400, 100),  # a newline
    ],
)
def test_indexed_through(
    offset: int, size: int, tail: ArchiveTail, lines: bool, recorded: int, expected: int
) -> None:
    assert indexed_through(offset, size, tail, lines=lines, recorded=recorded) == expected


@pytest.mark.parametrize(
    ("data", "lines", "expected"),
    [
        (b"\n]\n", False, ArchiveTail(3, b"\n]\n", True)),
        (b"x" * (TRAILER_BYTES + 1), False, ArchiveTail()),  # a JSON list's: not read
        (HALF, True, ArchiveTail(len(HALF), HALF[:TRAILER_BYTES], False)),
        (LONG_HALF, True, ArchiveTail(len(LONG_HALF), LONG_HALF[:TRAILER_BYTES], False)),
        (b'{"a": 1}\n', True, ArchiveTail(9, b'{"a": 1}\n', True)),
        (b"y" * 100 + b"\n" + b"z" * 100, True, ArchiveTail(201, b"y" * TRAILER_BYTES, True)),
        (b"", True, ArchiveTail()),
    ],
)
def test_archive_tail_reads_what_indexed_through_needs(
    tmp_path: Path, data: bytes, lines: bool, expected: ArchiveTail
) -> None:
    path = tmp_path / "a.jsonl"
    path.write_bytes(b"0123456789" + data)
    assert _archive_tail(path, 10, 10 + len(data), lines=lines) == expected


def test_archive_tail_stops_at_the_first_newline(tmp_path: Path, monkeypatch) -> None:
    import memoir.summaries.persist as persist

    monkeypatch.setattr(persist, "_TAIL_CHUNK_BYTES", 100)
    data = b"y" * 150 + b"\n" + b"z" * 1000
    path = tmp_path / "a.jsonl"
    path.write_bytes(data)
    tail = _archive_tail(path, 0, len(data), lines=True)
    assert tail.newline and tail.read == TRAILER_BYTES + 100 < len(data)


def test_archive_tail_of_a_missing_archive_is_nothing(tmp_path: Path) -> None:
    assert _archive_tail(tmp_path / "gone.jsonl", 0, 10, lines=True) == ArchiveTail()
    assert _archive_tail(None, 0, 10, lines=True) == ArchiveTail()
