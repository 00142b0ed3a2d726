"""``sync``: archive and index every new or grown transcript under the sources.

For each transcript file: ``stat`` it; when its size and mtime are what the index last saw,
skip it without opening it (a sync with nothing to do over ten thousand conversations is a
directory walk and one query). Otherwise plan it (:mod:`memoir.ingest.plan`), read it once
from the indexed offset — every chunk read goes to the archive copy and through the line
splitter and the format reader — in batches of about :data:`BATCH_BYTES` of lines, so a
sync's memory does not grow with a transcript's size. Events the transcript gave no time
are given the nearest known one right after parsing (:mod:`memoir.ingest.plan`, which
carries the last known time across batches). Each batch's events, exchanges
(the one still open rebuilt together with the new ones), skipped lines and source state
are committed in a transaction of their own; the source state of a batch that is not the
last records the offset it reached as the file's size, so a sync stopped between batches
(a crash, Ctrl-C) is not taken for done, and the next one reads on from that offset:
nothing lost, nothing stored twice. The archive copy is checkpointed (a fresh copy renamed
into place, then appended to) before each batch's commit; bytes it holds past the last
commit are cut off by the next sync, which appends them again. The last batch commits
even when it holds no line (it records the file's size and mtime).

The open exchange is carried from batch to batch in memory, reduced to the events
building it reads (:func:`memoir.model.exchange.open_tail`): its prompt and replies, the
first call of each tool, the tool events its bounded excerpt takes, the first and last
timestamp, line and event; for the first exchange (or before it), the lead-in's harness
text its excerpt takes too.
What stays unbounded is that exchange's own text — one prompt followed by a very long
agent run is one exchange row, rewritten by every batch it spans.

A generic transcript that is one JSON document (a list of messages, not JSONL) cannot be
read in parts: over :data:`MAX_JSON_BYTES` it is not indexed, reported in
``SyncReport.errors`` on every sync until it is smaller (``verify`` lists it).

The do-not-index marker: a conversation in which the user writes ``<memoir:no-index>``
is not indexed at all; when it was indexed before, its rows and its archived copy are
removed, and the file is remembered as ignored. Read in batches, a marker found in a later
batch removes what the earlier ones stored (the batch holding it is never committed, so a
sync stopped before it gets there finds it next time).

What was derived from a conversation is not ingest's to keep: the ``observer``
(:class:`SyncObserver`) is told the moment a transcript is found
rewritten (after its new rows are committed) or a conversation is removed.

An OpenCode data folder among the sources holds a database, not transcripts: its sessions
are first exported to JSONL files under ``<home>/sources/opencode/``
(:mod:`memoir.ingest.opencode`), and that folder is walked in its place.

An excluded project (``MEMOIR_EXCLUDE_PROJECTS``) is never read; conversations of it stored
before it was excluded are listed in ``SyncReport.excluded_kept`` and removed the same way
only when asked (``purge_excluded``): a pattern that matches more than meant must not
delete the archive, the one copy of transcripts their agent has since deleted.
"""

from __future__ import annotations

import hashlib
import logging
import os
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import asdict, dataclass, field, replace
from datetime import datetime
from pathlib import Path
from typing import Any, Protocol

from memoir.config import Settings, as_paths
from memoir.errors import ConcurrentWrite, StoreError
from memoir.home_files import tighten_home
from memoir.ingest.archive import (
    ArchiveCopy,
    IgnoredFile,
    IgnoredFiles,
    in_archive,
    is_prefix_of,
    preserve,
    span_hashes,
)
from memoir.ingest.discover import WHOLE_FORMATS, Format, FoundFile, scan, source_key
from memoir.ingest.opencode import export as export_opencode
from memoir.ingest.opencode import is_opencode_dir
from memoir.ingest.plan import Plan, Skip, TimeAhead, excluded, plan_file, with_times
from memoir.ingest.reader import (
    ReadResult,
    first_line_number,
    read_any,
    read_gemini_document,
    read_json_list,
)
from memoir.ingest.records import LineReader, parse_ts
from memoir.llm.agent_cli import runs_folder
from memoir.model import Author, Event, EventKind, Exchange, Session, SessionFlags, build_exchanges
from memoir.model.event import SessionInfo
from memoir.model.exchange import open_tail
from memoir.store import ensure_writable
from memoir.store.port import Store
from memoir.store.values import IngestBatch, SourceState

