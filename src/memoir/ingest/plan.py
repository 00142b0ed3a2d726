"""What one changed transcript needs, and a time for every event it gives none: the steps sync
takes around reading a file.

Decide what one changed transcript needs (pure but for reading a few head bytes).

Given the file, what the index remembers about it (its :class:`SourceState`) and the
sessions already owned by other files, :func:`plan_file` says: resume at the indexed
offset, re-index from scratch (the file shrank or its indexed bytes changed), or leave the
file out (binary, unknown format, excluded project).

A time for every event a transcript gives none: sync's one step after parsing.

The rule is :func:`memoir.model.infer_times` (the nearest known event time before, else
after, else the file's modification time). Sync reads a transcript in batches, and across
syncs as it grows; what this module adds is what a batch cannot see by itself, so a file
read in many batches gets the times one read of it gives:

- the last known event time before the batch: kept in the parser state as
  :data:`KNOWN_AT` (written with every batch; a state written before it was kept falls back
  on the reader's ``last_at``);
- when a batch holds no known time and nothing before it did, the first known time after
  it: :class:`TimeAhead` reads on through the rest of the file (a second handle, a batch
  of lines at a time, stopping at the first event that has a time), once per file read.

A transcript that grows is timed as it stood: lines without a time synced before the first
line with one was written took the file's modification time then, and keep it.
"""

from __future__ import annotations

import fnmatch
import hashlib
import os
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime
from pathlib import Path
from typing import Any

from memoir.ingest.archive import archive_path, in_archive, span_hashes
from memoir.ingest.discover import (
    WHOLE_FORMATS,
    Format,
    FoundFile,
    Identity,
    detect_format,
    head_records,
    identify,
    source_key,
)
from memoir.ingest.gemini_aider import document_head
from memoir.ingest.reader import ReadResult, first_line_number, read_any
from memoir.ingest.records import CHUNK_BYTES, LineReader, parse_ts
from memoir.model import Event, Harness, infer_times
from memoir.model.event import time_of_ns
from memoir.store.values import SourceState

__all__ = [
    "HEAD_BYTES",
    "KNOWN_AT",
    "Plan",
    "Skip",
    "TimeAhead",
    "excluded",
    "is_rewritten",
    "known_before",
    "plan_file",
    "with_times",
]

HEAD_BYTES = 256 * 1024
FIRST_LINE_SCAN = 64 * 1024 * 1024  # how far past an over-long first line detection looks


@dataclass(frozen=True, slots=True)
class Skip:
    # "binary" | "unknown_format" | "excluded" | "empty" | "duplicate" | "memoir_agent"
    reason: str
    session_id: str | None = None
    project: str | None = None
    same_as: str | None = None  # a duplicate: the path that holds the session


@dataclass(frozen=True, slots=True)
class Plan:
    path: str
    fmt: Format
    identity: Identity
    archive: Path
    start: int  # byte offset to read from
    line: int  # lines before ``start``
    keep: int | None  # archive bytes already right (None: write a fresh copy)
    reset: bool
    state: dict[str, Any] = field(default_factory=dict)
    rewritten: bool = False  # the index had this file, but its indexed bytes changed
    moved_from: str | None = None  # the path the index knew this transcript by before
    indexed: int = 0  # the index's offset for this transcript when it was planned
    clash_with: str | None = None  # another transcript holds its id: this one was suffixed

    @property
    def harness(self) -> Harness:
        return _HARNESS.get(self.fmt, Harness.GENERIC)


_HARNESS = {
    Format.CLAUDE: Harness.CLAUDE_CODE,
    Format.CODEX: Harness.CODEX,
    Format.GEMINI: Harness.GEMINI_CLI,
    Format.GEMINI_JSON: Harness.GEMINI_CLI,
    Format.OPENCODE: Harness.OPENCODE,
    Format.AIDER: Harness.AIDER,
}


def gemini_project_root(path: Path) -> str | None:
    """The project folder Gemini CLI wrote in ``.project_root`` beside the ``chats``
    folder a chat is in (a subagent's is one folder deeper); None when there is none."""
    for folder in list(path.parents)[:3]:
        if folder.name == "chats":
            try:
                text = (folder.parent / ".project_root").read_text(encoding="utf-8").strip()
            except (OSError, UnicodeDecodeError):
                return None
            return text or None
    return None


