"""The archive-file summary adapter (episodic-memory compatible).

``<archive>/<project>/<session-id>-summary.txt`` sits beside ``<session-id>.jsonl``;
coverage is the archived JSONL's byte size. Writes are atomic (temp file + rename).
The scan is made cheap by the scan cache (:class:`ScanCache`).

A small cache that keeps the per-sync archive scan from re-reading summary files.

Per project folder it keeps the folder's mtime, the conversations that may need work
("watch" rows: state and all) and the settled ones (a current real summary or an empty
file) packed as ``session\tcovered`` lines. While a folder's mtime is unchanged no file was
added, removed or renamed in it — every summary write replaces its file by rename — so
the folder is not listed and no summary file is read.

Growth: Memoir's archive copy grows by in-place appends, which leave the folder's mtime
alone, so by default every settled transcript is still stat-ed and compared with its
coverage (one ``stat`` each). When the archive writer declares that it bumps the folder's
mtime on every write (``memoir.ingest.archive.BUMPS_FOLDER_MTIME``), settled transcripts
of unchanged folders are not even stat-ed.

Safety nets: a folder modified within the last few seconds is never trusted (mtime
granularity), and the whole archive is re-read when the cache is older than
``FULL_RESCAN_MS`` (another tool's in-place edit is noticed within the hour). The cache is
advisory: missing, unreadable or from another version, it is ignored.

The last exchange's timestamp of an archived JSONL transcript, read from its tail.

The quiescence gate measures idleness from this timestamp, never from the file's mtime
(the archive copy's mtime changes on every sync). Claude Code and Codex CLI records carry
a top-level ``"timestamp"``; records that are not part of an exchange (file-history
snapshots, compaction summaries) are passed over. The last exchange record decides: its
timestamp, or None when that timestamp is unparseable, when no record has one, or when
nothing was found within ``max_bytes`` of the end (None counts as idle).
"""

from __future__ import annotations

import glob
import json
import os
import time
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from memoir.home_files import private_dir, write_text_atomic
from memoir.model import Event
from memoir.summaries.port import Conversation
from memoir.summaries.state import (
    COVERAGE_PREFIX,
    SUMMARY_FORMAT,
    Coverage,
    Failure,
    SummaryKind,
    SummaryState,
    format_summary_file,
    parse_summary_file,
)

if TYPE_CHECKING:
    from memoir.store import Store

__all__ = [
    "FULL_RESCAN_MS",
    "HOT_DIR_NS",
    "SUMMARY_SUFFIX",
    "CachedDir",
    "FileSummaryStore",
    "Row",
    "ScanCache",
    "is_settled",
    "last_exchange_time",
    "pack_settled",
    "parse_timestamp",
    "row_of",
    "state_of",
    "summary_path_for",
    "unpack_settled",
]

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


FULL_RESCAN_MS = 3_600_000
HOT_DIR_NS = 3_000_000_000
_VERSION = 4  # 4: rows carry the summary format (issue 38); a v3 cache is read afresh


# [session_id, kind, covered | None, attempts | None, last_attempt_ms | None, format]
Row = list[Any]


def row_of(session_id: str, state: SummaryState) -> Row:
    cov = state.coverage.amount if state.coverage is not None else None
    failure = state.failure
    return [
        session_id,
        state.kind.value,
        cov,
        failure.attempts if failure else None,
        failure.last_attempt_ms if failure else None,
        state.format,
    ]


def state_of(row: Row) -> SummaryState:
    _, kind, cov, attempts, last, written = row
    return SummaryState(
        SummaryKind(kind),
        coverage=Coverage(int(cov)) if cov is not None else None,
        failure=Failure(int(attempts), int(last or 0)) if attempts is not None else None,
        written_format=int(written),
    )


@dataclass(slots=True)
class CachedDir:
    """One folder: its mtime (None when it was hot: never trusted), the rows that may need
    work, and the settled ones packed as ``sid\tcovered`` lines (``sid\t-`` for an empty
    summary) so that loading them costs one string."""

    mtime_ns: int | None
    watch: list[Row] = field(default_factory=list)
    settled: str = ""


def pack_settled(rows: list[tuple[str, int | None]]) -> str:
    return "\n".join(f"{sid}\t{'-' if cov is None else cov}" for sid, cov in rows)


def unpack_settled(packed: str) -> list[tuple[str, int | None]]:
    out: list[tuple[str, int | None]] = []
    for line in packed.split("\n") if packed else ():
        sid, _, cov = line.rpartition("\t")
        out.append((sid, None if cov == "-" else int(cov)))
    return out


