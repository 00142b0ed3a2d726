"""The line splitter: offsets, partial last lines, oversized lines, chunk boundaries."""

from __future__ import annotations

import io
import tracemalloc

from hypothesis import given, settings
from hypothesis import strategies as st

from memoir.ingest.records import LineReader, split_complete_lines

line_bytes = st.binary(max_size=40).map(lambda b: b.replace(b"\n", b"x"))


@given(st.lists(line_bytes, max_size=30), line_bytes, st.integers(0, 10_000))
def test_split_returns_complete_lines_with_offsets(
    lines: list[bytes], tail: bytes, base: int
) -> None:
    data = b"".join(line + b"\n" for line in lines) + tail
    out, used = split_complete_lines(data, base)
    assert [piece for _, piece in out] == lines
    assert used == len(data) - len(tail)
    for offset, piece in out:
        assert data[offset - base : offset - base + len(piece)] == piece


@settings(max_examples=200)
@given(
    st.lists(line_bytes, max_size=30),
    line_bytes,
    st.integers(1, 17),
    st.integers(0, 5),
)
def test_reader_matches_split_for_any_chunk_size(
    lines: list[bytes], tail: bytes, chunk: int, skip_lines: int
) -> None:
    data = b"".join(line + b"\n" for line in lines) + tail
    start_line = min(skip_lines, len(lines))
    start = sum(len(line) + 1 for line in lines[:start_line])
    copied: list[tuple[int, bytes]] = []
    reader = LineReader(
        io.BytesIO(data),
        offset=start,
        line=start_line,
        chunk=chunk,
        sink=lambda pos, c: copied.append((pos, c)),
    )
    got = list(reader)
    complete = [g for g in got if g.terminated]
    assert [g.data for g in complete] == lines[start_line:]
    assert [g.number for g in complete] == list(range(start_line + 1, len(lines) + 1))
    for g in complete:
        assert data[g.offset : g.end] == g.data + b"\n"
    tails = [g for g in got if not g.terminated]
    assert [t.data for t in tails] == ([tail] if tail else [])
    # the sink saw every byte from the start offset, in order, exactly once
    assert b"".join(c for _, c in copied) == data[start:]
    positions = [pos for pos, _ in copied]
    assert positions == sorted(positions) and (not positions or positions[0] == start)


@given(st.integers(1, 9), st.integers(0, 3))
def test_oversized_line_is_reported_not_held(chunk: int, extra: int) -> None:
    big = b"y" * (20 + extra)
    data = b"ok1\n" + big + b"\nok2\n"
    got = list(LineReader(io.BytesIO(data), max_line=10, chunk=chunk))
    assert [(g.data, g.oversized, g.number) for g in got] == [
        (b"ok1", False, 1),
        (b"", True, 2),
        (b"ok2", False, 3),
    ]
    assert got[1].size == len(big) and got[1].offset == 4
    assert got[2].offset == 4 + len(big) + 1


def test_oversized_unterminated_tail_is_not_terminated() -> None:
    got = list(LineReader(io.BytesIO(b"a\n" + b"z" * 50), max_line=10, chunk=8))
    assert got[-1].oversized and not got[-1].terminated and got[-1].size == 50


def test_limit_stops_reading() -> None:
    got = list(LineReader(io.BytesIO(b"a\nb\nc\n"), limit=4))
    assert [g.data for g in got] == [b"a", b"b"]


any_line = st.binary(max_size=30).map(lambda b: b.replace(b"\n", b"x"))


@settings(max_examples=300)
@given(st.lists(any_line, max_size=20), any_line, st.integers(1, 25))
def test_reader_cuts_every_line_and_oversized_one_at_any_chunk_size(
    lines: list[bytes], tail: bytes, chunk: int
) -> None:
    """Lines over the limit and lines that span chunks, at any chunk size: each line
    comes out once, with its offset and size, its bytes unless it is over the limit."""
    data = b"".join(line + b"\n" for line in lines) + tail
    got = list(LineReader(io.BytesIO(data), max_line=10, chunk=chunk))
    want, pos = [], 0
    for number, line in enumerate(lines, start=1):
        big = len(line) > 10
        want.append((pos, number, b"" if big else line, len(line), True, big))
        pos += len(line) + 1
    if tail:
        big = len(tail) > 10
        want.append((pos, len(lines) + 1, b"" if big else tail, len(tail), False, big))
    assert [(g.offset, g.number, g.data, g.size, g.terminated, g.oversized) for g in got] == want


def test_reader_holds_one_chunk_between_lines() -> None:
    """Between two lines the iterator holds the chunk it is cutting them from, not a list
    of its lines as well (sync keeps one iterator open across batches)."""
    chunk = 256 * 1024
    data = b"".join(b"%06d " % i + b"x" * 500 + b"\n" for i in range(2000))
    lines = iter(LineReader(io.BytesIO(data), chunk=chunk))
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        first = next(lines)
        held = tracemalloc.get_traced_memory()[0] - before - len(first.data)
    finally:
        tracemalloc.stop()
    assert first.number == 1
    assert held < chunk * 1.25
    assert sum(1 for _ in lines) == 1999
