"""Where summaries live: one narrow port, two adapters sharing the decision table.

* :class:`memoir.summaries.files.FileSummaryStore` — ``<home>/archive/<project>/
  <session-id>-summary.txt`` beside the archived transcript (episodic-memory compatible;
  coverage counts archived JSONL bytes).
* :class:`memoir.summaries.port.DatabaseSummaryStore` — the same states in the
  store's summary rows (coverage counts events), for replicas that share no disk and
  sessions fed through the API.

The port, its values and the database adapter are here; :mod:`memoir.summaries.persist`
picks the adapter from ``settings.summary_store`` ("files" | "database").

The database summary adapter: the same states in the store's summary rows.

For deployments whose replicas share no disk and for sessions fed through the API. Coverage
counts events instead of bytes; the decision table is the same.

A summary store whose writes first ask ``check`` (which raises to refuse), inside
``hold`` (the session's summary claim, so no other writer is between the check and the
write): what a background job saves through, so a worker whose claim was taken over stops
before it writes over its replacement's summary. ``check`` is the job's fence; this
module knows nothing of jobs.

A poll of a session's summary, answered from what one statement read
(:meth:`memoir.store.parts.SummariesPart.poll`) wherever the summary lives in the
database: the state, when it was written, and how much of the session there is now.

Where summaries are kept as files beside archived transcripts (``MEMOIR_SUMMARY_STORE``
``files``, the default) a session synced from a transcript has its summary on disk and its
coverage in bytes of that file; only such a session needs the disk. A session fed through
the API has no transcript file, so its summary is a database row there too.

The episode cache: successful episode and half results, and split decisions, for an hour.

Port :class:`EpisodeCache` (``get``/``put`` of strings) with two adapters: in memory
(:class:`MemoryEpisodeCache`, bounded, per process) and the store
(:class:`StoreEpisodeCache`, ``Store.cache_get``/``cache_put``; Redis later). Keys hash
(user, session, model, the full prompt actually sent, output cutoff), so a changed prompt
misses and a compact-prompt half can never reuse a normal-prompt result.

:class:`SafeCache` is what the summarizer talks to: it decodes entries and turns every
cache failure into a miss (or a dropped write) with a warning, so a broken cache degrades
to uncached work and never discards a valid result.
"""

from __future__ import annotations

import hashlib
import json
import logging
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Iterable
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

from memoir.llm.port import ModelRequest
from memoir.model import Event, Harness
from memoir.store.parts.summaries import SummaryPoll
from memoir.store.values import SummaryRow
from memoir.summaries.state import Coverage, Failure, SummaryKind, SummaryState

if TYPE_CHECKING:
    from memoir.store import Store

__all__ = [
    "CACHE_TTL_S",
    "CachedResult",
    "CachedSplit",
    "Conversation",
    "DatabaseSummaryStore",
    "EpisodeCache",
    "FencedSummaryStore",
    "MemoryEpisodeCache",
    "PolledSummary",
    "SafeCache",
    "StoreEpisodeCache",
    "SummaryStore",
    "answered_from_row",
    "cache_key",
    "decode_entry",
    "encode_entry",
    "events_digest",
    "polled_summary",
    "row_to_state",
    "state_to_row",
]


@dataclass(frozen=True, slots=True)
class Conversation:
    """One conversation as a scan saw it: its size now and its summary state.

    ``current`` is the archived JSONL size in bytes (files) or the event count
    (database). ``state`` may come from a partial read (the body is not needed to decide);
    :meth:`SummaryStore.refresh` re-reads it in full before anything is written.
    """

    session_id: str
    project: str
    current: int
    state: SummaryState
    archive_path: Path | None = None


class SummaryStore(Protocol):
    unit: str  # "bytes" | "events"

    def scan(self, *, full: bool = False) -> list[Conversation]:
        """Every conversation that may need work (with ``full``, every conversation)."""
        ...

    def find(self, session_id: str) -> Conversation | None: ...

    def refresh(self, conversation: Conversation) -> Conversation:
        """The same conversation re-measured, its state read in full."""
        ...

    def write(self, conversation: Conversation, state: SummaryState) -> None: ...

    def last_exchange(self, conversation: Conversation) -> datetime | None: ...

    def events(self, conversation: Conversation) -> list[Event] | None:
        """The conversation's events, or None when it is not indexed yet."""
        ...


def row_to_state(row: SummaryRow | None) -> SummaryState:
    if row is None or row.kind == SummaryKind.MISSING.value:
        return SummaryState.missing()
    if row.kind == SummaryKind.EMPTY.value:
        return SummaryState.empty()
    if row.kind == SummaryKind.ERRORED.value:
        return SummaryState(
            SummaryKind.ERRORED,
            failure=Failure(row.attempts, row.last_attempt_ms),
            message=row.message or "",
            model=row.model,
        )
    failure = None
    if row.resummary_attempts is not None:
        failure = Failure(row.resummary_attempts, row.resummary_last_attempt_ms or 0)
    return SummaryState(
        SummaryKind.REAL,
        body=row.body,
        coverage=Coverage(row.covered, row.last_exchange),
        failure=failure,
        model=row.model,
    )


