"""The memory engine's values ↔ the store's memory rows, and the live items a run reads
(near-duplicates, the known items a proposal may update, forgotten quotes) and the earlier
turns an elliptical reference is localized in.

What the memory runner is given and gives back: its bounds, one task to run, and how a
run ended (the parts it reads and writes: :mod:`memoir.memory.item_store`).
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Mapping
from dataclasses import dataclass, replace
from datetime import datetime
from typing import TYPE_CHECKING

from memoir.memory.decisions import Candidate, Work, near_duplicate, same_claim
from memoir.memory.evidence import EvidenceSlice, SliceTurn, build_slice
from memoir.memory.item_rows import (
    MemoryItemRow,
    MemorySourceRow,
    PendingRow,
    ReceiptRow,
    evidence_fingerprint,
    key_sig,
)
from memoir.memory.item_sql import NEWEST, select_plan, tombstoned_plan
from memoir.memory.item_store import MemoryItemsPart, MemoryParts, memory_parts
from memoir.memory.offline_extractor import slot_of
from memoir.memory.recall import EMBED_PER_CALL, ItemEmbedder, embedded_text
from memoir.memory.request import Envelope, localization_window
from memoir.memory.validate import normalize
from memoir.memory.values import (
    KnownItem,
    MemoryItem,
    PendingFailure,
    Proposal,
    Range,
    Scope,
    Trigger,
)
from memoir.model import Event, Session
from memoir.store.db import Plan
from memoir.store.parts import events_plan
from memoir.store.search_text import STOPWORDS
from memoir.store.values import ItemFilter

if TYPE_CHECKING:
    import numpy as np


__all__ = [
    "MemoryConfig",
    "MemoryParts",
    "Outcome",
    "Task",
    "earlier_turns",
    "failed_work",
    "forgotten_quotes",
    "item_row",
    "known_items",
    "memory_parts",
    "near_duplicates",
    "pending_of",
    "pending_row",
]


def item_row(
    item: MemoryItem,
    *,
    operation: str,
    n: int,
    session_id: str,
    project: str,
    events: Mapping[int, Event],
    at: datetime,
    owner: str = "local",
    merge_into: str | None = None,
) -> MemoryItemRow:
    """The row of the ``n``-th item an operation saves: its id is a hash of both (a replay
    writes the same row), observed from the earliest to the latest event it quotes, valid
    from the earliest (or from now when the events carry no time)."""
    stamps = [events[q.ordinal].timestamp for q in item.quotes if q.ordinal in events]
    known = [s for s in stamps if s is not None]
    temporal = {"type": item.temporal.type.value}
    for name in ("start", "end"):
        value = getattr(item.temporal, name)
        if value is not None:
            temporal[name] = value.isoformat()
    return MemoryItemRow(
        id=hashlib.sha256(f"{operation}\0{n}".encode()).hexdigest()[:16],
        session_id=session_id,
        project=project,
        scope=item.scope.value,
        kind=item.kind.value,
        content=item.content,
        normalized=normalize(item.content).casefold(),
        keys=item.keys,
        operation_id=operation,
        created_at=at,
        temporal=temporal,
        observed_at=max(known, default=None),
        first_observed_at=min(known, default=None),
        valid_from=min(known, default=at),
        sources=tuple(
            MemorySourceRow(session_id, q.ordinal, q.text, operation) for q in item.quotes
        ),
        owner=owner,
        scope_key=project if item.scope is Scope.PROJECT else "",
        key_sig=key_sig(item.keys),
        supersedes=item.updates,
        merge_into=merge_into,
    )


def pending_of(row: PendingRow) -> PendingFailure:
    return PendingFailure(
        session_id=row.session_id,
        range=Range(row.range_after, row.coverage_through, row.context_through),
        coverage_hash=row.coverage_hash,
        first_operation_id=row.operation_id,
        trigger=Trigger(row.trigger),
        failure_class=row.failure,
        anchor=row.anchor,
        checkpoint_id=row.checkpoint_id,
        requested_turn=row.turn,
    )


def pending_row(p: PendingFailure, message: str, at: datetime) -> PendingRow:
    return PendingRow(
        session_id=p.session_id,
        operation_id=p.first_operation_id,
        trigger=p.trigger.value,
        anchor=p.anchor,
        range_after=p.range.after_cursor,
        coverage_through=p.range.coverage_through,
        context_through=p.range.context_through,
        coverage_hash=p.coverage_hash,
        failure=p.failure_class,
        created_at=at,
        message=message,
        checkpoint_id=p.checkpoint_id,
        turn=p.requested_turn,
    )


@dataclass(frozen=True, slots=True)
class MemoryConfig:
    """``window``: the context window a request must fit when the trigger froze none (a
    compaction freezes its own); ``output_reserve``: tokens kept for the answer;
    ``context_tail``: most events past the coverage boundary read for interpretation."""

    window: int = 32_000
    output_reserve: int = 2_000
    context_tail: int = 16


@dataclass(frozen=True, slots=True)
class Task:
    """What to run: ``work`` (trigger, anchor, identity, a retry's range), the frozen
    ``boundary`` / ``context`` (a compaction's coverage and context ends; None: the
    requested turn's exchange, or the session's end), the frozen ``disposition`` and
    ``window`` of a checkpoint, an extract's ``note``."""

    work: Work
    boundary: int | None = None
    context: int | None = None
    disposition: str | None = None
    window: int | None = None
    note: str | None = None


@dataclass(frozen=True, slots=True)
class Outcome:
    """How a run ended: ``receipt`` when it settled; ``pending`` when it failed and was
    recorded for a retry; ``waiting`` when policy was unavailable (nothing happened)."""

    receipt: ReceiptRow | None = None
    items: tuple[MemoryItemRow, ...] = ()
    pending: PendingRow | None = None
    waiting: str | None = None
    error: str | None = None

    @property
    def settled(self) -> bool:
        return self.receipt is not None


# the live items a run reads --------------------------------------------------------------
KNOWN_SCAN = 500  # the newest live memories of a scope looked at for the <memories> section
KNOWN_SHOWN = 16  # of those, the ones sharing most key words with the range are shown
_WORD = re.compile(r"\w+", re.UNICODE)


def near_duplicates(
    items: MemoryItemsPart, embedder: ItemEmbedder | None, rows: tuple[MemoryItemRow, ...]
) -> Plan[tuple[tuple[MemoryItemRow, ...], dict[str, np.ndarray], dict[str, np.ndarray]]]:
    """Each row pointed at the live item it duplicates in other words (``merge_into``,
    see :mod:`memoir.memory.decisions`): one with the same key set saying the same thing,
    else — when an embedder is configured — a near-duplicate by meaning. With the vectors
    to store by the embedder's name: the rows' own (once they are saved), and those made
    now for live items that had none. Reads only."""
    out = []
    for row in rows:
        where = ItemFilter(owner=row.owner, scope_key=row.scope_key, key_sig=row.key_sig)
        same_keys = yield from select_plan(where, NEWEST, None)
        twin = next((i for i in same_keys if same_claim(row.content, i.content)), None)
        out.append(replace(row, merge_into=twin.id) if twin is not None else row)
    if embedder is None or not rows:
        return tuple(out), {}, {}
    made = embedder.embed([embedded_text(r) for r in out])
    computed: dict[str, np.ndarray] = {}
    for n, (row, vector) in enumerate(zip(list(out), made, strict=True)):
        if row.merge_into is not None:
            continue
        where = ItemFilter(owner=row.owner, scope_key=row.scope_key)
        live = yield from select_plan(where, NEWEST, KNOWN_SCAN)
        have = yield from items.vectors_plan(embedder.name, [i.id for i in live])
        have.update({i.id: computed[i.id] for i in live if i.id in computed})
        missing = [i for i in live if i.id not in have][:EMBED_PER_CALL]
        if missing:
            fresh = embedder.embed([embedded_text(i) for i in missing])
            computed.update({i.id: fresh[k] for k, i in enumerate(missing)})
            have.update(computed)
        candidates = [Candidate(i.id, i.content, have[i.id]) for i in live if i.id in have]
        target = near_duplicate(row.content, vector, candidates)
        if target is not None:
            out[n] = replace(row, merge_into=target)
    return tuple(out), {r.id: v for r, v in zip(out, made, strict=True)}, computed


def known_items(
    session: Session | None, sid: str, slice_: EvidenceSlice
) -> Plan[tuple[KnownItem, ...]]:
    """The owner's live memories (this project's and global ones) sharing a key word
    with the citable user turns: what a statement of the range may update."""
    if session is None:
        return ()
    said = [t.text for t in slice_.turns if t.role == "user" and t.citable]
    words = {w.casefold() for text in said for w in _WORD.findall(text)} - STOPWORDS
    words |= {slot[0] for text in said if (slot := slot_of(text)) is not None}
    scope = ItemFilter(owner=session.user, projects=(session.project,))
    candidates = yield from select_plan(scope, NEWEST, KNOWN_SCAN)
    scored = []
    for item in candidates:
        keys = {w.casefold() for k in item.keys for w in _WORD.findall(k)}
        keys |= {k.casefold() for k in item.keys}
        keys |= {w.casefold() for w in _WORD.findall(item.content)} - STOPWORDS
        overlap = len(keys & words)
        if overlap:
            scored.append((-overlap, -(item.observed_at or item.created_at).timestamp(), item))
    scored.sort(key=lambda t: (t[0], t[1], t[2].id))
    out = []
    for _, _, item in scored[:KNOWN_SHOWN]:
        here = [q.ordinal for q in item.sources if q.session_id == sid]
        latest = item.observed_at or item.first_observed_at or item.valid_from
        out.append(
            KnownItem(item.id, item.content, item.kind, item.keys, latest, max(here, default=None))
        )
    return tuple(out)


def forgotten_quotes(session: Session | None, sid: str, proposal: Proposal) -> Plan[set[str]]:
    """The fingerprints of the proposal's quotes the owner had forgotten."""
    prints = {
        evidence_fingerprint(sid, q.ordinal, text)
        for item in (*proposal.items, *proposal.incidental)
        for q in item.quotes
        for text in (q.text, normalize(q.text))
    }
    if not prints:
        return set()
    owner = session.user if session is not None else "local"
    return (yield from tombstoned_plan(owner, prints))


LOOKBACK_EVENTS = 400  # how far before a range localization looks for earlier turns


def earlier_turns(
    sid: str, range_: Range, proposal: Proposal | None, denied: tuple[Range, ...]
) -> Plan[tuple[SliceTurn, ...]]:
    """Earlier turns of the same session for an elliptical reference: those naming a
    search term first, bounded; they add no evidence and never cross a denial."""
    before = range_.after_cursor + 1
    earlier = yield from events_plan(
        sid, after=max(0, before - 1 - LOOKBACK_EVENTS), upto=before - 1
    )
    if not earlier:
        return ()
    lo = earlier[0].ordinal - 1
    turns = build_slice(earlier, Range.covering(lo, before - 1)).turns
    terms = [t.casefold() for t in (proposal.search_terms if proposal else ())]
    named = [t for t in turns if any(term in t.text.casefold() for term in terms)]
    return localization_window(named or list(turns), before, denied)


def failed_work(segment: Envelope | None, work: Work, range_: Range) -> Work:
    """The work that failed: the segment being run (a split's first part has its own
    trigger, anchor and range), else the task over the whole range."""
    if segment is None or segment.trigger is work.trigger:
        return replace(work, range=segment.range if segment is not None else range_)
    return Work(work.session_id, segment.trigger, segment.anchor, segment.range, work.checkpoint_id)
