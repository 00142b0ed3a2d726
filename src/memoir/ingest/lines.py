"""Split transcript bytes into complete lines with their byte offsets.

Transcripts are append-only JSONL files that an agent may be writing while we read. Only
complete lines (ending in ``\\n``) are handed out as terminated; bytes after the last
newline come out once, at the end, as an unterminated line the caller may accept (a
complete JSON object) or leave for the next sync. A line longer than ``max_line`` bytes is
never held in memory: it is reported as oversized with its size and skipped.

:func:`split_complete_lines` splits bytes held whole (a file's head, for detection);
:class:`LineReader` streams a file in chunks of :data:`CHUNK_BYTES`, cutting each line out
of its chunk only when it is asked for, and hands every chunk read to an optional sink (the
archive copy) so the file is read exactly once. Between two lines it holds one chunk (and
the pieces of a line that began in an earlier one): sync reads a transcript in batches off
one iterator, so that is what a long file's sync holds on top of a short file's
(``docs/benchmarks.md``, peak memory of one sync: splitting a 4 MiB chunk into a list of
lines up front held the chunk three times over between batches, and left the allocator's
heap fragmented with freed 4 MiB blocks).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import BinaryIO

__all__ = ["MAX_LINE_BYTES", "LineReader", "RawLine", "split_complete_lines"]

MAX_LINE_BYTES = 16 * 1024 * 1024  # longer lines are skipped as "oversized" (still archived)
CHUNK_BYTES = 1024 * 1024  # bytes read at a time (what a line iterator holds)


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
        """Lines are cut from one chunk at a time as they are asked for: between two lines
        the iterator holds the chunk being read and, of a line begun in an earlier chunk,
        its pieces so far (never more than ``max_line`` bytes) — not a list of the chunk's
        lines, nor a second copy of it (sync reads a file in batches off one iterator, and
        what it holds between them is what its memory does not give back)."""
        self._fp.seek(self._offset)
        pos = self._offset  # file position of the next line's first byte
        number = self._line
        parts: list[bytes] = []  # pieces of a line begun in earlier chunks
        held = 0  # their total size
        skipping = 0  # > 0 while discarding an oversized line: bytes discarded so far
        max_line = self._max_line
        while True:
            chunk = self._read(pos + held + skipping)
            if not chunk:
                break
            start = 0
            nl = chunk.find(b"\n")
            if nl >= 0 and (skipping or parts):  # the line begun before ends here
                size = skipping + held + nl
                number += 1
                if skipping or size > max_line:
                    yield RawLine(pos, number, b"", size, True, True)
                else:
                    parts.append(chunk[:nl])
                    yield RawLine(pos, number, b"".join(parts), size)
                pos += size + 1
                parts, held, skipping = [], 0, 0
                start = nl + 1
                nl = chunk.find(b"\n", start)
            while nl >= 0:
                number += 1
                size = nl - start
                if size > max_line:
                    yield RawLine(pos, number, b"", size, True, True)
                else:
                    yield RawLine(pos, number, chunk[start:nl], size)
                pos += size + 1
                start = nl + 1
                nl = chunk.find(b"\n", start)
            rest = len(chunk) - start
            if skipping:
                skipping += rest
            elif rest and held + rest > max_line:
                skipping, parts, held = held + rest, [], 0
            elif rest:
                parts.append(chunk[start:] if start else chunk)
                held += rest
            chunk = b""  # not held while the next one is read
        if skipping:
            yield RawLine(pos, number + 1, b"", skipping, False, True)
        elif parts:
            tail = b"".join(parts)
            yield RawLine(pos, number + 1, tail, held, False, False)