def state_to_row(session_id: str, state: SummaryState) -> SummaryRow:
    if state.kind is SummaryKind.ERRORED:
        failure = state.failure or Failure()
        return SummaryRow(
            session_id,
            "errored",
            attempts=failure.attempts,
            last_attempt_ms=failure.last_attempt_ms,
            message=state.message,
            model=state.model,
        )
    if state.kind in (SummaryKind.REAL, SummaryKind.LEGACY):
        coverage = state.coverage or Coverage(0)
        resummary = state.failure
        return SummaryRow(
            session_id,
            "real",
            body=state.body,
            covered=coverage.amount,
            last_exchange=coverage.last_exchange,
            resummary_attempts=resummary.attempts if resummary else None,
            resummary_last_attempt_ms=resummary.last_attempt_ms if resummary else None,
            model=state.model,
        )
    return SummaryRow(session_id, state.kind.value)


class DatabaseSummaryStore:
    unit = "events"

    def __init__(self, store: Store) -> None:
        self.store = store
        self._last: dict[str, datetime | None] = {}

    def scan(self, *, full: bool = False) -> list[Conversation]:
        rows = {row.session_id: row for row in self.store.summaries.all()}
        out = []
        for info in self.store.sessions.recent():
            sid = info.session.id
            self._last[sid] = info.last_at
            state = row_to_state(rows.get(sid))
            out.append(Conversation(sid, info.session.project, info.events, state))
        return out

    def find(self, session_id: str) -> Conversation | None:
        session = self.store.sessions.get(session_id)
        if session is None:
            return None
        return self.refresh(Conversation(session_id, session.project, 0, SummaryState.missing()))

    def refresh(self, conversation: Conversation) -> Conversation:
        sid = conversation.session_id
        events = self.store.events.of(sid)
        if events:
            stamps = [e.timestamp for e in events if e.timestamp is not None]
            self._last[sid] = max(stamps) if stamps else None
        state = row_to_state(self.store.summaries.get(sid))
        return Conversation(sid, conversation.project, len(events), state)

    def write(self, conversation: Conversation, state: SummaryState) -> None:
        self.store.summaries.put(state_to_row(conversation.session_id, state))

    def last_exchange(self, conversation: Conversation) -> datetime | None:
        sid = conversation.session_id
        if sid not in self._last:
            self.refresh(conversation)
        return self._last.get(sid)

    def events(self, conversation: Conversation) -> list[Event] | None:
        if self.store.sessions.get(conversation.session_id) is None:
            return None
        return self.store.events.of(conversation.session_id)


def events_digest(events: Iterable[Event]) -> str:
    """A fingerprint of events (ordinal, kind, author, text): a background regeneration
    takes it when it starts and refuses to save when the events it read were edited or
    deleted meanwhile (events appended after them change nothing)."""
    digest = hashlib.sha256()
    for e in events:
        digest.update(f"{e.ordinal}\0{e.kind.value}\0{e.author.value}\0".encode())
        digest.update(e.text.encode("utf-8", "surrogatepass"))
        digest.update(b"\1")
    return digest.hexdigest()


class FencedSummaryStore:
    def __init__(
        self,
        inner: SummaryStore,
        check: Callable[[], None],
        hold: Callable[[], AbstractContextManager[None]] = nullcontext,
    ) -> None:
        self._inner = inner
        self._check = check
        self._hold = hold
        self.unit = inner.unit

    def scan(self, *, full: bool = False) -> list[Conversation]:
        return self._inner.scan(full=full)

    def find(self, session_id: str) -> Conversation | None:
        return self._inner.find(session_id)

    def refresh(self, conversation: Conversation) -> Conversation:
        return self._inner.refresh(conversation)

    def write(self, conversation: Conversation, state: SummaryState) -> None:
        with self._hold():
            self._check()
            self._inner.write(conversation, state)

    def last_exchange(self, conversation: Conversation) -> datetime | None:
        return self._inner.last_exchange(conversation)

    def events(self, conversation: Conversation) -> list[Event] | None:
        return self._inner.events(conversation)


def answered_from_row(summary_store: str, harness: Harness) -> bool:
    """Does the poll's row hold the session's whole summary state (else: read the summary
    file beside its archived transcript)? Pure."""
    return summary_store == "database" or harness is Harness.API


@dataclass(frozen=True, slots=True)
class PolledSummary:
    state: SummaryState
    updated_at: datetime | None
    unit: str  # what coverage counts: "events"
    current: int  # how many of them the session has now (0 without a coverage)


def polled_summary(poll: SummaryPoll) -> PolledSummary:
    """The summary a poll read (its session owned by the caller and
    :func:`answered_from_row`)."""
    state = row_to_state(poll.summary)
    updated = poll.summary.updated_at if poll.summary is not None else None
    current = poll.last_ordinal if state.coverage is not None else 0
    return PolledSummary(state, updated, "events", current)


