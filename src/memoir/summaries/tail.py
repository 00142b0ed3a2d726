"""The last exchange's timestamp of an archived JSONL transcript, read from its tail.

The quiescence gate measures idleness from this timestamp, never from the file's mtime
(the archive copy's mtime changes on every sync). Claude Code and Codex CLI records carry
a top-level ``"timestamp"``; records that are not part of an exchange (file-history
snapshots, compaction summaries) are passed over. The last exchange record decides: its
timestamp, or None when that timestamp is unparseable, when no record has one, or when
nothing was found within ``max_bytes`` of the end (None counts as idle).
"""

from __future__ import annotations

import json
import os
from datetime import UTC, datetime
from pathlib import Path

__all__ = ["last_exchange_time", "parse_timestamp"]

_NOT_EXCHANGE = frozenset({"file-history-snapshot", "summary", "queue-operation", "session_meta"})
_BLOCK = 64 * 1024


def parse_timestamp(value: object) -> datetime | None:
    """An ISO-8601 string (``Z`` allowed) or epoch seconds/milliseconds, as aware UTC."""
    try:
        if isinstance(value, str) and value.strip():
            moment = datetime.fromisoformat(value.strip())
            return moment if moment.tzinfo else moment.replace(tzinfo=UTC)
        if isinstance(value, int | float) and not isinstance(value, bool):
            seconds = value / 1000 if value > 1e11 else value
            return datetime.fromtimestamp(seconds, tz=UTC)
    except (ValueError, OverflowError, OSError):
        return None
    return None


def _timestamp_of(line: bytes) -> tuple[bool, datetime | None]:
    """(is this an exchange record with a timestamp, its parsed time or None)."""
    if b'"timestamp"' not in line:
        return False, None
    try:
        record = json.loads(line)
    except ValueError:
        return False, None
    if not isinstance(record, dict) or "timestamp" not in record:
        return False, None
    if record.get("type") in _NOT_EXCHANGE:
        return False, None
    return True, parse_timestamp(record.get("timestamp"))


def last_exchange_time(path: Path, *, max_bytes: int = 8 * 1024 * 1024) -> datetime | None:
    """Timestamp of the last exchange record in ``path`` (None: none found or unreadable)."""
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        return None
    try:
        end = os.fstat(fd).st_size
        pos, carry, read = end, b"", 0
        while pos > 0 and read < max_bytes:
            size = min(_BLOCK, pos)
            pos -= size
            chunk = os.pread(fd, size, pos) + carry
            read += size
            lines = chunk.split(b"\n")
            carry = lines[0] if pos > 0 else b""
            complete = lines[1:] if pos > 0 else lines
            for line in reversed(complete):
                found, moment = _timestamp_of(line) if line.strip() else (False, None)
                if found:
                    return moment  # an unparseable timestamp counts as idle
        return None
    except OSError:
        return None
    finally:
        os.close(fd)