@dataclass(slots=True)
class ScanCache:
    full_at_ms: int = 0
    dirs: dict[str, CachedDir] = field(default_factory=dict)

    @classmethod
    def load(cls, path: Path) -> ScanCache | None:
        try:
            data = json.loads(path.read_bytes())
            if data.get("v") != _VERSION:
                return None
            dirs = {name: CachedDir(m, w, st) for name, (m, w, st) in data["dirs"].items()}
            return cls(int(data["at"]), dirs)
        except (OSError, ValueError, KeyError, TypeError, AttributeError):
            return None

    def save(self, path: Path) -> None:
        data = {
            "v": _VERSION,
            "at": self.full_at_ms,
            "dirs": {name: [d.mtime_ns, d.watch, d.settled] for name, d in self.dirs.items()},
        }
        try:
            private_dir(path.parent)
            write_text_atomic(path, json.dumps(data, separators=(",", ":")))
        except OSError:
            pass  # advisory: the next scan reads everything


SUMMARY_SUFFIX = "-summary.txt"
_FORMAT_CHARS = 40  # of a body: enough to tell its summary format
_HEAD = 4096


def summary_path_for(archive_path: Path) -> Path:
    """``…/<session-id>.jsonl`` → ``…/<session-id>-summary.txt``."""
    return archive_path.with_name(archive_path.name[: -len(".jsonl")] + SUMMARY_SUFFIX)


def is_settled(state: SummaryState, current: int) -> bool:
    """Nothing can change without the transcript changing: an empty file, or a real
    summary with no re-summary state that covers the whole transcript."""
    if state.kind is SummaryKind.EMPTY:
        return True
    return (
        state.kind is SummaryKind.REAL
        and state.failure is None
        and state.coverage is not None
        and current <= state.coverage.amount
        and state.format >= SUMMARY_FORMAT  # an older format is redone (issue 38)
    )


def _cached_dir(mtime_ns: int | None, conversations: list[Conversation]) -> CachedDir:
    watch: list[Row] = []
    settled: list[tuple[str, int | None]] = []
    for c in conversations:
        if not is_settled(c.state, c.current):
            watch.append(row_of(c.session_id, c.state))
        elif c.state.kind is SummaryKind.EMPTY:
            settled.append((c.session_id, None))
        else:
            settled.append((c.session_id, c.state.coverage.amount if c.state.coverage else 0))
    return CachedDir(mtime_ns, watch, pack_settled(settled))


def _read_state(path: Path, *, head_only: bool) -> SummaryState:
    """A summary file's state; with ``head_only`` the body may be cut (enough to decide)."""
    try:
        with open(path, "rb") as handle:
            data = handle.read(_HEAD) if head_only else handle.read()
            if head_only and len(data) == _HEAD and b"\n" not in data:
                data += handle.read()
    except FileNotFoundError:
        return SummaryState.missing()
    text = data.decode("utf-8", errors="replace")
    if head_only and text.startswith(COVERAGE_PREFIX):
        # the header and the body's first words (its format: SummaryState.format); the
        # whole body is read on refresh
        header, _, body = text.partition("\n")
        text = header + "\n" + body[:_FORMAT_CHARS]
    return parse_summary_file(text)


