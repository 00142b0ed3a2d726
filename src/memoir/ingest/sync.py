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
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from memoir.config import Settings, as_paths
from memoir.errors import ConcurrentWrite, StoreError
from memoir.home_files import tighten_home
from memoir.ingest.archive import (
    ArchiveCopy,
    IgnoredFile,
    IgnoredFiles,
    in_archive,
    span_hashes,
)
from memoir.ingest.batches import (
    MAX_JSON_BYTES,
    Cursor,
    SyncObserver,
    SyncProgress,
    SyncReport,
    SyncRun,
    batch_reader,
    commit_batch,
    has_marker,
    open_copy,
    stored_open_exchange,
)
from memoir.ingest.discover import WHOLE_FORMATS, FoundFile, scan, source_key
from memoir.ingest.opencode import export_sessions as export_opencode
from memoir.ingest.opencode import is_opencode_dir
from memoir.ingest.plan import Plan, Skip, TimeAhead, excluded, plan_file, with_times
from memoir.llm.agent_providers import runs_folder
from memoir.model import Session
from memoir.model.event import SessionInfo
from memoir.store import ensure_writable
from memoir.store.port import Store
from memoir.store.values import SourceState

__all__ = [
    "ignored_path",
    "index_file",
    "sync",
]


log = logging.getLogger(__name__)


def ignored_path(settings: Settings) -> Path:
    return settings.home / "state" / "ingest-ignored.json"


def _new_run(
    settings: Settings, store: Store, observer: SyncObserver
) -> tuple[SyncRun, dict[str, SourceState]]:
    """A run's shared state, and the index's source states it was built from."""
    states = store.ingest.sources()
    owners = {st.session_id: path for path, st in states.items()}
    ignored = IgnoredFiles(ignored_path(settings))
    return SyncRun(settings, store, observer, SyncReport(), ignored, owners), states


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
    run: SyncRun,
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


def _still_ignored(run: SyncRun, key: str, size: int, mtime_ns: int) -> bool:
    """Left out last time and unchanged since; an excluded project only while it still is."""
    item = run.ignored.unchanged(key, size, mtime_ns)
    if item is None:
        return False
    if item.reason == "excluded":
        return excluded(item.project or "", run.settings.exclude_projects)
    # tried again on every sync until it can be read (or is small enough to be)
    return item.reason not in ("unreadable", "too_large")


def ingest_file(
    run: SyncRun,
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
        copy = open_copy(plan, fd, cand)
        try:
            _ingest(run, cand, plan, state, fp, copy)
        except BaseException:
            if copy is not None:
                copy.abort()
            raise


def _ingest(
    run: SyncRun,
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
    cur = Cursor(
        state=plan.state,
        offset=plan.start,
        line_count=plan.line,
        next_ordinal=last + 1,
        expected=plan.indexed,
        carry=stored_open_exchange(run.store, sid, open_from, last),
    )
    read = batch_reader(plan, fp, cand.size, copy)
    ahead = TimeAhead(str(cand.path), plan.fmt, sid, cand.size)
    while True:
        result = with_times(read(cur), cur.state, mtime_ns=cand.mtime_ns, ahead=ahead)
        if has_marker(result.events):
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
        commit_batch(run, cand, plan, result, hashes, cur, final=final)
        if final:
            break
    _indexed(run, plan, copied=copy is not None and copy.written > 0)


def _skip_file(run: SyncRun, cand: FoundFile, skip: Skip, state: SourceState | None) -> None:
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


def _forget(run: SyncRun, cand: FoundFile, plan: Plan, state: SourceState | None) -> None:
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


def _too_large(run: SyncRun, cand: FoundFile, plan: Plan) -> None:
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


def _excluded_stored(run: SyncRun) -> list[SessionInfo]:
    """Stored conversations of projects that ``MEMOIR_EXCLUDE_PROJECTS`` now excludes."""
    patterns = run.settings.exclude_projects
    if not patterns:
        return []
    return [i for i in run.store.sessions.recent() if excluded(i.session.project, patterns)]


def _purge(run: SyncRun, session: Session, sources: list[SourceState]) -> None:
    """Remove a stored conversation of an excluded project: its rows and its archived
    copies, and tell the observer (a later sync leaves its transcript out as excluded)."""
    run.store.sessions.delete(session.id)
    for st in sources:
        if st.archive_path:
            in_archive(run.settings.archive_dir, st.archive_path).unlink(missing_ok=True)
    run.observer.removed(session.id, session.project)
    run.report.sessions_removed.append(session.id)


def _indexed(run: SyncRun, plan: Plan, *, copied: bool) -> None:
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