__all__ = [
    "BATCH_BYTES",
    "MAX_JSON_BYTES",
    "NO_INDEX_MARKER",
    "SyncObserver",
    "SyncProgress",
    "SyncReport",
    "ignored_path",
    "index_file",
    "sync",
]

NO_INDEX_MARKER = "<memoir:no-index>"
BATCH_BYTES = 2 * 1024 * 1024  # lines of a transcript parsed, stored and committed at a time
MAX_JSON_BYTES = 64 * 1024 * 1024  # a one-document JSON transcript is parsed whole
_EVENT_PAGE = 2000  # stored events read per query when the open exchange is rebuilt

log = logging.getLogger(__name__)


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


def ignored_path(settings: Settings) -> Path:
    return settings.home / "state" / "ingest-ignored.json"


@dataclass
class _SyncRun:
    settings: Settings
    store: Store
    observer: SyncObserver
    report: SyncReport
    ignored: IgnoredFiles
    owners: dict[str, str]


def _new_run(
    settings: Settings, store: Store, observer: SyncObserver
) -> tuple[_SyncRun, dict[str, SourceState]]:
    """A run's shared state, and the index's source states it was built from."""
    states = store.ingest.sources()
    owners = {st.session_id: path for path, st in states.items()}
    ignored = IgnoredFiles(ignored_path(settings))
    return _SyncRun(settings, store, observer, SyncReport(), ignored, owners), states


def sync(
    settings: Settings,
    store: Store,
    *,
    observer: SyncObserver,
    sources: str | os.PathLike[str] | Iterable[str | os.PathLike[str]] | None = None,
    progress: Callable[[SyncProgress], None] | None = None,
    purge_excluded: bool = False,
    follow_symlinks: bool = False,
) -> SyncReport:
    """Archive and index what changed under ``sources`` (default ``settings.sources``);
    with ``purge_excluded``, first remove the stored conversations of excluded projects;
    with ``follow_symlinks``, also read symlinked transcripts that point out of their
    source (else listed in ``SyncReport.symlinks_left_out``). ``observer`` is told of every
    rewritten or removed conversation as it happens."""
    ensure_writable(store, "memoir sync")  # before any archive copy is written
    tighten_home(settings.home)  # a home an older Memoir left readable by others
    began = time.perf_counter()
    run, states = _new_run(settings, store, observer)
    report = run.report
    for info in _excluded_stored(run):
        if not purge_excluded:
            report.excluded_kept.append(info.session.id)
            continue
        sid = info.session.id
        _purge(run, info.session, [st for st in states.values() if st.session_id == sid])
        states = {key: st for key, st in states.items() if st.session_id != sid}
        run.owners.pop(sid, None)
    given = settings.sources if sources is None else as_paths(sources)
    roots = _opencode_exported(settings, given, report)
    todo: list[FoundFile] = []
    unread: list[str] = []
    found = scan(
        roots,
        skip=[settings.home],
        errors=report.errors,
        follow_symlinks=follow_symlinks,
        left_out=report.symlinks_left_out,
        unreadable=unread,
    )
    for key, root, size, mtime_ns in found:
        report.files_scanned += 1
        name = source_key(key)
        st = states.get(name)
        if st is not None and st.size == size and st.mtime_ns == mtime_ns:
            report.files_unchanged += 1
        elif st is None and _still_ignored(run, name, size, mtime_ns):
            report.files_ignored += 1
        else:
            todo.append(FoundFile(Path(key), Path(root), size, mtime_ns))
    _note_unread_folders(run.ignored, [str(r) for r in roots], unread)
    with store.bulk_writes():  # memory that does not grow with the database
        _ingest_all(run, todo, states, progress)
    run.ignored.save()
    report.duration_s = time.perf_counter() - began
    return report


def opencode_out(settings: Settings, data_dir: Path) -> Path:
    """Where the sessions of the OpenCode data folder ``data_dir`` are exported to."""
    digest = hashlib.blake2b(str(data_dir).encode(), digest_size=4).hexdigest()
    return settings.home / "sources" / "opencode" / digest


