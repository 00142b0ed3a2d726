"""Checks and repairs of what is stored: verify the index against the archive and mend what it
finds (the re-scan of derived text when the secret detector changes is
:mod:`memoir.ingest.archive`).

``verify``: is the index a faithful picture of the archive?

Problems, damage (``memoir verify`` exits 1 when there is any):

- ``store``: what the store's own integrity check reports (orphan rows, index drift,
  exchange rows lost, events missing);
- ``unreadable_file``: a file under the sources that is a one-document JSON transcript too
  large to be read whole, or that the last sync could not read (permissions, an I/O
  error), or a folder the last sync could not list;
- ``archive_missing`` / ``archive_short``: the archived copy is gone or shorter than what
  was indexed;
- ``index_behind_archive``: the archived copy holds bytes the index never read;
- ``orphan_archive``: an archived transcript no index row refers to;
- ``mode_too_open``: a folder or file under the home that others could read (Memoir keeps
  them owner-only: ``0700`` / ``0600``, :mod:`memoir.home_files`), with its mode.

``secret_rescan`` says where the re-scan of derived text (summaries, checkpoints, cached
answers, memory items) with this version's secret detector stands
(:mod:`memoir.ingest.archive`: each sync does a bounded share, ``--repair`` one more): what
it read and changed since the detector changed, and whether every target is done. It is
no problem: derived text, never the archive.

Warnings (listed and counted; exit 0, or 3 under ``--strict``): ``skipped_line``, a
transcript line the reader passed over — malformed JSON, NUL bytes, oversized, a record
type it does not know (a newer harness version) — or kept with replacement characters for
invalid UTF-8, listed as ``path:line`` with the reason. The bytes stay archived and nothing
in the index is missing because of it, so no repair could clear it: it is the input's
fault, not damage. ``ignored_file``: a file under the sources that is no transcript at all
(``binary``, or ``unknown_format``: text in no format Memoir reads), which sync passes over
and counts as ignored; nothing of it was ever meant to be indexed.

``repair`` rebuilds the exchanges of sessions whose events belong to no exchange from
those events, reads again from its start (archived copy, else source) each transcript
whose stored events are damaged (:mod:`memoir.ingest.verify`), rebuilds the store's search
index, re-indexes archived copies the index is
behind on or has lost (an orphaned copy through a sync of the sources first, so a source
that is still there keeps its one identity; from the archive itself when the source is
gone), re-copies a missing archive from its source when the source still exists and makes
every path too open owner-only; what
that re-indexing rewrites or removes is told to the ``observer``, as a sync tells it.
``VerifyReport.repaired`` counts the problems found before the repair that are gone after
it (:func:`fixed`), never the work done; what it could not mend, and why, is in
``VerifyReport.unrepaired``.

Mend a session whose derived rows are damaged (``verify --repair``), by what it takes.

- Its events are whole but some belong to no exchange (an exchange row was lost):
  :func:`rebuild_exchanges` builds its exchanges again from its stored events — events are
  the authority — the way a sync builds them, a page of events at a time with the open
  exchange carried (:func:`memoir.model.exchange.open_tail`), and writes them through the one
  ingest write (``store.ingest.apply``): exchanges stored alike are left as they are, the
  missing ones are written with their index rows (and their neighbours' context).
- Its events themselves are damaged (a gap in its ordinals, an exchange whose events are
  gone): :func:`reread_session` reads its transcript again from the start, from the
  archived copy (what was indexed, whatever its agent did to the source since) or, when
  that is gone, from the source; with neither, nothing can bring the events back.
"""

from __future__ import annotations

import os
import re
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from memoir.config import Settings
from memoir.home_files import DIR_MODE, FILE_MODE, loose_modes, make_private
from memoir.ingest.archive import IgnoredFiles, in_archive
from memoir.ingest.batches import _EVENT_PAGE, MAX_JSON_BYTES, SyncObserver
from memoir.ingest.sync import UNREADABLE_FOLDER, ignored_path, index_file, sync
from memoir.model import Event, Exchange, Session, build_exchanges
from memoir.model.exchange import open_tail
from memoir.store.port import Store
from memoir.store.values import IngestBatch, SourceState

__all__ = [
    "Problem",
    "VerifyReport",
    "fixed",
    "rebuild_exchanges",
    "reread_from",
    "reread_session",
    "verify",
]


@dataclass(frozen=True, slots=True)
class Problem:
    kind: str
    where: str
    detail: str = ""


@dataclass
class VerifyReport:
    problems: list[Problem] = field(default_factory=list)
    warnings: list[Problem] = field(default_factory=list)
    sources_checked: int = 0
    archive_files: int = 0
    repaired: int = 0  # problems found before the repair and gone after it
    unrepaired: list[str] = field(default_factory=list)  # what repair could not mend, why
    # derived text re-scanned with this version's secret detector (memoir.ingest.verify)
    secret_rescan: dict[str, Any] | None = None

    @property
    def ok(self) -> bool:
        return not self.problems

    def as_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data["ok"] = self.ok
        return data