def excluded(project: str, patterns: tuple[str, ...]) -> bool:
    """A project is excluded when its folder name matches a pattern (fnmatch, or the
    pattern appears in it as a path ending, e.g. ``app`` excludes ``-home-ann-app``)."""
    for pattern in patterns:
        if fnmatch.fnmatchcase(project, pattern) or project.endswith("-" + pattern.strip("/")):
            return True
    return False


def is_rewritten(fd: int, size: int, state: SourceState) -> bool:
    """The file shrank, or the bytes the index covers are not the ones it saw."""
    if size < state.size or size < state.offset:
        return True
    if state.offset == 0:
        return False
    return span_hashes(fd, state.offset) != (state.prefix_hash, state.tail_hash)


def _inside(path: str, folder: Path) -> bool:
    try:
        return os.path.commonpath([os.path.abspath(path), os.path.abspath(folder)]) == str(
            os.path.abspath(folder)
        )
    except ValueError:  # different drives
        return False


def _own_run(cwd: str, agent_runs: Path) -> bool:
    """``cwd`` is in Memoir's agent runs folder (as given, or with its links resolved:
    the CLI reports the physical path)."""
    return _inside(cwd, agent_runs) or _inside(cwd, Path(os.path.realpath(agent_runs)))


def _suffixed(identity: Identity, path: str) -> Identity:
    """Another file already holds this session id: this one gets its own."""
    suffix = hashlib.blake2b(path.encode(), digest_size=4).hexdigest()
    return Identity(
        f"{identity.session_id}-{suffix}", identity.project, identity.subagent, identity.cwd
    )


def _shared_bytes_agree(fd: int, size: int, other: str) -> bool:
    """This file (``size`` bytes) is a start of the file ``other``: the same first and last
    4 KiB at ``size`` (the check a resumed read makes)."""
    try:
        with open(other, "rb") as fp:
            theirs = os.fstat(fp.fileno()).st_size
            return theirs >= size and span_hashes(fp.fileno(), size) == span_hashes(fd, size)
    except OSError:
        return False


def _held_elsewhere(
    fd: int,
    cand: FoundFile,
    owner: str,
    old: SourceState | None,
    identity: Identity,
    archive_dir: Path,
) -> bool | Skip:
    """Another path, ``owner`` (index state ``old``), holds this file's session id. True:
    this file is that transcript and takes the session over — the owner is gone (moved,
    renamed) or is our own archive copy (indexed by ``verify --repair`` while this source
    was unknown to it), or it is unchanged while this copy holds more. A ``duplicate``
    Skip: the same transcript in a second folder, holding nothing the index lacks (it
    starts with the bytes indexed from the owner, or is a start of the owner). False: a
    different transcript (an id clash)."""
    if old is None:
        return False
    ahead = not is_rewritten(fd, cand.size, old)  # starts with the bytes indexed from it
    if not os.path.exists(owner) or _inside(owner, archive_dir):
        return ahead
    if ahead and cand.size > old.size:
        try:
            st = os.stat(owner)
        except OSError:
            return True
        if (st.st_size, st.st_mtime_ns) == (old.size, old.mtime_ns):
            return True  # the owner stopped where it was indexed; this copy went on
    if ahead or _shared_bytes_agree(fd, cand.size, owner):
        return Skip("duplicate", identity.session_id, identity.project, owner)
    return False


def _after_first_line(fd: int, head: bytes) -> bytes | None:
    """When ``head`` is one unfinished line (a first record over :data:`HEAD_BYTES`, such
    as a pasted log), the head of the lines after it; None when there is nothing after it
    yet or the head was not cut short. The scan reads at most :data:`FIRST_LINE_SCAN`."""
    if len(head) < HEAD_BYTES or b"\n" in head:
        return None
    pos = len(head)
    while pos < FIRST_LINE_SCAN:
        chunk = os.pread(fd, CHUNK_BYTES, pos)
        if not chunk:
            return None
        newline = chunk.find(b"\n")
        if newline >= 0:
            rest = os.pread(fd, HEAD_BYTES, pos + newline + 1)
            return rest if rest.strip() else None
        pos += len(chunk)
    return None


