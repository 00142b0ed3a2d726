"""The archive-file summary adapter (episodic-memory compatible).

``<archive>/<project>/<session-id>-summary.txt`` sits beside ``<session-id>.jsonl``;
coverage is the archived JSONL's byte size. Writes are atomic (temp file + rename).
The scan is made cheap by :mod:`memoir.summaries.scan_cache`.
"""

from __future__ import annotations

import glob
import os
import time
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING

from memoir.home_files import write_text_atomic
from memoir.model import Event
from memoir.summaries.fileformat import COVERAGE_PREFIX, format_summary_file, parse_summary_file
from memoir.summaries.port import Conversation
from memoir.summaries.scan_cache import (
    FULL_RESCAN_MS,
    HOT_DIR_NS,
    CachedDir,
    Row,
    ScanCache,
    pack_settled,
    row_of,
    state_of,
    unpack_settled,
)
from memoir.summaries.state import SUMMARY_FORMAT, Coverage, SummaryKind, SummaryState
from memoir.summaries.tail import last_exchange_time

if TYPE_CHECKING:
    from memoir.store import Store

__all__ = ["SUMMARY_SUFFIX", "FileSummaryStore", "is_settled", "summary_path_for"]

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
