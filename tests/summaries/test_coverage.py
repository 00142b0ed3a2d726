"""How far the index has read an archive: bytes past its offset that hold nothing to index
(a JSON list's closing bracket) count as read, anything else does not."""

from __future__ import annotations

import pytest

from memoir.summaries.coverage import TRAILER_BYTES, indexed_through


@pytest.mark.parametrize(
    ("offset", "size", "tail", "expected"),
    [
        (438, 440, b"\n]", 440),  # an indented JSON list: its closing bracket
        (100, 101, b"]", 101),  # a compact one
        (100, 104, b"\n]\n\n", 104),  # blank lines after it
        (100, 102, b"\n\n", 102),  # blank lines after the last JSONL line
        (100, 100, b"", 100),  # read to the end
        (100, 110, b'{"role": "', 100),  # half a line still being written
        (100, 103, b",{]", 100),  # a list being appended to
        (100, 103, b"\n]", 100),  # the tail was not read whole
        (100, 100 + TRAILER_BYTES + 1, b"", 100),  # too far past the offset to read
        (120, 100, b"", 120),  # a shorter archive: the caller caps at its size
    ],
)
def test_indexed_through(offset: int, size: int, tail: bytes, expected: int) -> None:
    assert indexed_through(offset, size, tail) == expected