def plan_file(
    fd: int,
    cand: FoundFile,
    state: SourceState | None,
    *,
    archive_dir: Path,
    exclude: tuple[str, ...],
    owners: dict[str, str],
    key: str | None = None,
    known: Callable[[str], SourceState | None] = lambda _path: None,
    reread: bool = False,
    agent_runs: Path | None = None,
) -> Plan | Skip:
    """``key`` is the path the index knows the transcript by (default: the file read).
    ``owners`` maps session ids to the paths that hold them; ``known`` gives the index's
    state of such a path. A new file whose session id another path holds is that
    transcript moved (renamed, or its project folder renamed) when the other path is gone
    and this file starts with the bytes indexed from it: it is read on from there under its
    new path; so is a source that turns up for a transcript indexed from its archive copy.
    When the other path is still there and the two agree on the bytes they share, it is
    the same transcript synced from two folders (:func:`_held_elsewhere`): left out as a
    duplicate, or read on from the other's state when it is the copy that grew. Otherwise
    it is a different transcript and gets a session id of its own (``clash_with``).
    ``reread``: the stored events are damaged (``verify --repair``): read the file again
    from its start under the session id the index knows, as a rewritten one is.
    ``agent_runs``: the folder Memoir runs the user's agent CLI in when it is the model
    (``MEMOIR_LLM=claude-code`` / ``codex``): a transcript whose working folder is in it
    is one of Memoir's own calls, never the user's (``memoir_agent``)."""
    path = key or source_key(cand.path)
    if state is not None and not reread and not is_rewritten(fd, cand.size, state):
        ps = dict(state.parser_state)
        fmt = Format(ps.get("format", Format.CLAUDE.value))
        identity = Identity(
            state.session_id, str(ps.get("project", "default")), bool(ps.get("subagent")), None
        )
        if excluded(identity.project, exclude):
            return Skip("excluded", state.session_id, identity.project)
        target = (
            in_archive(archive_dir, state.archive_path)
            if state.archive_path
            else archive_path(archive_dir, identity.project, identity.session_id)
        )
        if fmt in WHOLE_FORMATS:  # re-parsed whole; its known messages are passed over
            return Plan(
                path,
                fmt,
                identity,
                target,
                0,
                state.line_count,
                state.offset,
                False,
                ps,
                indexed=state.offset,
            )
        return Plan(
            path,
            fmt,
            identity,
            target,
            state.offset,
            state.line_count,
            state.size,
            False,
            ps,
            indexed=state.offset,
        )
    head = os.pread(fd, HEAD_BYTES, 0)
    if not head.strip():
        return Skip("empty")
    fmt = detect_format(head, cand.path.name)
    if fmt is Format.UNKNOWN and (later := _after_first_line(fd, head)) is not None:
        head = later  # the first line alone is longer than the head: its followers decide
        fmt = detect_format(head)
    if fmt in (Format.BINARY, Format.UNKNOWN):
        return Skip(fmt.value if fmt is Format.BINARY else "unknown_format")
    records: list[dict[str, Any]] = [] if fmt is Format.AIDER else head_records(head)
    if fmt is Format.GEMINI_JSON:
        records = [dict(document_head(head))]
    gemini = fmt in (Format.GEMINI, Format.GEMINI_JSON)
    root_hint = gemini_project_root(cand.path) if gemini else None
    identity = identify(fmt, records, cand.path, cand.root, root_hint)
    if agent_runs is not None and identity.cwd and _own_run(identity.cwd, agent_runs):
        return Skip("memoir_agent", identity.session_id, identity.project)
    clash: str | None = None
    if state is not None:  # rewritten: keep the session id the index knows it by
        identity = Identity(state.session_id, identity.project, identity.subagent, identity.cwd)
    elif (owner := owners.get(identity.session_id)) is not None and owner != path:
        old = known(owner)
        held = _held_elsewhere(fd, cand, owner, old, identity, archive_dir)
        if isinstance(held, Skip):
            return held
        if held and old is not None:  # this file is that transcript: read on from its state
            moved = plan_file(
                fd, cand, old, archive_dir=archive_dir, exclude=exclude, owners=owners, key=path
            )
            return replace(moved, moved_from=owner) if isinstance(moved, Plan) else moved
        identity, clash = _suffixed(identity, path), owner
    if excluded(identity.project, exclude):
        return Skip("excluded", identity.session_id, identity.project)
    # a rewritten transcript keeps its archive copy where it is (an older Memoir may have
    # named its project folder otherwise, migration v14); a new one goes under its project
    if state is not None and state.archive_path:
        target = in_archive(archive_dir, state.archive_path)
    else:
        target = archive_path(archive_dir, identity.project, identity.session_id)
    fresh: dict[str, Any] = {
        "format": fmt.value,
        "project": identity.project,
        "subagent": identity.subagent,
    }
    if identity.cwd and fmt in (
        Format.GEMINI,
        Format.GEMINI_JSON,
        Format.AIDER,
    ):  # their lines do not say it
        fresh["cwd"] = identity.cwd
    return Plan(
        path,
        fmt,
        identity,
        target,
        0,
        0,
        None,
        True,
        fresh,
        rewritten=state is not None,
        indexed=state.offset if state is not None else 0,
        clash_with=clash,
    )


