"""One sync run's state and values, and how a transcript's batches are read and committed.

:func:`memoir.ingest.sync.sync` plans each file and drives it batch by batch; here is
what a batch is: the reader of the next :data:`BATCH_BYTES` of lines (or a JSON document
whole), the session row, exchanges and source state one transaction commits
(:func:`commit_batch`), and the :class:`SyncReport` and :class:`SyncObserver` a run fills
in and tells.

The open exchange is carried from batch to batch in memory, reduced to the events
building it reads (:func:`memoir.model.exchange.open_tail`): its prompt and replies, the
first call of each tool, the tool events its bounded excerpt takes, the first and last
timestamp, line and event; for the first exchange (or before it), the lead-in's harness
text its excerpt takes too.
What stays unbounded is that exchange's own text — one prompt followed by a very long
agent run is one exchange row, rewritten by every batch it spans.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field, replace
from datetime import datetime
from typing import Any, Protocol

from memoir.config import Settings
from memoir.ingest.archive import ArchiveCopy, IgnoredFiles, is_prefix_of, preserve
from memoir.ingest.discover import WHOLE_FORMATS, Format, FoundFile
from memoir.ingest.plan import Plan
from memoir.ingest.reader import (
    ReadResult,
    first_line_number,
    read_any,
    read_gemini_document,
    read_json_list,
)
from memoir.ingest.records import LineReader, parse_ts
from memoir.model import Author, Event, EventKind, Exchange, Session, SessionFlags, build_exchanges
from memoir.model.exchange import open_tail
from memoir.store.port import Store
from memoir.store.values import IngestBatch, SourceState

__all__ = [
    "BATCH_BYTES",
    "MAX_JSON_BYTES",
    "NO_INDEX_MARKER",
    "Cursor",
    "SyncObserver",
    "SyncProgress",
    "SyncReport",
    "SyncRun",
    "batch_reader",
    "commit_batch",
    "has_marker",
    "open_copy",
    "stored_open_exchange",
]

NO_INDEX_MARKER = "<memoir:no-index>"


BATCH_BYTES = 2 * 1024 * 1024  # lines of a transcript parsed, stored and committed at a time


MAX_JSON_BYTES = 64 * 1024 * 1024  # a one-document JSON transcript is parsed whole


_EVENT_PAGE = 2000  # stored events read per query when the open exchange is rebuilt


class SyncObserver(Protocol):
    """What a sync tells whoever keeps something derived from a conversation.

    Ingest knows nothing of what that is; the composition root (``memoir.app``) hands in the
    summaries' upkeep. Each call is made at the moment of the change, inside the sync (under
    its lock), right after what it reports is committed — so no crash can fall between the
    change and the caller's reaction that a later sync would not repair: a rewritten file is
    told once its new rows are in; a removed conversation (the do-not-index marker, a purge)
    before the file is remembered as ignored, so a sync that stops in between removes it, and
    tells, again."""

    def rewritten(self, session_id: str) -> None:
        """The session's transcript was rewritten and is indexed anew from its start:
        what was derived from the old content may tell of what is gone."""
        ...

    def removed(self, session_id: str, project: str) -> None:
        """The session's rows and archived copies were removed (it carries the
        do-not-index marker, or its project was purged): nothing derived may stay."""
        ...


@dataclass
class SyncReport:
    files_scanned: int = 0
    files_unchanged: int = 0
    files_copied: int = 0
    files_indexed: int = 0
    files_reset: int = 0
    files_ignored: int = 0
    files_indexed_elsewhere: int = 0  # a replica sharing the database wrote it first
    files_vanished: int = 0  # found by the scan, deleted before it was read
    bytes_indexed: int = 0
    events_added: int = 0
    exchanges_added: int = 0
    exchanges_updated: int = 0
    lines_skipped: int = 0
    sessions_touched: list[str] = field(default_factory=list)
    sessions_removed: list[str] = field(default_factory=list)
    excluded_kept: list[str] = field(default_factory=list)  # stored before the exclusion
    # "path: same as <path>": a transcript another folder's copy holds (not stored twice)
    duplicates: list[str] = field(default_factory=list)
    # "path: session id <id> is <other path>'s; stored as <id-suffix>": two transcripts
    id_clashes: list[str] = field(default_factory=list)
    # symlinked transcripts pointing out of their source folder, not read
    symlinks_left_out: list[str] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    duration_s: float = 0.0

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True, slots=True)
class SyncProgress:
    files_done: int
    files_total: int
    bytes_done: int
    bytes_total: int
    path: str


@dataclass
class SyncRun:
    settings: Settings
    store: Store
    observer: SyncObserver
    report: SyncReport
    ignored: IgnoredFiles
    owners: dict[str, str]


@dataclass
class Cursor:
    """How far one file's sync has got: what its last committed batch recorded."""

    state: dict[str, Any]  # parser state (with ``open_from``)
    offset: int
    line_count: int
    next_ordinal: int
    # the source row's offset the next batch's write expects: when this file was planned
    # (a replica sharing the database that indexed it meanwhile makes the write refuse,
    # rather than store events twice), then what the previous batch recorded
    expected: int
    carry: list[Event]  # the exchange still open, as far as building it needs (open_tail)
    first: bool = True  # the next batch is the file's first (it resets, it moves the row)
    first_new: int | None = None  # ordinal of the file's first new event
    counted: str | None = None  # id of the last exchange the report counted