def _archive_files(archive_dir: Path) -> list[Path]:
    if not archive_dir.is_dir():
        return []
    out: list[Path] = []
    for project in sorted(archive_dir.iterdir()):
        if project.is_dir() and not project.name.startswith("."):
            out.extend(p for p in sorted(project.glob("*.jsonl")) if not p.name.startswith("."))
    return out


def _archived(settings: Settings, recorded: str) -> str:
    """A recorded archive path, in this home's archive (the home may have moved)."""
    return str(in_archive(settings.archive_dir, recorded))


def _check_state(settings: Settings, state: SourceState) -> Problem | None:
    if not state.archive_path:
        return None
    where = _archived(settings, state.archive_path)
    try:
        size = os.stat(where).st_size
    except FileNotFoundError:
        return Problem("archive_missing", where, f"source {state.path}")
    if size < state.size:
        return Problem("archive_short", where, f"{size} < {state.size} bytes")
    if size > state.size:
        return Problem("index_behind_archive", where, f"indexed {state.size} of {size} bytes")
    return None


def _known(settings: Settings, states: dict[str, SourceState]) -> set[str]:
    """Archive files the index refers to: recorded copies, and copies indexed in place of
    a lost source (their key is the copy itself)."""
    known = {_archived(settings, s.archive_path) for s in states.values() if s.archive_path}
    return known | set(states) | {_archived(settings, key) for key in states}


# why sync left a file out that it should have read: the ``unreadable_file`` detail
_UNREAD = {
    "unreadable": "the last sync could not read it",
    "too_large": f"a one-document JSON transcript over {MAX_JSON_BYTES // 2**20} MiB",
    UNREADABLE_FOLDER: "a folder the last sync could not list (its transcripts were not read)",
}


# files that are no transcript at all: a warning, the ``ignored_file`` detail
_NOT_TRANSCRIPTS = {
    "binary": "binary: not a transcript; sync passes it over",
    "unknown_format": "unknown_format: text in no transcript format; sync passes it over",
}


def _collect(settings: Settings, store: Store, report: VerifyReport) -> None:
    report.problems.extend(Problem("store", "", p) for p in store.integrity_problems())
    for row in store.ingest.skipped():
        # a line the reader passed over is the input's fault, not damage: the archive keeps
        # its bytes and the index is whole without it, so no repair could ever clear it
        item = Problem("skipped_line", f"{row.path}:{row.line}", f"{row.reason}: {row.detail}")
        report.warnings.append(item)
    for ignored in IgnoredFiles(ignored_path(settings)).items.values():
        if not os.path.exists(ignored.path):
            continue
        if ignored.reason in _UNREAD:
            detail = _UNREAD[ignored.reason]
            report.problems.append(Problem("unreadable_file", ignored.path, detail))
        elif ignored.reason in _NOT_TRANSCRIPTS:  # a stray file: sync passes it over too
            detail = _NOT_TRANSCRIPTS[ignored.reason]
            report.warnings.append(Problem("ignored_file", ignored.path, detail))
    states = store.ingest.sources()
    report.sources_checked = len(states)
    for state in states.values():
        problem = _check_state(settings, state)
        if problem is not None:
            report.problems.append(problem)
    known = _known(settings, states)
    files = _archive_files(settings.archive_dir)
    report.archive_files = len(files)
    for path in files:
        if str(path) not in known:
            report.problems.append(Problem("orphan_archive", str(path), "not indexed"))
    for path, mode in loose_modes(settings.home):
        want = DIR_MODE if path.is_dir() and not path.is_symlink() else FILE_MODE
        detail = f"mode {mode:04o}, owner-only is {want:04o}"
        report.problems.append(Problem("mode_too_open", str(path), detail))


_COUNTED = re.compile(r"^\d+ ([^:]*)")


def _key(problem: Problem) -> tuple[str, str, str]:
    """What stays the same while a problem is not mended: its kind and place, and for a
    store problem (``"3 orphan index rows …: a, b"``) what it is, without count or sample."""
    if problem.kind == "store":
        found = _COUNTED.match(problem.detail)
        return problem.kind, problem.where, found.group(1) if found else problem.detail
    return problem.kind, problem.where, ""


def fixed(before: list[Problem], after: list[Problem]) -> int:
    """How many of ``before`` (found before a repair) are gone from ``after``."""
    still = {_key(p) for p in after}
    return sum(1 for p in before if _key(p) not in still)


def _mend_sessions(
    settings: Settings, store: Store, report: VerifyReport, observer: SyncObserver
) -> None:
    """Sessions with lost exchange rows or damaged events (see :mod:`memoir.ingest.verify`);
    then the search index, rebuilt whole, when the store still reports a problem."""
    damage = store.damaged_sessions()
    for sid in damage.events_lost:
        if not reread_session(settings, store, sid, observer):
            report.unrepaired.append(
                f"session {sid}: events are missing and no archived copy or source of its "
                "transcript is left to read them again from; they cannot be restored"
            )
    for sid in damage.exchanges_lost:
        rebuild_exchanges(store, sid)
    if store.integrity_problems():
        store.index.repair()