def _opencode_exported(settings: Settings, roots: Iterable[Path], report: SyncReport) -> list[Path]:
    """``roots`` with each OpenCode data folder exported (:mod:`memoir.ingest.opencode`)
    and replaced by the folder its sessions were written to."""
    out: list[Path] = []
    for root in roots:
        if not is_opencode_dir(root):
            out.append(root)
            continue
        target = opencode_out(settings, Path(os.path.abspath(root)))
        done = export_opencode(root, target)
        report.errors.extend(done.errors)
        out.append(target)
    return out


def _ingest_all(
    run: _SyncRun,
    todo: list[FoundFile],
    states: dict[str, SourceState],
    progress: Callable[[SyncProgress], None] | None,
) -> None:
    """Ingest each candidate in turn; a file that fails is reported, not the whole run."""
    report = run.report
    total = sum(c.size for c in todo)
    done_bytes = 0
    for index, cand in enumerate(todo):
        if progress is not None:
            progress(SyncProgress(index, len(todo), done_bytes, total, source_key(cand.path)))
        name = source_key(cand.path)
        try:
            ingest_file(run, cand, states.get(name))
        except ConcurrentWrite as exc:  # a replica sharing the database indexed it first
            log.info("sync: %s", exc)
            report.files_indexed_elsewhere += 1
        except OSError as exc:
            if vanished(exc, cand.path):  # deleted since the scan: nothing left to read,
                # and what was synced of it stays (as for a folder gone from the walk)
                log.info("sync: %s: gone since the scan", name)
                report.files_vanished += 1
            else:  # unreadable: the next sync tries again, verify lists it meanwhile
                report.errors.append(f"{name}: {exc.strerror or exc}")
                run.ignored.add(IgnoredFile(name, cand.size, cand.mtime_ns, "unreadable"))
        except StoreError:
            raise  # the database is unusable: every further file would fail the same way
        except Exception as exc:  # a bug on one file must not stop the others
            log.debug("sync: %s failed", name, exc_info=True)
            report.errors.append(f"{name}: {type(exc).__name__}: {exc}")
        done_bytes += cand.size
    if progress is not None and todo:
        progress(SyncProgress(len(todo), len(todo), total, total, ""))


UNREADABLE_FOLDER = "unreadable_folder"  # the IgnoredFile reason of a folder not listed


def _note_unread_folders(ignored: IgnoredFiles, roots: list[str], unread: list[str]) -> None:
    """Remember the folders this walk could not list (``verify`` lists them); forget those
    remembered before that are under a walked source and were listed this time."""
    now = {source_key(folder) for folder in unread}
    walked = [os.path.abspath(root) for root in roots]
    for item in list(ignored.items.values()):
        if item.reason != UNREADABLE_FOLDER or item.path in now:
            continue
        if any(_under(item.path, root) for root in walked):
            ignored.discard(item.path)
    for folder in sorted(now):
        ignored.add(IgnoredFile(folder, 0, 0, UNREADABLE_FOLDER))


def _under(path: str, root: str) -> bool:
    try:
        return os.path.commonpath([path, root]) == root
    except ValueError:  # different drives, or one relative
        return False


def vanished(exc: OSError, path: str | os.PathLike[str]) -> bool:
    """``exc``, raised reading ``path``, says it is gone (it, or a folder above it, was
    deleted since the scan) — not that it could not be read."""
    return isinstance(exc, (FileNotFoundError, NotADirectoryError)) and not os.path.lexists(path)


def _still_ignored(run: _SyncRun, key: str, size: int, mtime_ns: int) -> bool:
    """Left out last time and unchanged since; an excluded project only while it still is."""
    item = run.ignored.unchanged(key, size, mtime_ns)
    if item is None:
        return False
    if item.reason == "excluded":
        return excluded(item.project or "", run.settings.exclude_projects)
    # tried again on every sync until it can be read (or is small enough to be)
    return item.reason not in ("unreadable", "too_large")