def open_copy(plan: Plan, fd: int, cand: FoundFile) -> ArchiveCopy | None:
    if plan.archive == cand.path:
        return None  # indexing an archived copy itself (verify --repair)
    keep = plan.keep
    if keep is None and plan.archive.exists() and not is_prefix_of(plan.archive, fd, cand.size):
        preserve(plan.archive)
    copy = ArchiveCopy(plan.archive, keep)
    copy.fill(fd, plan.start)
    return copy


def batch_reader(
    plan: Plan, fp: Any, size: int, copy: ArchiveCopy | None
) -> Callable[[Cursor], ReadResult]:
    """What reads the next batch of ``plan``'s file from where ``Cursor`` says: the next
    :data:`BATCH_BYTES` of lines off one line iterator over the file, or a JSON list whole."""
    sid = plan.identity.session_id
    if plan.fmt in WHOLE_FORMATS:
        parse = read_json_list if plan.fmt is Format.GENERIC_LIST else read_gemini_document

        def whole(cur: Cursor) -> ReadResult:
            fp.seek(0)
            data = fp.read(size)
            if copy is not None:
                copy.feed(0, data)
            return parse(
                data,
                path=plan.path,
                session_id=sid,
                next_ordinal=cur.next_ordinal,
                state=plan.state,
                skip=0 if plan.reset else plan.line,
            )

        return whole
    lines = iter(
        LineReader(
            fp,
            offset=plan.start,
            line=first_line_number(plan.line, plan.state),
            limit=size - plan.start,
            sink=copy.feed if copy is not None else None,
        )
    )

    def batch(cur: Cursor) -> ReadResult:
        return read_any(
            lines,
            plan.fmt,
            path=plan.path,
            session_id=sid,
            next_ordinal=cur.next_ordinal,
            state=cur.state,
            offset=cur.offset,
            line_count=cur.line_count,
            max_bytes=BATCH_BYTES,
        )

    return batch


def has_marker(events: tuple[Event, ...]) -> bool:
    return any(
        e.kind is EventKind.USER_TEXT and e.author is Author.USER and NO_INDEX_MARKER in e.text
        for e in events
    )


def stored_open_exchange(store: Store, sid: str, open_from: object, last: int) -> list[Event]:
    """The stored exchange still open (from ordinal ``open_from``: its prompt, or the
    session's lead-in when it is the first or there is none yet), read a page at a time and
    reduced to what rebuilding it needs (:func:`open_tail`): a long one is never held whole."""
    if not isinstance(open_from, int):
        return []
    carry: list[Event] = []
    after = open_from - 1
    while after < last:
        upto = min(after + _EVENT_PAGE, last)
        page = store.events.of(sid, after=after, upto=upto)
        if page:
            carry = open_tail([*carry, *page])
        after = upto
    return carry