def _repair(settings: Settings, store: Store, report: VerifyReport, observer: SyncObserver) -> None:
    for problem in report.problems:
        if problem.kind == "mode_too_open":
            make_private(Path(problem.where))
    if any(p.kind == "store" for p in report.problems):
        _mend_sessions(settings, store, report, observer)
    orphans = [p for p in report.problems if p.kind == "orphan_archive"]
    if orphans:
        # An archived copy nothing refers to is usually a sync that stopped between the
        # copy and the commit: the source is still there, and a sync indexes it under its
        # own identity. Only copies whose source is gone are indexed from the archive
        # itself (a second identity for a source a sync would find is a duplicate).
        sync(settings, store, observer=observer)
        known = _known(settings, store.ingest.sources())
        for problem in orphans:
            if problem.where not in known:
                archived = Path(problem.where)
                index_file(settings, store, archived, root=settings.archive_dir, observer=observer)
    by_archive = {
        _archived(settings, s.archive_path): s
        for s in store.ingest.sources().values()
        if s.archive_path
    }
    for problem in report.problems:
        state = by_archive.get(problem.where)
        if state is None:
            continue
        if problem.kind == "index_behind_archive":
            if os.path.exists(state.path):
                _reindex_source(settings, store, state, observer)
            else:
                index_file(
                    settings,
                    store,
                    Path(problem.where),
                    root=settings.archive_dir,
                    observer=observer,
                    key=state.path,
                )
        elif problem.kind in ("archive_missing", "archive_short"):
            if os.path.exists(state.path):
                _reindex_source(settings, store, state, observer)
            else:
                report.unrepaired.append(
                    f"{problem.where}: its source {state.path} is gone too; nothing holds "
                    "the bytes to copy again"
                )


def _reindex_source(
    settings: Settings, store: Store, state: SourceState, observer: SyncObserver
) -> None:
    source = Path(state.path)
    index_file(settings, store, source, root=source.parent, observer=observer)


def verify(
    settings: Settings, store: Store, *, observer: SyncObserver, repair: bool = False
) -> VerifyReport:
    """Check the index against the archive; with ``repair``, mend what can be (re-indexing
    tells ``observer`` what it rewrites or removes)."""
    report = VerifyReport()
    _collect(settings, store, report)
    if repair and report.problems:
        _repair(settings, store, report, observer)
        after = VerifyReport()
        _collect(settings, store, after)
        after.repaired = fixed(report.problems, after.problems)
        after.unrepaired = report.unrepaired
        return after
    return report


def rebuild_exchanges(store: Store, session_id: str) -> bool:
    """Build ``session_id``'s exchanges again from its stored events and write those
    missing or different; False when the session is unknown."""
    session = store.sessions.get(session_id)
    if session is None:
        return False
    last = store.events.last_ordinal(session_id)
    carry: list[Event] = []
    after = 0
    while after < last:
        upto = min(after + _EVENT_PAGE, last)
        page = store.events.of(session_id, after=after, upto=upto)
        after = upto
        if not page:
            continue
        everything = [*carry, *page]
        built = build_exchanges(everything)
        carry = open_tail(everything)
        _write(store, session, built[:-1] if carry else built)
    if carry:
        _write(store, session, build_exchanges(carry))
    return True


def _write(store: Store, session: Session, exchanges: list[Exchange]) -> None:
    if exchanges:  # no source state: the transcript's resume point is not this write's
        store.ingest.apply(IngestBatch(session=session, exchanges=tuple(exchanges)))


def reread_from(settings: Settings, state: SourceState) -> Path | None:
    """The file to read ``state``'s transcript again from: its archived copy when it holds
    every byte indexed, else its source when that is still there; None when neither."""
    if state.archive_path:
        archived = in_archive(settings.archive_dir, state.archive_path)
        try:
            if os.stat(archived).st_size >= state.offset:
                return archived
        except OSError:
            pass
    return Path(state.path) if os.path.isfile(state.path) else None


def reread_session(
    settings: Settings, store: Store, session_id: str, observer: SyncObserver
) -> bool:
    """Read ``session_id``'s transcript again from its start (its stored events are
    damaged); False when no archived copy or source of it is left to read."""
    states = [s for s in store.ingest.sources().values() if s.session_id == session_id]
    for state in states:
        path = reread_from(settings, state)
        if path is None:
            continue
        copy = in_archive(settings.archive_dir, state.archive_path) if state.archive_path else None
        root = settings.archive_dir if path == copy else path.parent
        index_file(settings, store, path, root=root, observer=observer, key=state.path, reread=True)
        return True
    return False
