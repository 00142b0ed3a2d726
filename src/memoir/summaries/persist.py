"""What the rest of Memoir asks of summaries: save one, read one, count and check them,
and keep them true as ingest changes conversations.

* :func:`save_summary` — ``memoir summarize`` persists through it: coverage stamped at the
  current archive size (files) or event count (database), failure state cleared.
* :func:`read_summary_body` — the text shown beside search hits and in ``memoir show``
  (never the coverage header; None for missing, empty and errored).
* :func:`summary_counts` — for ``memoir stats``; :func:`summary_problems` — for ``verify``.
* :class:`SummaryUpkeep` — what a sync calls as it rewrites a transcript
  (:func:`mark_summary_stale`) or removes a conversation (:func:`forget_summary`).

Each takes the home's summary store (``summaries``: the adapter ``MEMOIR_SUMMARY_STORE``
picks, :func:`memoir.summaries.persist.open_summary_store`) and the store it reads events
from. With the archive-file store, a session that has no archived transcript (fed through
the API) is kept in the database adapter instead.

Which summary store a home uses: :func:`open_summary_store` picks one of the two adapters
of the :class:`~memoir.summaries.port.SummaryStore` port from ``settings.summary_store``.

* ``"files"`` — :class:`~memoir.summaries.files.FileSummaryStore`, summary files beside the
  archived transcripts (its scan cache under ``<home>/cache``);
* ``"database"`` — :class:`~memoir.summaries.port.DatabaseSummaryStore`, the store's
  summary rows.

Coverage of a freshly written summary. Pure.

Files count the archived JSONL bytes measured before the events were read (append-only:
bytes that arrive later are growth, and re-queue the conversation); the database counts
the events the summary was made from. Bytes past the index's offset that hold nothing to
index (a JSON list's closing bracket, a last line not finished yet) are covered too:
:func:`indexed_through`.
"""

from __future__ import annotations

import glob
import time
from collections.abc import Sequence
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from memoir.errors import NotFound, SummaryError
from memoir.ingest.archive import BUMPS_FOLDER_MTIME
from memoir.ingest.discover import WHOLE_FORMATS
from memoir.model import Event, Session, build_exchanges
from memoir.store.parts import SummariesPart
from memoir.store.port import Store
from memoir.store.values import SummaryRow
from memoir.summaries.files import SUMMARY_SUFFIX, FileSummaryStore, summary_path_for
from memoir.summaries.port import Conversation, DatabaseSummaryStore, SummaryStore
from memoir.summaries.state import (
    Coverage,
    SummaryAction,
    SummaryKind,
    SummaryPolicy,
    SummaryState,
    decide,
    is_quiescent,
)

if TYPE_CHECKING:
    from memoir.config import Settings
    from memoir.store import Store

__all__ = [
    "COUNT_KEYS",
    "TRAILER_BYTES",
    "ArchiveTail",
    "SummaryFinding",
    "SummaryUpkeep",
    "classify",
    "coverage_after",
    "coverage_before_reading",
    "forget_summary",
    "indexed_through",
    "iso_ms",
    "mark_summary_stale",
    "open_summary_store",
    "read_summary_body",
    "read_summary_state",
    "save_summary",
    "summary_counts",
    "summary_findings",
    "summary_problems",
    "summary_updated_at",
]

TRAILER_BYTES = 64  # the most bytes past the indexed offset read whole to see they hold nothing


@dataclass(frozen=True, slots=True)
class ArchiveTail:
    """What an archived transcript holds past the index's offset, as far as it was read:
    ``read`` bytes (all there are, unless the read stopped at a newline or the archive was
    cut meanwhile), the first :data:`TRAILER_BYTES` of them (``start``), and whether a
    newline was among them (a finished line the index has not read)."""

    read: int = 0
    start: bytes = b""
    newline: bool = False


def iso_ms(moment: datetime) -> str:
    """``2025-09-19T17:36:33.487Z`` (the JavaScript ``toISOString`` form)."""
    moment = moment.astimezone(UTC) if moment.tzinfo else moment.replace(tzinfo=UTC)
    return moment.strftime("%Y-%m-%dT%H:%M:%S.") + f"{moment.microsecond // 1000:03d}Z"


def last_exchange_iso(events: Sequence[Event]) -> str | None:
    exchanges = build_exchanges(events)
    if not exchanges:
        return None
    last = exchanges[-1]
    moment = last.ended_at or last.started_at
    return iso_ms(moment) if moment is not None else None