def ingest_file(
    run: _SyncRun,
    cand: FoundFile,
    state: SourceState | None,
    *,
    key: str | None = None,
    reread: bool = False,
) -> None:
    """Archive and index one changed transcript (known to the index as ``key``, by default
    its own path; ``verify --repair`` reads an archived copy in place of a lost source, and
    with ``reread`` reads it again from its start: its stored events are damaged)."""
    with open(cand.path, "rb") as fp:
        fd = fp.fileno()
        st = os.fstat(fd)
        cand = FoundFile(cand.path, cand.root, st.st_size, st.st_mtime_ns)
        plan = plan_file(
            fd,
            cand,
            state,
            archive_dir=run.settings.archive_dir,
            exclude=run.settings.exclude_projects,
            owners=run.owners,
            key=key,
            known=run.store.ingest.source,
            reread=reread,
            agent_runs=runs_folder(run.settings.home),
        )
        if isinstance(plan, Skip):
            _skip_file(run, cand, plan, state)
            return
        if plan.fmt in WHOLE_FORMATS and cand.size > MAX_JSON_BYTES:
            _too_large(run, cand, plan)
            return
        copy = _open_copy(plan, fd, cand)
        try:
            _ingest(run, cand, plan, state, fp, copy)
        except BaseException:
            if copy is not None:
                copy.abort()
            raise


@dataclass
class _Cursor:
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


def _ingest(
    run: _SyncRun,
    cand: FoundFile,
    plan: Plan,
    state: SourceState | None,
    fp: Any,
    copy: ArchiveCopy | None,
) -> None:
    """Read, store and commit one planned file batch by batch (see the module doc)."""
    sid = plan.identity.session_id
    last = 0 if plan.reset else run.store.events.last_ordinal(sid)
    open_from = None if plan.reset else plan.state.get("open_from")
    cur = _Cursor(
        state=plan.state,
        offset=plan.start,
        line_count=plan.line,
        next_ordinal=last + 1,
        expected=plan.indexed,
        carry=_stored_open_exchange(run.store, sid, open_from, last),
    )
    read = _reader(plan, fp, cand.size, copy)
    ahead = TimeAhead(str(cand.path), plan.fmt, sid, cand.size)
    while True:
        result = with_times(read(cur), cur.state, mtime_ns=cand.mtime_ns, ahead=ahead)
        if _has_marker(result.events):
            if copy is not None:
                copy.abort()
            _forget(run, cand, plan, state)
            return
        final = not result.more
        if copy is not None:
            if final:
                copy.commit()
            else:
                copy.checkpoint()
        hashes = span_hashes(fp.fileno(), result.offset)
        _commit(run, cand, plan, result, hashes, cur, final=final)
        if final:
            break
    _indexed(run, plan, copied=copy is not None and copy.written > 0)


def _open_copy(plan: Plan, fd: int, cand: FoundFile) -> ArchiveCopy | None:
    if plan.archive == cand.path:
        return None  # indexing an archived copy itself (verify --repair)
    keep = plan.keep
    if keep is None and plan.archive.exists() and not is_prefix_of(plan.archive, fd, cand.size):
        preserve(plan.archive)
    copy = ArchiveCopy(plan.archive, keep)
    copy.fill(fd, plan.start)
    return copy


def _reader(
    plan: Plan, fp: Any, size: int, copy: ArchiveCopy | None
) -> Callable[[_Cursor], ReadResult]:
    """What reads the next batch of ``plan``'s file from where ``_Cursor`` says: the next
    :data:`BATCH_BYTES` of lines off one line iterator over the file, or a JSON list whole."""
    sid = plan.identity.session_id
    if plan.fmt in WHOLE_FORMATS:
        parse = read_json_list if plan.fmt is Format.GENERIC_LIST else read_gemini_document

        def whole(cur: _Cursor) -> ReadResult:
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

    def batch(cur: _Cursor) -> ReadResult:
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


def _has_marker(events: tuple[Event, ...]) -> bool:
    return any(
        e.kind is EventKind.USER_TEXT and e.author is Author.USER and NO_INDEX_MARKER in e.text
        for e in events
    )


def _skip_file(run: _SyncRun, cand: FoundFile, skip: Skip, state: SourceState | None) -> None:
    if skip.reason == "empty":
        return
    run.report.files_ignored += 1
    if skip.reason == "duplicate":
        run.report.duplicates.append(f"{source_key(cand.path)}: same as {skip.same_as}")
    run.ignored.add(
        IgnoredFile(
            source_key(cand.path),
            cand.size,
            cand.mtime_ns,
            skip.reason,
            skip.session_id,
            skip.project,
        )
    )


