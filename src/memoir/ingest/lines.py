"""Split transcript bytes into complete lines with their byte offsets.

Transcripts are append-only JSONL files that an agent may be writing while we read. Only
complete lines (ending in ``\\n``) are handed out as terminated; bytes after the last
newline come out once, at the end, as an unterminated line the caller may accept (a
complete JSON object) or leave for the next sync. A line longer than ``max_line`` bytes is
never held in memory: it is reported as oversized with its size and skipped.

:func:`split_complete_lines` is the pure core (tested with hypothesis);
:class:`LineReader` streams a file in chunks on top of it and hands every chunk read to an
optional sink (the archive copy) so the file is read exactly once.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import BinaryIO

__all__ = ["MAX_LINE_BYTES", "LineReader", "RawLine", "split_complete_lines"]

MAX_LINE_BYTES = 16 * 1024 * 1024  # longer lines are skipped as "oversized" (still archived)
CHUNK_BYTES = 4 * 1024 * 1024


@dataclass(slots=True)  # not frozen: built once per line, frozen init costs ~2x
class RawLine:
    """One line: ``offset`` of its first byte, 1-based ``number``, ``data`` without the
    newline (empty when ``oversized``), ``size`` its length without the newline."""

    offset: int
    number: int
    data: bytes
    size: int
    terminated: bool = True
    oversized: bool = False

    @property
    def end(self) -> int:
        """Offset just past this line (and its newline when terminated)."""
        return self.offset + self.size + (1 if self.terminated else 0)


def split_complete_lines(data: bytes, base_offset: int = 0) -> tuple[list[tuple[int, bytes]], int]:
    """Complete lines of ``data`` as (absolute offset, bytes without newline), and the number
    of bytes they consume (everything up to and including the last newline)."""
    last = data.rfind(b"\n")
    if last < 0:
        return [], 0
    out: list[tuple[int, bytes]] = []
    pos = base_offset
    for piece in data[:last].split(b"\n"):
        out.append((pos, piece))
        pos += len(piece) + 1
    return out, last + 1


class LineReader:
    """Stream lines of ``fp`` from byte ``offset`` (line number ``line`` + 1 onwards), reading
    at most ``limit`` bytes in total. ``sink(position, chunk)`` receives every chunk read."""

    def __init__(
        self,
        fp: BinaryIO,
        *,
        offset: int = 0,
        line: int = 0,
        limit: int | None = None,
        max_line: int = MAX_LINE_BYTES,
        chunk: int = CHUNK_BYTES,
        sink: Callable[[int, bytes], None] | None = None,
    ) -> None:
        self._fp = fp
        self._offset = offset
        self._line = line
        self._limit = limit
        self._max_line = max_line
        self._chunk = chunk
        self._sink = sink
        self.bytes_read = 0

    def _read(self, pos: int) -> bytes:
        want = self._chunk
        if self._limit is not None:
            want = min(want, self._limit - self.bytes_read)
            if want <= 0:
                return b""
        data = self._fp.read(want)
        if data:
            self.bytes_read += len(data)
            if self._sink is not None:
                self._sink(pos, data)
        return data

    def __iter__(self) -> Iterator[RawLine]:
        self._fp.seek(self._offset)
        pos = self._offset  # file position of the first byte of ``carry``
        number = self._line
        carry = b""
        skipping = 0  # > 0 while discarding an oversized line: bytes discarded so far
        while True:
            chunk = self._read(pos + len(carry) + skipping)
            if not chunk:
                break
            if skipping:
                nl = chunk.find(b"\n")
                if nl < 0:
                    skipping += len(chunk)
                    continue
                number += 1
                size = skipping + nl
                yield RawLine(pos, number, b"", size, True, True)
                pos += size + 1
                skipping = 0
                chunk = chunk[nl + 1 :]
            data = carry + chunk if carry else chunk
            lines, used = split_complete_lines(data, pos)
            for off, piece in lines:
                number += 1
                if len(piece) > self._max_line:
                    yield RawLine(off, number, b"", len(piece), True, True)
                else:
                    yield RawLine(off, number, piece, len(piece))
            pos += used
            carry = data[used:]
            if len(carry) > self._max_line:
                skipping = len(carry)
                carry = b""
        if skipping:
            yield RawLine(pos, number + 1, b"", skipping, False, True)
        elif carry:
            yield RawLine(pos, number + 1, carry, len(carry), False, False)