KNOWN_AT = "known_at"  # parser state: the time of the last event that had one (ISO, or None)
_LOOK_BYTES = 2 * 1024 * 1024  # lines parsed at a time looking ahead


def known_before(state: Mapping[str, Any]) -> datetime | None:
    """The last known event time of what was read before ``state`` was saved."""
    if KNOWN_AT in state:
        return parse_ts(state[KNOWN_AT])
    return parse_ts(state.get("last_at"))  # saved before KNOWN_AT was kept


def _last_known(events: Sequence[Event], before: datetime | None) -> datetime | None:
    for e in reversed(events):
        if e.timestamp is not None and not e.time_inferred:
            return e.timestamp
    return before


class TimeAhead:
    """The time of the first event past a batch that has one of its own, in the file at
    ``path`` (``size`` bytes, format ``fmt``); looked for once, then remembered (a later
    batch that needs it again lies before that event: the answer is the same)."""

    def __init__(self, path: str, fmt: Format, session_id: str, size: int) -> None:
        self._path, self._fmt, self._sid, self._size = path, fmt, session_id, size
        self._looked = False
        self._found: datetime | None = None

    def __call__(self, after: ReadResult) -> datetime | None:
        if not self._looked:
            self._looked = True
            self._found = self._look(after)
        return self._found

    def _look(self, after: ReadResult) -> datetime | None:
        try:
            fp = open(self._path, "rb")  # noqa: SIM115 - closed below; sync's handle reads on
        except OSError:
            return None
        with fp:
            lines = iter(
                LineReader(
                    fp,
                    offset=after.offset,
                    line=first_line_number(after.line_count, after.state),
                    limit=max(0, self._size - after.offset),
                )
            )
            state, offset, count = after.state, after.offset, after.line_count
            while True:
                read = read_any(
                    lines,
                    self._fmt,
                    path=self._path,
                    session_id=self._sid,
                    next_ordinal=1,
                    state=state,
                    offset=offset,
                    line_count=count,
                    max_bytes=_LOOK_BYTES,
                )
                for e in read.events:
                    if e.timestamp is not None:
                        return e.timestamp
                if not read.more:
                    return None
                state, offset, count = read.state, read.offset, read.line_count


def with_times(
    result: ReadResult,
    state_before: Mapping[str, Any],
    *,
    mtime_ns: int,
    ahead: TimeAhead | None,
) -> ReadResult:
    """``result`` (a batch read from ``state_before``) with a time for each event its
    source gave none, marked ``time_inferred``, and its state's :data:`KNOWN_AT` moved on."""
    before = known_before(state_before)
    events: Sequence[Event] = result.events
    if any(e.timestamp is None for e in events):
        fallback = time_of_ns(mtime_ns)
        alone = before is None and all(e.timestamp is None for e in events)
        if alone and result.more and ahead is not None:
            fallback = ahead(result) or fallback
        events = infer_times(events, before=before, fallback=fallback)
    known = _last_known(events, before)
    state = {**result.state, KNOWN_AT: known.isoformat() if known is not None else None}
    return replace(result, events=tuple(events), state=state)