def _exchanges(cur: Cursor, events: tuple[Event, ...]) -> tuple[list[Exchange], list[Event]]:
    """The batch's new and grown exchanges, and the open exchange to carry to the next."""
    if not events:
        return [], cur.carry
    first_new = events[0].ordinal
    everything = [*cur.carry, *events]
    built = [x for x in build_exchanges(everything) if x.last_ordinal >= first_new]
    return built, open_tail(everything)


def _earliest(*times: datetime | None) -> datetime | None:
    return min((t for t in times if t is not None), default=None)


def _latest(*times: datetime | None) -> datetime | None:
    return max((t for t in times if t is not None), default=None)


def _session(
    store: Store,
    plan: Plan,
    state: dict[str, Any],
    events: Sequence[Event] = (),
    *,
    reset: bool,
) -> Session:
    """The session row a batch writes; its times span the transcript's known times and
    those inferred for the batch's events (a file with no time of its own has only those)."""
    times = [e.timestamp for e in events if e.time_inferred]
    existing = None if reset else store.sessions.get(plan.identity.session_id)
    flags = existing.flags if existing is not None else SessionFlags()
    if plan.identity.subagent and not flags.subagent:
        flags = replace(flags, subagent=True)
    session = Session(
        id=plan.identity.session_id,
        project=plan.identity.project,
        harness=plan.harness,
        source_path=plan.path,
        flags=flags,
        cwd=state.get("cwd") if isinstance(state.get("cwd"), str) else None,
        created_at=_earliest(parse_ts(state.get("first_at")), *times),
        updated_at=_latest(parse_ts(state.get("last_at")), *times),
    )
    if existing is not None:
        session = replace(session, user=existing.user)
    return session


def commit_batch(
    run: SyncRun,
    cand: FoundFile,
    plan: Plan,
    result: ReadResult,
    hashes: tuple[str, str],
    cur: Cursor,
    *,
    final: bool,
) -> None:
    """Commit one batch, then move ``cur`` past it. A batch that is not the file's last
    records the offset it reached as the file's size (the file is not done)."""
    reset = cur.first and plan.reset
    exchanges, carry = _exchanges(cur, result.events)
    state = dict(result.state)
    if carry:  # the open exchange's prompt, or the lead-in that goes with the first
        state["open_from"] = carry[0].ordinal
    elif reset:
        state.pop("open_from", None)
    source = SourceState(
        path=plan.path,
        session_id=plan.identity.session_id,
        harness=plan.harness.value,
        size=cand.size if final else result.offset,
        offset=result.offset,
        line_count=result.line_count,
        mtime_ns=cand.mtime_ns,
        prefix_hash=hashes[0],
        tail_hash=hashes[1],
        archive_path=str(plan.archive),
        parser_state=state,
    )
    batch = IngestBatch(
        session=_session(run.store, plan, state, result.events, reset=reset),
        events=result.events,
        exchanges=tuple(exchanges),
        source=source,
        skipped=result.skipped,
        reset=reset,
        moved_from=plan.moved_from if cur.first else None,
        expected_offset=cur.expected,
    )
    run.store.ingest.apply(batch)
    if cur.first:
        if plan.rewritten:  # what was derived may tell of what the file no longer holds
            run.observer.rewritten(plan.identity.session_id)
        run.ignored.discard(plan.path)
        run.owners[plan.identity.session_id] = plan.path
    report = run.report
    report.bytes_indexed += max(0, result.offset - cur.offset)
    report.events_added += len(result.events)
    report.lines_skipped += len(result.skipped)
    if result.events and cur.first_new is None:
        cur.first_new = result.events[0].ordinal
    for x in exchanges:  # an exchange spanning batches is counted once, as one read would
        if x.id == cur.counted:
            continue
        if cur.first_new is not None and x.first_ordinal < cur.first_new:
            report.exchanges_updated += 1
        else:
            report.exchanges_added += 1
    if exchanges:
        cur.counted = exchanges[-1].id
    cur.first = False
    cur.state = state
    cur.offset = result.offset
    cur.line_count = result.line_count
    cur.next_ordinal += len(result.events)
    cur.expected = result.offset
    cur.carry = carry