log = logging.getLogger(__name__)

CACHE_TTL_S = 3600.0
_KEY_VERSION = 1


@runtime_checkable
class EpisodeCache(Protocol):
    def get(self, key: str) -> str | None: ...
    def put(self, key: str, value: str, ttl_seconds: float) -> None: ...


class MemoryEpisodeCache:
    """A bounded in-process cache with expiry (least recently written evicted first)."""

    def __init__(
        self, *, max_entries: int = 4096, clock: Callable[[], float] = time.monotonic
    ) -> None:
        self.max_entries = max_entries
        self._clock = clock
        self._data: OrderedDict[str, tuple[float, str]] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, key: str) -> str | None:
        with self._lock:
            entry = self._data.get(key)
            if entry is None:
                return None
            if entry[0] <= self._clock():
                del self._data[key]
                return None
            return entry[1]

    def put(self, key: str, value: str, ttl_seconds: float) -> None:
        with self._lock:
            self._data[key] = (self._clock() + ttl_seconds, value)
            self._data.move_to_end(key)
            while len(self._data) > self.max_entries:
                self._data.popitem(last=False)

    def __len__(self) -> int:
        with self._lock:
            return len(self._data)


class StoredCache(Protocol):
    """The store's cache part (``store.cache``)."""

    def get(self, key: str) -> str | None: ...
    def put(self, key: str, value: str, ttl_seconds: float) -> None: ...


class StoreEpisodeCache:
    """The episode cache kept in the Memoir store (shared by every process of a home)."""

    def __init__(self, cache: StoredCache) -> None:
        self.cache = cache

    def get(self, key: str) -> str | None:
        return self.cache.get(key)

    def put(self, key: str, value: str, ttl_seconds: float) -> None:
        self.cache.put(key, value, ttl_seconds)


def cache_key(request: ModelRequest, *, model: str) -> str:
    """The key of one request to the selected ``model``: user, session, model, the full
    prompt (system, every message, json flag, purpose) and the output cutoff."""
    meta = request.meta
    payload = json.dumps(
        [
            _KEY_VERSION,
            meta.user,
            meta.session,
            model,
            str(meta.purpose),
            request.system,
            [[m.role, m.content] for m in request.messages],
            request.json,
            request.max_tokens,
        ],
        ensure_ascii=False,
    )
    return "memoir:episode:" + hashlib.sha256(payload.encode("utf-8")).hexdigest()


@dataclass(frozen=True, slots=True)
class CachedResult:
    data: dict[str, Any]
    model: str  # the model that produced it (the fallback's name when it did)


@dataclass(frozen=True, slots=True)
class CachedSplit:
    at: int  # the character offset the episode was cut at


def encode_entry(entry: CachedResult | CachedSplit) -> str:
    if isinstance(entry, CachedSplit):
        return json.dumps({"v": 1, "split": entry.at})
    return json.dumps({"v": 1, "data": entry.data, "model": entry.model}, ensure_ascii=False)


def decode_entry(raw: str) -> CachedResult | CachedSplit | None:
    """The entry, or None for anything unreadable (treated as a miss)."""
    try:
        value = json.loads(raw)
    except (TypeError, ValueError):
        return None
    if not isinstance(value, dict) or value.get("v") != 1:
        return None
    at = value.get("split")
    if isinstance(at, int) and not isinstance(at, bool) and at > 0:
        return CachedSplit(at)
    data, model = value.get("data"), value.get("model")
    if isinstance(data, dict) and isinstance(model, str):
        return CachedResult(data, model)
    return None


class SafeCache:
    """Decoding, failure-proof access to an optional :class:`EpisodeCache`."""

    def __init__(self, cache: EpisodeCache | None, *, ttl_seconds: float = CACHE_TTL_S) -> None:
        self.cache = cache
        self.ttl_seconds = ttl_seconds
        self.hits = 0
        self.errors = 0
        self._lock = threading.Lock()

    def get(self, key: str) -> CachedResult | CachedSplit | None:
        if self.cache is None:
            return None
        try:
            raw = self.cache.get(key)
        except Exception as exc:  # any adapter failure is a miss
            self._failed("read", exc)
            return None
        entry = decode_entry(raw) if raw is not None else None
        if entry is not None:
            with self._lock:
                self.hits += 1
        return entry

    def put(self, key: str, entry: CachedResult | CachedSplit) -> None:
        if self.cache is None:
            return
        try:
            self.cache.put(key, encode_entry(entry), self.ttl_seconds)
        except Exception as exc:  # the result is kept; only the cache write is lost
            self._failed("write", exc)

    def _failed(self, op: str, exc: Exception) -> None:
        with self._lock:
            self.errors += 1
        log.warning(
            "episode cache %s failed, continuing uncached: %s: %s", op, type(exc).__name__, exc
        )