def coverage_after(unit: str, measured: int, events: Sequence[Event]) -> tuple[int, str | None]:
    """(amount, lastExchange) to stamp on a summary made from ``events``."""
    amount = measured if unit == "bytes" else len(events)
    return amount, last_exchange_iso(events)


def indexed_through(
    offset: int, size: int, tail: ArchiveTail, *, lines: bool, recorded: int
) -> int:
    """How far the index has read an archived transcript of ``size`` bytes that it parsed
    up to ``offset``; ``tail`` is what the archive holds from ``offset``. ``lines``: the
    transcript is read line by line (JSONL, not a JSON list read whole); ``recorded``: the
    file size the index recorded when it last read the file.

    All of it when the tail holds nothing to index, else ``offset``:

    * the closing bracket of a JSON list and the blanks around it (at most
      :data:`TRAILER_BYTES`, read whole): the generic reader's offset stops before them, so
      that a list grown by appending reads as grown, not rewritten;
    * one unterminated line of a JSONL transcript (no newline in the whole tail) that the
      index's last read of the file ended on (``recorded == size``): the reader takes a last
      line without its newline only when it is a whole JSON object, else waits for it to
      end — half a line left by a crashed session may never end. When it does end, the
      file grows and so does the archive, past this coverage: the conversation is due
      again and the line indexed. Bytes an unfinished sync copied past its last commit
      (``recorded`` differs) are not counted.

    Without this a JSON chat's summary covered 2 bytes short of its archive for ever, and a
    crashed session's by its half line: every sync summarized them again."""
    past = size - offset
    if past <= 0 or tail.read != past:  # read to the end, or the tail was not read whole
        return offset
    if past <= TRAILER_BYTES and tail.start.strip() in (b"", b"]"):
        return size
    if lines and not tail.newline and recorded == size:
        return size
    return offset


_TAIL_CHUNK_BYTES = 1024 * 1024  # read at a time past the offset, looking for a newline

COUNT_KEYS = ("summarized", "stale", "pending", "errored", "given_up", "empty")


def _locate(
    summaries: SummaryStore, store: Store, session_id: str
) -> tuple[SummaryStore, Conversation] | None:
    found = summaries.find(session_id)
    if found is not None:
        return summaries, found
    if not isinstance(summaries, DatabaseSummaryStore):
        secondary = DatabaseSummaryStore(store)
        found = secondary.find(session_id)
        if found is not None:
            return secondary, found
    return None


def save_summary(
    summaries: SummaryStore,
    store: Store,
    session_id: str,
    body: str,
    *,
    model: str | None,
    data: dict[str, Any] | None = None,
    covered: int | None = None,
) -> SummaryState:
    """Persist ``body`` as the session's summary, clearing any failure state. Leading
    lines that would pose as the file header or an error sentinel are dropped; a body
    with nothing else raises ``SummaryError``.

    Coverage is the transcript as it is now (archive bytes or event count) unless the
    caller measured it before reading the events (``covered``). ``data`` (the episodic
    summarizer's structured summary) is accepted; the file format keeps only the text.
    """
    from memoir.summaries.summarizer import tidy_summary  # the episodic code: on writes

    body = tidy_summary(body)  # every writer's text, never a header or error sentinel
    if not body:
        raise SummaryError("the summary has no text once header lines are removed; not saved")
    located = _locate(summaries, store, session_id)
    if located is None:
        raise NotFound(f"no conversation {session_id!r} to attach a summary to")
    where, conv = located
    events = store.events.of(session_id) if store.sessions.get(session_id) else []
    amount, last_exchange = coverage_after(where.unit, conv.current, events)
    if covered is not None:
        amount = covered
    state = SummaryState.real(body, amount, last_exchange, model=model)
    where.write(conv, state)
    return state


def coverage_before_reading(summaries: SummaryStore, store: Store, session_id: str) -> int | None:
    """What a summary of the events about to be read may say it covers, measured before
    they are read: a sync that appends meanwhile must leave its part uncovered (and the
    conversation due again). On files, no more than the bytes the index has read from the
    transcript (the archive may already hold a line whose events are not committed yet),
    and the bytes past that which hold nothing to index (:func:`indexed_through`)."""
    located = _locate(summaries, store, session_id)
    if located is None:
        return None
    where, conv = located
    amount = conv.current
    if where.unit != "events":
        sources = [s for s in store.ingest.sources().values() if s.session_id == session_id]
        if sources:
            source = max(sources, key=lambda s: s.offset)
            whole = {f.value for f in WHOLE_FORMATS}
            lines = source.parser_state.get("format") not in whole
            tail = _archive_tail(conv.archive_path, source.offset, amount, lines=lines)
            through = indexed_through(
                source.offset, amount, tail, lines=lines, recorded=source.size
            )
            amount = min(amount, through)
    return amount