class FileSummaryStore:
    unit = "bytes"

    def __init__(
        self,
        archive_dir: Path,
        store: Store | None = None,
        *,
        cache_path: Path | None = None,
        trust_folder_mtime: bool = False,
    ) -> None:
        self.archive_dir = Path(archive_dir)
        self.store = store
        self.cache_path = cache_path
        # True only when every archive writer bumps the folder's mtime on an in-place append
        self.trust_folder_mtime = trust_folder_mtime

    # scanning ----------------------------------------------------------------------------
    def scan(self, *, full: bool = False) -> list[Conversation]:
        """Conversations that may need work (every conversation with ``full``)."""
        if not self.archive_dir.is_dir():
            return []
        now_ns = time.time_ns()
        cache = None if full or self.cache_path is None else ScanCache.load(self.cache_path)
        if cache is not None and now_ns // 1_000_000 - cache.full_at_ms > FULL_RESCAN_MS:
            cache = None
        fresh = ScanCache(full_at_ms=now_ns // 1_000_000 if cache is None else cache.full_at_ms)
        out: list[Conversation] = []
        changed = cache is None
        with os.scandir(self.archive_dir) as entries:
            for entry in entries:
                if entry.name.startswith(".") or not entry.is_dir():
                    continue
                mtime = entry.stat().st_mtime_ns
                cached = cache.dirs.get(entry.name) if cache is not None else None
                if cached is not None and cached.mtime_ns == mtime:
                    found = self._check_cached(entry.name, cached)
                    if found is not None:
                        fresh.dirs[entry.name] = cached
                        out.extend(found)
                        continue
                changed = True
                everything = self._scan_dir(Path(entry.path), entry.name)
                trusted = mtime if now_ns - mtime > HOT_DIR_NS else None
                fresh.dirs[entry.name] = _cached_dir(trusted, everything)
                out.extend(c for c in everything if full or not is_settled(c.state, c.current))
        if cache is not None and fresh.dirs.keys() != cache.dirs.keys():
            changed = True
        if self.cache_path is not None and changed:
            fresh.save(self.cache_path)
        return out

    def _check_cached(self, project: str, cached: CachedDir) -> list[Conversation] | None:
        """An unchanged folder: its watch rows re-measured, and (unless the archive writer
        bumps folder mtimes on growth) every settled transcript stat-ed for growth.
        None when the cache does not match the folder."""
        folder = self.archive_dir / project
        out: list[Conversation] = []
        try:
            fd = os.open(folder, os.O_RDONLY | os.O_DIRECTORY)
        except OSError:
            return None
        try:
            stat = os.stat
            for row in cached.watch:
                size = stat(row[0] + ".jsonl", dir_fd=fd).st_size
                out.append(
                    Conversation(row[0], project, size, state_of(row), folder / f"{row[0]}.jsonl")
                )
            if not self.trust_folder_mtime:
                for sid, cov in unpack_settled(cached.settled):
                    if cov is None:
                        continue  # empty summary: settled forever
                    size = stat(sid + ".jsonl", dir_fd=fd).st_size
                    if size > cov:
                        state = SummaryState(SummaryKind.REAL, coverage=Coverage(cov))
                        out.append(Conversation(sid, project, size, state, folder / f"{sid}.jsonl"))
        except (OSError, ValueError, TypeError, IndexError):
            return None
        finally:
            os.close(fd)
        return out

    def _scan_dir(self, folder: Path, project: str) -> list[Conversation]:
        try:
            names = os.listdir(folder)
        except OSError:
            return []
        present = set(names)
        everything: list[Conversation] = []
        for name in names:
            if not name.endswith(".jsonl") or name.startswith("."):
                continue
            path = folder / name
            try:
                size = os.stat(path).st_size
            except OSError:
                continue
            session_id = name[: -len(".jsonl")]
            summary_name = session_id + SUMMARY_SUFFIX
            state = (
                _read_state(folder / summary_name, head_only=True)
                if summary_name in present
                else SummaryState.missing()
            )
            everything.append(Conversation(session_id, project, size, state, path))
        return everything

    # one conversation ------------------------------------------------------------------
    def find(self, session_id: str) -> Conversation | None:
        if not session_id or "/" in session_id or "\\" in session_id or session_id[0] == ".":
            return None  # never a path outside the archive
        candidates: list[Path] = []
        if self.store is not None:
            session = self.store.sessions.get(session_id)
            if session is not None:
                candidates.append(self.archive_dir / session.project / f"{session_id}.jsonl")
        if self.archive_dir.is_dir():
            pattern = f"*/{glob.escape(session_id)}.jsonl"
            candidates.extend(sorted(self.archive_dir.glob(pattern)))
        for path in candidates:
            if path.is_file():
                base = Conversation(session_id, path.parent.name, 0, SummaryState.missing(), path)
                return self.refresh(base)
        return None

    def refresh(self, conversation: Conversation) -> Conversation:
        path = self._archive(conversation)
        try:
            size = os.stat(path).st_size
        except OSError:
            size = 0
        state = _read_state(summary_path_for(path), head_only=False)
        return Conversation(conversation.session_id, conversation.project, size, state, path)

    def write(self, conversation: Conversation, state: SummaryState) -> None:
        target = summary_path_for(self._archive(conversation))
        if state.kind is SummaryKind.MISSING:
            target.unlink(missing_ok=True)
            return
        write_text_atomic(target, format_summary_file(state))

    def last_exchange(self, conversation: Conversation) -> datetime | None:
        return last_exchange_time(self._archive(conversation))

    def events(self, conversation: Conversation) -> list[Event] | None:
        if self.store is None or self.store.sessions.get(conversation.session_id) is None:
            return None
        return self.store.events.of(conversation.session_id)

    def _archive(self, conversation: Conversation) -> Path:
        if conversation.archive_path is not None:
            return conversation.archive_path
        return self.archive_dir / conversation.project / f"{conversation.session_id}.jsonl"
