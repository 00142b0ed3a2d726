"""The last exchange's timestamp, read from the archived transcript's tail."""

from __future__ import annotations

from datetime import UTC, datetime

from memoir.summaries.files import last_exchange_time, parse_timestamp

from .helpers import assistant_line, user_line

TINY_LAST = datetime(2025, 9, 19, 17, 36, 33, 487000, tzinfo=UTC)


def test_tiny_fixture(claude_fixtures, tmp_path) -> None:
    assert last_exchange_time(claude_fixtures / "tiny-conversation.jsonl") == TINY_LAST


def test_trailing_records_without_exchanges_are_passed_over(claude_fixtures, tmp_path) -> None:
    """medium-conversation.jsonl is snapshots and a compaction summary: no exchange."""
    path = tmp_path / "t.jsonl"
    path.write_bytes(
        (claude_fixtures / "tiny-conversation.jsonl").read_bytes()
        + (claude_fixtures / "medium-conversation.jsonl").read_bytes()
    )
    assert path.stat().st_size == 41069
    assert last_exchange_time(path) == TINY_LAST


def test_missing_unreadable_and_timestamp_free(tmp_path) -> None:
    assert last_exchange_time(tmp_path / "nope.jsonl") is None
    path = tmp_path / "generic.jsonl"
    path.write_text('{"role":"user","content":"hi"}\nnot json\n')
    assert last_exchange_time(path) is None


def test_long_lines_across_blocks(tmp_path) -> None:
    early = datetime(2025, 1, 1, tzinfo=UTC)
    late = datetime(2025, 1, 2, tzinfo=UTC)
    path = tmp_path / "big.jsonl"
    big = "x" * 300_000  # spans several 64 KiB blocks
    path.write_text(
        user_line("s", "q", early) + "\n" + assistant_line("s", big, late) + "\n" + "{broken\n"
    )
    assert last_exchange_time(path) == late
    assert last_exchange_time(path, max_bytes=64 * 1024) is None  # gave up reading: idle


def test_parse_timestamp_forms() -> None:
    assert parse_timestamp("2025-09-19T17:36:33.487Z") == TINY_LAST
    assert parse_timestamp(1758303393487) == TINY_LAST
    assert parse_timestamp("2025-09-19T17:36:33.487") == TINY_LAST  # naive → UTC
    assert parse_timestamp("yesterday") is None
    assert parse_timestamp(True) is None
    assert parse_timestamp(None) is None


def test_bookkeeping_records_with_timestamps_are_not_exchanges(tmp_path) -> None:
    at = datetime(2025, 1, 1, tzinfo=UTC)
    path = tmp_path / "q.jsonl"
    queued = '{"type":"queue-operation","operation":"enqueue","timestamp":"2025-06-01T00:00:00Z"}'
    path.write_text(user_line("s", "q", at) + "\n" + queued + "\n")
    assert last_exchange_time(path) == at


def test_unparseable_last_timestamp_counts_as_idle(tmp_path) -> None:
    path = tmp_path / "u.jsonl"
    bad = '{"type":"assistant","timestamp":"not a time","message":{"content":"x"}}'
    path.write_text(user_line("s", "q", datetime(2025, 1, 1, tzinfo=UTC)) + "\n" + bad + "\n")
    assert last_exchange_time(path) is None