def _archive_tail(path: Path | None, offset: int, size: int, *, lines: bool) -> ArchiveTail:
    """What the archive holds from ``offset`` to ``size``, enough for
    :func:`indexed_through` to decide: a few bytes (a JSON list's closing bracket) read
    whole; for a transcript read line by line, read on in chunks — none kept — up to the
    first newline (the rest of a line is all an index that read the file to its end can
    have left). Nothing for a longer tail of a JSON list, or when the archive cannot be
    read."""
    past = size - offset
    if path is None or past <= 0 or (past > TRAILER_BYTES and not lines):
        return ArchiveTail()
    try:
        with open(path, "rb") as archived:
            archived.seek(offset)
            start = archived.read(min(past, TRAILER_BYTES))
            read, newline, chunk = len(start), b"\n" in start, start
            while chunk and not newline and read < past:
                chunk = archived.read(min(past - read, _TAIL_CHUNK_BYTES))
                read += len(chunk)
                newline = b"\n" in chunk
    except OSError:
        return ArchiveTail()
    return ArchiveTail(read, start, newline)


def forget_summary(archive_dir: Path, rows: SummariesPart, session_id: str, project: str) -> bool:
    """Remove every trace of a session's summary (the file beside its archived transcript
    under ``archive_dir``, and its row): the do-not-index marker promises that nothing of
    the conversation stays. True when something was removed."""
    removed = False
    name = f"{session_id}{SUMMARY_SUFFIX}"
    path = archive_dir / project / name
    # a copy archived before its project was renamed (migration v14) stays in its folder
    others = [] if path.exists() else sorted(archive_dir.glob(f"*/{glob.escape(name)}"))
    for found in [path, *others]:
        try:
            found.unlink()
            removed = True
        except FileNotFoundError:
            pass
    row = rows.get(session_id)
    if row is not None and row.kind != SummaryKind.MISSING.value:
        rows.put(SummaryRow(session_id, SummaryKind.MISSING.value))
        removed = True
    return removed


def mark_summary_stale(summaries: SummaryStore, store: Store, session_id: str) -> bool:
    """The transcript was rewritten: its summary may describe what is gone. The body stays
    (the last good summary, until a new one replaces it) but covers nothing any more, so
    the next pass re-summarizes the conversation once it is idle. True when it had one."""
    located = _locate(summaries, store, session_id)
    if located is None:
        return False
    where, conv = located
    conv = where.refresh(conv)
    state = conv.state
    if not state.has_body or state.coverage is None or state.coverage.amount == 0:
        return False
    where.write(conv, replace(state, coverage=Coverage(0), failure=None))
    return True


@dataclass(frozen=True, slots=True)
class SummaryUpkeep:
    """Summaries kept true while ingest changes conversations: the observer the composition
    root hands to ``memoir.ingest.sync.sync`` (its ``SyncObserver``), called at the moment
    each change is committed, under the sync lock."""

    archive_dir: Path
    summaries: SummaryStore
    store: Store

    def rewritten(self, session_id: str) -> None:
        """The transcript was rewritten and indexed anew: its summary covers nothing now."""
        mark_summary_stale(self.summaries, self.store, session_id)

    def removed(self, session_id: str, project: str) -> None:
        """The conversation's rows and archived copies are gone: so goes its summary."""
        forget_summary(self.archive_dir, self.store.summaries, session_id, project)


def read_summary_state(
    summaries: SummaryStore, store: Store, session: str | Session
) -> SummaryState:
    session_id = session.id if isinstance(session, Session) else session
    located = _locate(summaries, store, session_id)
    return located[1].state if located is not None else SummaryState.missing()


def read_summary_body(summaries: SummaryStore, store: Store, session: str | Session) -> str | None:
    """The readable summary of a session (header stripped), or None when it has none."""
    state = read_summary_state(summaries, store, session)
    return state.body.strip() if state.has_body else None


