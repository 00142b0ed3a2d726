"""What sync keeps in the home beside the index: the archive copy of every transcript, the
files it left out, its single-instance locks, and the re-scan of the text it derived.

The archive: a durable copy of every transcript, because agents delete theirs.

``<home>/archive/<project>/<session-id>.jsonl`` mirrors the source byte for byte (the
summary coverage of the episodic-memory design is measured in these bytes). A new copy is
written to a temp file in the same folder and renamed into place; a grown transcript gets
only its new bytes appended, after truncating the copy to the size the index recorded, so
an append interrupted by a crash is redone cleanly by the next sync. A copy that is about
to be replaced by a rewritten (shrunk or changed) transcript is first moved to
``<project>/.replaced/`` so nothing once archived is ever lost.

Files sync looked at and deliberately left out of the index.

A binary file, a file in no known format, a file in an excluded project, a conversation
carrying the do-not-index marker and one of Memoir's own model calls through the user's
agent CLI (``memoir_agent``) are remembered in ``<home>/state/ingest-ignored.json``
with the size and mtime seen, so the next sync skips them on ``stat`` alone (no session
rows exist for them, hence no source state in the store). ``verify`` lists them.

Single-instance locks: ``fcntl`` locks on ``<home>/locks/<name>.lock``.

``sync_lock`` keeps one sync (archive + index + summary pass) per home; ``embed_lock`` one
embedding catch-up, so a background sync that embeds a large backlog never holds the sync
lock while it does. The kernel releases a lock when its holder dies, so a crashed process
never blocks the next one. A second holder fails fast with :class:`memoir.errors.Busy`
(:func:`memoir.store.db.file_claim` does the locking).

The re-scan: derived text read again when the secret detector changes (issue 41, point 4).

Summaries, compaction checkpoints and traces, cached model answers (episodes) and memory
items were written by earlier versions with the detector of their day. When
:func:`memoir.secrets.detector_id` differs from the one a target was scanned with, the
target is read again from its start, a page at a time, and each text that now holds a
secret is rewritten with placeholders (:func:`memoir.secrets.mask`, JSON strings one by
one with :func:`~memoir.secrets.mask_json`). A memory item whose content or quote holds
one is forgotten, as extraction refuses such an item (a quote stays an exact substring of
its stored message, and no credential is stored).

When: at the end of every ``memoir sync`` (and ``memoir verify --repair``), one process at
a time; a plain ``memoir verify`` reports where it stands (:func:`state_report`) and writes
nothing. Once every target is done with the current detector a run costs one query.

Bounded and resumable: a run reads at most ``budget`` rows; each page's changes and its
cursor are written in one transaction (summaries: the summary first, then the cursor — a
summary masked twice is the same), so a run killed half-way resumes after the last page
it finished. The archive, the events and the search index are never touched.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Iterator
from contextlib import AbstractContextManager, ExitStack, contextmanager
from dataclasses import asdict, dataclass, field, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, BinaryIO, Protocol

from memoir.errors import ReadOnly
from memoir.home_files import private_dir, private_file, sweep_temps, temp_for, write_text_atomic
from memoir.secrets.rules import detector_id
from memoir.store.db import file_claim, shared_file_claim
from memoir.store.parts.sessions import TABLE_TARGETS, ForgetIn, RescanPart, RescanState

__all__ = [
    "BUDGET",
    "BUMPS_FOLDER_MTIME",
    "HASH_SPAN",
    "PAGE",
    "SUMMARIES",
    "ArchiveCopy",
    "IgnoredFile",
    "IgnoredFiles",
    "RescanReport",
    "SummaryTexts",
    "archive_path",
    "embed_lock",
    "in_archive",
    "is_prefix_of",
    "lock_path",
    "masked_text",
    "preserve",
    "rescan",
    "span_hashes",
    "state_report",
    "sync_lock",
    "sync_lock_to_read",
]

HASH_SPAN = 4096

# Appending to a copy in place does not change its folder's mtime, so the writer touches the
# folder after every append. The summary scan relies on this: a project folder whose mtime
# has not moved holds no grown transcript, and its files need not be stat-ed.
BUMPS_FOLDER_MTIME = True


def archive_path(archive_dir: Path, project: str, session_id: str) -> Path:
    return archive_dir / project / f"{session_id}.jsonl"


def in_archive(archive_dir: Path, recorded: str) -> Path:
    """Where an archived copy the index recorded as ``recorded`` lives in *this* archive:
    a home that was moved or copied (or another home sharing a PostgreSQL database)
    recorded its own absolute paths, and the layout below the archive folder,
    ``<project>/<file>``, is what stays the same."""
    path = Path(recorded)
    if not path.is_absolute():
        return archive_dir / path
    if path.is_relative_to(archive_dir) or len(path.parts) < 3:
        return path
    return archive_dir / path.parent.name / path.name


def _hash(data: bytes) -> str:
    return hashlib.blake2b(data, digest_size=16).hexdigest()


def span_hashes(fd: int, offset: int) -> tuple[str, str]:
    """(hash of the first min(offset, 4096) bytes, hash of the 4096 bytes before offset)."""
    head = os.pread(fd, min(offset, HASH_SPAN), 0)
    start = max(0, offset - HASH_SPAN)
    tail = head[start:offset] if offset <= HASH_SPAN else os.pread(fd, offset - start, start)
    return _hash(head), _hash(tail)


def is_prefix_of(archive: Path, source_fd: int, source_size: int) -> bool:
    """True when the archived copy looks like a prefix of the source (same first and last
    4 KiB at the copy's size): overwriting it with the source then loses nothing."""
    try:
        size = archive.stat().st_size
    except FileNotFoundError:
        return True
    if size > source_size:
        return False
    with open(archive, "rb") as fp:
        theirs = span_hashes(fp.fileno(), size)
    return theirs == span_hashes(source_fd, size)


def preserve(archive: Path) -> Path | None:
    """Move an archived copy aside into ``.replaced/`` (returns where it went)."""
    if not archive.exists():
        return None
    stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%S%fZ")
    target = archive.parent / ".replaced" / f"{archive.stem}-{stamp}{archive.suffix}"
    private_dir(target.parent)
    os.replace(archive, target)
    return target


class ArchiveCopy:
    """Writes one transcript's bytes into the archive as they are read.

    ``keep`` is how many bytes of an existing copy are already right (the size the index
    recorded); ``None`` writes a fresh copy through a temp file. :meth:`feed` takes
    (file position, chunk) pairs and writes only bytes past what the copy holds.
    """

    def __init__(self, target: Path, keep: int | None) -> None:
        self.target = target
        private_dir(target.parent)
        if keep is None or not target.exists():
            sweep_temps(target)
            self._tmp: Path | None = temp_for(target)
            self._fp: BinaryIO = private_file(self._tmp, "wb")  # closed in commit/abort
            self.size = 0
        else:
            self._tmp = None
            keep = min(keep, target.stat().st_size)
            self._fp = private_file(target, "r+b")
            self._fp.truncate(keep)
            self._fp.seek(keep)
            self.size = keep
        self.written = 0
        self._bumped = 0  # bytes written when the folder's mtime was last moved

    def feed(self, pos: int, chunk: bytes) -> None:
        end = pos + len(chunk)
        if end <= self.size:
            return
        if pos < self.size:
            chunk = chunk[self.size - pos :]
        elif pos > self.size:
            raise ValueError(f"archive gap: copy has {self.size} bytes, chunk starts at {pos}")
        self._fp.write(chunk)
        self.size += len(chunk)
        self.written += len(chunk)

    def fill(self, fd: int, upto: int) -> None:
        """Copy source bytes the copy lacks below ``upto`` (a copy deleted by hand)."""
        while self.size < upto:
            data = os.pread(fd, min(upto - self.size, 1 << 22), self.size)
            if not data:
                break
            self.feed(self.size, data)

    def checkpoint(self) -> None:
        """Make the bytes written so far the archived copy, and go on writing: a batch of
        the transcript is about to be committed that counts on them (sync commits a large
        transcript in batches; a crash after this resumes from the last committed one, the
        copy truncated to it). A fresh copy is renamed into place at its first checkpoint."""
        self._fp.flush()
        if self._tmp is not None:
            os.replace(self._tmp, self.target)  # the open file is the renamed one
            self._tmp = None
            self._bumped = self.written
        elif self.written > self._bumped:
            os.utime(self.target.parent)  # see BUMPS_FOLDER_MTIME
            self._bumped = self.written

    def commit(self) -> None:
        self._fp.close()
        if self._tmp is not None:
            os.replace(self._tmp, self.target)  # a rename moves the folder's mtime itself
            self._tmp = None
        elif self.written:
            os.utime(self.target.parent)  # see BUMPS_FOLDER_MTIME

    def abort(self) -> None:
        self._fp.close()
        if self._tmp is not None:
            self._tmp.unlink(missing_ok=True)
            self._tmp = None


@dataclass(frozen=True, slots=True)
class IgnoredFile:
    path: str
    size: int
    mtime_ns: int
    # "binary" | "unknown_format" | "excluded" | "no_index" | "unreadable" | "too_large"
    # | "memoir_agent"
    reason: str
    session_id: str | None = None
    project: str | None = None


class IgnoredFiles:
    def __init__(self, path: Path) -> None:
        self.path = path
        self.items: dict[str, IgnoredFile] = {}
        self.dirty = False
        try:
            raw = json.loads(path.read_text(encoding="utf-8"))
        except (FileNotFoundError, ValueError, OSError):
            raw = {}
        if isinstance(raw, dict):
            for key, value in raw.items():
                try:
                    self.items[key] = IgnoredFile(**value)
                except TypeError:
                    continue

    def unchanged(self, path: str, size: int, mtime_ns: int) -> IgnoredFile | None:
        item = self.items.get(path)
        if item is not None and item.size == size and item.mtime_ns == mtime_ns:
            return item
        return None

    def get(self, path: str) -> IgnoredFile | None:
        return self.items.get(path)

    def add(self, item: IgnoredFile) -> None:
        if self.items.get(item.path) != item:
            self.items[item.path] = item
            self.dirty = True

    def discard(self, path: str) -> None:
        if self.items.pop(path, None) is not None:
            self.dirty = True

    def save(self) -> None:
        if not self.dirty:
            return
        private_dir(self.path.parent)
        data = {k: asdict(v) for k, v in sorted(self.items.items())}
        write_text_atomic(self.path, json.dumps(data, indent=1))
        self.dirty = False


def lock_path(home: Path, name: str = "sync") -> Path:
    return home / "locks" / f"{name}.lock"


def sync_lock(home: Path) -> AbstractContextManager[None]:
    """Held while a sync archives, indexes and summarizes."""
    return file_claim(lock_path(home, "sync"), "another memoir sync is running")


@contextmanager
def sync_lock_to_read(home: Path) -> Iterator[None]:
    """The sync lock for a reader (``memoir verify``): held as ``sync_lock`` is, or — in a
    home this process cannot write — shared, which still keeps a sync out and fails with
    ``Busy`` while one runs."""
    with ExitStack() as stack:
        try:
            stack.enter_context(sync_lock(home))
        except ReadOnly:
            busy = "another memoir sync is running"
            stack.enter_context(shared_file_claim(lock_path(home, "sync"), busy))
        yield


def embed_lock(home: Path) -> AbstractContextManager[None]:
    """Held while missing embeddings are computed (``memoir embed``, a background sync)."""
    return file_claim(lock_path(home, "embed"), "another memoir embed is running")


# the re-scan of derived text ----------------------------------------------------------


BUDGET = 5000  # rows read per run at most

PAGE = 100

SUMMARIES = "summaries"


class SummaryTexts(Protocol):
    """What the re-scan needs of a summary store (:class:`memoir.summaries.port.SummaryStore`)."""

    def scan(self, *, full: bool = False) -> list[Any]: ...
    def refresh(self, conversation: Any) -> Any: ...
    def write(self, conversation: Any, state: Any) -> None: ...


@dataclass
class RescanReport:
    """``run``: per target, rows read and changed by this run; ``total``: the same since
    the detector changed; ``done``: targets fully re-scanned with ``detector``;
    ``skipped``: why nothing was scanned."""

    detector: str
    run: dict[str, dict[str, int]] = field(default_factory=dict)
    total: dict[str, dict[str, int]] = field(default_factory=dict)
    done: list[str] = field(default_factory=list)
    skipped: str | None = None  # why this run scanned nothing (read-only, another's run)

    @property
    def finished(self) -> bool:
        return set(self.done) >= {*TABLE_TARGETS, SUMMARIES}

    def as_dict(self) -> dict[str, Any]:
        return {**asdict(self), "finished": self.finished}


def state_report(states: dict[str, RescanState], detector: str | None = None) -> RescanReport:
    """Where the re-scan stands, from the stored ``states`` (nothing is read or written):
    a target scanned with another detector counts as not started."""
    detector = detector or detector_id()
    report = RescanReport(detector)
    for target in (*TABLE_TARGETS, SUMMARIES):
        state = states.get(target)
        if state is None or state.detector != detector:
            state = RescanState(target, detector)
        report.total[target] = {"scanned": state.scanned, "changed": state.changed}
        if state.done:
            report.done.append(target)
    return report


def masked_text(text: str) -> str:
    """``text`` with its secrets masked; a JSON document has its strings masked one by one
    (it stays JSON)."""
    from memoir.secrets import has_secret, mask, mask_json  # the detector loads on use

    if not text or not has_secret(text):
        return text
    if text[:1] in "{[":
        try:
            value = json.loads(text)
        except ValueError:
            return mask(text)
        done = mask_json(value)
        return text if done is value else json.dumps(done, ensure_ascii=False)
    return mask(text)


def rescan(
    part: RescanPart,
    summaries: SummaryTexts | None = None,
    *,
    forget_in: ForgetIn,
    budget: int = BUDGET,
    detector: str | None = None,
    page: int = PAGE,
) -> RescanReport:
    """Re-scan what is left of each target, at most ``budget`` rows in all; a memory item
    holding a secret is forgotten by ``forget_in`` (the memory engine's)."""
    detector = detector or detector_id()
    states = part.states()
    report = RescanReport(detector)
    left = budget
    for target in (*TABLE_TARGETS, SUMMARIES):
        state = states.get(target)
        if state is None or state.detector != detector:
            state = RescanState(target, detector)
        read = changed = 0
        listed: list[Any] | None = None
        while not state.done and left > 0:
            size = min(page, left)
            if target == SUMMARIES:
                if listed is None:  # every conversation, once a run, by session id
                    found = summaries.scan(full=True) if summaries is not None else []
                    listed = sorted(found, key=_session_of)
                state, n, c = _summary_page(state, listed, summaries, size)
                part.save(state)
            else:
                state, n, c = _table_page(part, state, size, forget_in)
            read, changed, left = read + n, changed + c, left - max(n, 1)
        report.run[target] = {"scanned": read, "changed": changed}
        report.total[target] = {"scanned": state.scanned, "changed": state.changed}
        if state.done:
            report.done.append(target)
    return report


def _table_page(
    part: RescanPart, state: RescanState, size: int, forget_in: ForgetIn
) -> tuple[RescanState, int, int]:
    from memoir.secrets import has_secret

    rows = part.page(state.target, state.cursor, size)
    updates: dict[str, str] = {}
    forget: list[str] = []
    for key, texts in rows:
        if state.target == "memory":
            if any(has_secret(t) for t in texts):
                forget.append(key)
        elif (new := masked_text(texts[0])) != texts[0]:
            updates[key] = new
    changed = len(updates) + len(forget)
    state = replace(
        state,
        cursor=rows[-1][0] if rows else state.cursor,
        scanned=state.scanned + len(rows),
        changed=state.changed + changed,
        done=len(rows) < size,
    )
    part.save(state, updates=updates, forget=forget, forget_in=forget_in)
    return state, len(rows), changed


def _summary_page(
    state: RescanState, listed: list[Any], summaries: SummaryTexts | None, size: int
) -> tuple[RescanState, int, int]:
    if summaries is None:  # no summary store here: nothing to scan
        return replace(state, done=True), 0, 0
    pending = [c for c in listed if c.session_id > state.cursor][:size]
    from memoir.secrets import mask

    changed = 0
    for conversation in pending:
        full = summaries.refresh(conversation)
        body = full.state.body
        if body and (new := mask(body)) != body:
            summaries.write(full, replace(full.state, body=new))
            changed += 1
    return (
        replace(
            state,
            cursor=pending[-1].session_id if pending else state.cursor,
            scanned=state.scanned + len(pending),
            changed=state.changed + changed,
            done=len(pending) < size,
        ),
        len(pending),
        changed,
    )


def _session_of(conversation: Any) -> str:
    return str(conversation.session_id)