def _forget(run: _SyncRun, cand: FoundFile, plan: Plan, state: SourceState | None) -> None:
    """The conversation carries the do-not-index marker: remove every trace of it."""
    sid = plan.identity.session_id
    if state is not None or run.store.sessions.get(sid) is not None:
        run.store.sessions.delete(sid)
    if plan.archive != cand.path:
        plan.archive.unlink(missing_ok=True)
    run.observer.removed(sid, plan.identity.project)  # before the file is remembered ignored
    run.report.sessions_removed.append(sid)
    run.report.files_ignored += 1
    run.ignored.add(IgnoredFile(source_key(cand.path), cand.size, cand.mtime_ns, "no_index", sid))


def _too_large(run: _SyncRun, cand: FoundFile, plan: Plan) -> None:
    """A one-document JSON transcript over :data:`MAX_JSON_BYTES`: not read (it would be
    held whole), reported as an error on every sync and listed by ``verify``."""
    name = source_key(cand.path)
    run.report.errors.append(
        f"{name}: not indexed: a JSON transcript that is one document (not JSONL) is read "
        f"whole, and this one is {cand.size / 2**20:,.1f} MiB, over the limit of "
        f"{MAX_JSON_BYTES // 2**20} MiB; write it as JSONL (one message a line) to have it read"
    )
    identity = plan.identity
    run.ignored.add(
        IgnoredFile(
            name, cand.size, cand.mtime_ns, "too_large", identity.session_id, identity.project
        )
    )


def _excluded_stored(run: _SyncRun) -> list[SessionInfo]:
    """Stored conversations of projects that ``MEMOIR_EXCLUDE_PROJECTS`` now excludes."""
    patterns = run.settings.exclude_projects
    if not patterns:
        return []
    return [i for i in run.store.sessions.recent() if excluded(i.session.project, patterns)]


def _purge(run: _SyncRun, session: Session, sources: list[SourceState]) -> None:
    """Remove a stored conversation of an excluded project: its rows and its archived
    copies, and tell the observer (a later sync leaves its transcript out as excluded)."""
    run.store.sessions.delete(session.id)
    for st in sources:
        if st.archive_path:
            in_archive(run.settings.archive_dir, st.archive_path).unlink(missing_ok=True)
    run.observer.removed(session.id, session.project)
    run.report.sessions_removed.append(session.id)


def _stored_open_exchange(store: Store, sid: str, open_from: object, last: int) -> list[Event]:
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


def _exchanges(cur: _Cursor, events: tuple[Event, ...]) -> tuple[list[Exchange], list[Event]]:
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


def _commit(
    run: _SyncRun,
    cand: FoundFile,
    plan: Plan,
    result: ReadResult,
    hashes: tuple[str, str],
    cur: _Cursor,
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


def _indexed(run: _SyncRun, plan: Plan, *, copied: bool) -> None:
    """Count a file whose last batch is committed."""
    report = run.report
    report.files_indexed += 1
    report.files_copied += 1 if copied else 0
    report.files_reset += 1 if plan.rewritten else 0
    report.sessions_touched.append(plan.identity.session_id)
    if plan.clash_with is not None:
        report.id_clashes.append(
            f"{plan.path}: its session id is {plan.clash_with}'s (a different transcript); "
            f"stored as {plan.identity.session_id}"
        )


def index_file(
    settings: Settings,
    store: Store,
    path: Path,
    *,
    root: Path,
    observer: SyncObserver,
    key: str | None = None,
    reread: bool = False,
) -> SyncReport:
    """Index one file outside a sync walk (``verify --repair`` re-reads archived copies).
    ``key`` is the source path the index knows it by; by default the file itself;
    ``reread``: read it again from its start (see :func:`ingest_file`)."""
    began = time.perf_counter()
    run, states = _new_run(settings, store, observer)
    report = run.report
    st = os.stat(path)
    report.files_scanned = 1
    ingest_file(
        run,
        FoundFile(path, root, st.st_size, st.st_mtime_ns),
        states.get(key or str(path)),
        key=key,
        reread=reread,
    )
    run.ignored.save()
    report.duration_s = time.perf_counter() - began
    return report