def summary_updated_at(
    summaries: SummaryStore, rows: SummariesPart, session_id: str
) -> datetime | None:
    """When the session's summary was last written: its database row's time, else its
    summary file's modification time (the file store), else None."""
    row = rows.get(session_id)
    if row is not None and row.updated_at is not None:
        return row.updated_at
    found = summaries.find(session_id)
    if found is None or found.archive_path is None:
        return None
    try:
        stamp = summary_path_for(found.archive_path).stat().st_mtime
    except OSError:
        return None
    return datetime.fromtimestamp(stamp, UTC)


def classify(
    conv: Conversation, policy: SummaryPolicy, now_ms: int, summaries: SummaryStore
) -> tuple[str, bool]:
    """(count key, idle) for one conversation; idle only computed where it matters."""
    action = decide(conv.state, conv.current, policy, now_ms)
    if action is SummaryAction.GIVE_UP:
        return "given_up", True
    kind = conv.state.kind
    if kind is SummaryKind.EMPTY:
        return "empty", True
    if kind is SummaryKind.ERRORED:
        return "errored", True
    if kind is SummaryKind.MISSING:
        return "pending", True
    if action is SummaryAction.CURRENT or kind is SummaryKind.LEGACY:
        return "summarized", True
    return "stale", is_quiescent(summaries.last_exchange(conv), policy, now_ms)


def summary_counts(
    summaries: SummaryStore, policy: SummaryPolicy, *, now_ms: int | None = None
) -> dict[str, int]:
    """summarized / stale (grown past coverage) / pending (no summary yet) / errored /
    given_up / empty, over every conversation."""
    now = int(time.time() * 1000) if now_ms is None else now_ms
    counts = dict.fromkeys(COUNT_KEYS, 0)
    for conv in summaries.scan(full=True):
        key, _ = classify(conv, policy, now, summaries)
        counts[key] += 1
    return counts


@dataclass(frozen=True, slots=True)
class SummaryFinding:
    """One summary worth a look (``memoir verify`` lists them as warnings)."""

    kind: str  # "stale_summary" | "errored_summary" | "summary_given_up"
    where: str  # <project>/<session-id>
    detail: str

    def __str__(self) -> str:
        return f"{self.kind.replace('_', ' ')}: {self.where} {self.detail}"


def summary_findings(
    summaries: SummaryStore, policy: SummaryPolicy, *, now_ms: int | None = None
) -> list[SummaryFinding]:
    """Stale summaries of idle conversations (due for a refresh at the next sync), errored
    summaries (being retried) and given-up ones (``memoir summarize`` can still try)."""
    now = int(time.time() * 1000) if now_ms is None else now_ms
    found = []
    conversations = summaries.scan(full=True)
    for conv in sorted(conversations, key=lambda c: (c.project, c.session_id)):
        key, idle = classify(conv, policy, now, summaries)
        where = f"{conv.project}/{conv.session_id}"
        failure = conv.state.failure
        attempts = failure.attempts if failure is not None else 0
        if key == "stale" and idle:
            covered = conv.state.coverage.amount if conv.state.coverage else 0
            detail = f"covers {covered} of {conv.current} {summaries.unit}"
            found.append(SummaryFinding("stale_summary", where, detail))
        elif key == "errored":
            why = f": {conv.state.message}" if conv.state.message else ""
            detail = f"after {attempts} attempt(s){why}"
            found.append(SummaryFinding("errored_summary", where, detail))
        elif key == "given_up":
            detail = f"after {attempts} failed attempt(s)"
            found.append(SummaryFinding("summary_given_up", where, detail))
    return found


def summary_problems(
    summaries: SummaryStore, policy: SummaryPolicy, *, now_ms: int | None = None
) -> list[str]:
    """:func:`summary_findings` as one line each."""
    return [str(f) for f in summary_findings(summaries, policy, now_ms=now_ms)]


def open_summary_store(settings: Settings, store: Store) -> SummaryStore:
    if settings.summary_store == "database":
        return DatabaseSummaryStore(store)
    # Memoir's archive writer changes the project folder's mtime on every write (appends
    # included), so the scan need not stat settled transcripts.
    return FileSummaryStore(
        settings.archive_dir,
        store,
        cache_path=_cache_path(settings),
        trust_folder_mtime=BUMPS_FOLDER_MTIME,
    )


def _cache_path(settings: Settings) -> Path:
    return settings.home / "cache" / "summary-scan.json"
