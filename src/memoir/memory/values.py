"""The values of long-term memory extraction. Pure: no I/O, no clock.

- :class:`Trigger` — why an extraction runs: the user asked (``remember``), the agent judged
  something worth keeping (``extract``), a compaction checkpoint was persisted
  (``compaction``), ``memoir sync`` found a synced session gone quiet with events past its
  cursor (``sync``), or the first half of a split range (``incidental``).
- :class:`Range` — what one extraction covers, at event granularity:
  ``(after_cursor, coverage_through]`` is the range (the cursor advances to
  ``coverage_through``, nothing further); ``(coverage_through, context_through]`` is a
  retained tail the extractor may read for interpretation but never cite.
- :class:`ProposedItem` / :class:`Proposal` — what a model (or the offline extractor) said,
  in the wire's plain types; :class:`MemoryItem` — an item that passed the deterministic
  checks of :mod:`memoir.memory.validate`, in typed values.
- :class:`PendingFailure`, :class:`Receipt`, :class:`ReceiptOutcome` — what settlement
  records; :func:`operation_id` — the idempotency key of one operation.

Items of a ``remember`` or ``extract`` answer the request (a failing one fails the range);
``incidental`` items are what else the range holds (a failing one is dropped and
counted). For ``compaction``, ``sync`` and ``incidental`` triggers nothing was requested:
every item is treated as incidental (:attr:`Trigger.requests_items`).

Errors of long-term memory extraction, under Memoir's one tree (:mod:`memoir.errors`)::

    memoir.errors.MemoirError
    └── ExtractionError          a memory extraction could not be carried out
        └── MalformedProposal    the model's answer is not a proposal: bad JSON, a wrong
                                 shape, a field of the wrong type or out of its bounds.
                                 A failure class of its own for retry
                                 (``failure_class`` → ``"malformed_proposal"``).

Never named ``MemoryError`` (Python's built-in stays unshadowed).
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from datetime import date, datetime
from enum import StrEnum

from memoir.errors import MemoirError

__all__ = [
    "MAX_INCIDENTAL",
    "MAX_ITEMS",
    "MAX_SEARCH_TERMS",
    "MAX_SEARCH_TERM_CHARS",
    "ExtractionError",
    "ItemKind",
    "KnownItem",
    "MalformedProposal",
    "MemoryItem",
    "PendingFailure",
    "Proposal",
    "ProposalStatus",
    "ProposedItem",
    "Quote",
    "Range",
    "Receipt",
    "ReceiptOutcome",
    "Scope",
    "Temporal",
    "TemporalType",
    "Trigger",
    "operation_id",
    "split_anchor",
]


MAX_ITEMS = 32  # requested items (or, for compaction, every item) of one proposal
MAX_INCIDENTAL = 10
MAX_SEARCH_TERMS = 8
MAX_SEARCH_TERM_CHARS = 200


class Trigger(StrEnum):
    REMEMBER = "remember"
    EXTRACT = "extract"
    COMPACTION = "compaction"
    SYNC = "sync"  # a synced session went quiet: its new range, read by the sync pass
    INCIDENTAL = "incidental"  # the first half of a split range

    @property
    def requests_items(self) -> bool:
        """Whether the trigger asked for something (its items must all pass, or the range
        fails); for compaction and incidental ranges every item is incidental."""
        return self in (Trigger.REMEMBER, Trigger.EXTRACT)

    @property
    def explicit(self) -> bool:
        """An explicit request of the user or the agent (a policy skip never consumes
        its pending failure)."""
        return self.requests_items


class ItemKind(StrEnum):
    FACT = "fact"  # "my sister lives in Porto", "the API runs on port 8080"
    PREFERENCE = "preference"  # "I prefer tabs"
    DECISION = "decision"  # "we decided to use PostgreSQL"
    PLAN = "plan"  # "I'm planning to move in June"
    CONSTRAINT = "constraint"  # "never push to main", "I'm allergic to peanuts"


class Scope(StrEnum):
    GLOBAL = "global"  # true of the user anywhere
    PROJECT = "project"  # true of this project only


class TemporalType(StrEnum):
    UNDATED = "undated"  # no dates
    POINT = "point"  # one day: start
    INTERVAL = "interval"  # start..end, start <= end
    OPEN_ENDED = "open_ended"  # since start, or until end: exactly one of them


@dataclass(frozen=True, slots=True)
class Temporal:
    type: TemporalType = TemporalType.UNDATED
    start: date | None = None
    end: date | None = None

    def problem(self) -> str | None:
        """Why these dates do not fit the type (a reason code), or None."""
        has_start, has_end = self.start is not None, self.end is not None
        if self.type is TemporalType.UNDATED:
            return "undated_with_dates" if has_start or has_end else None
        if self.type is TemporalType.POINT:
            return None if has_start and not has_end else "point_needs_start_only"
        if self.type is TemporalType.INTERVAL:
            if not (has_start and has_end):
                return "interval_needs_start_and_end"
            assert self.start is not None and self.end is not None
            return "interval_start_after_end" if self.start > self.end else None
        return None if has_start != has_end else "open_ended_needs_one_date"


@dataclass(frozen=True, slots=True)
class Quote:
    """Exact words of one event: ``text`` is a substring of that event's text."""

    ordinal: int
    text: str


@dataclass(frozen=True, slots=True)
class ProposedItem:
    """One item as proposed, in the wire's plain types: nothing here is trusted until
    :func:`memoir.memory.validate.validate_proposal` accepts it. Dates are ISO strings."""

    content: str
    kind: str
    keys: tuple[str, ...]
    quotes: tuple[Quote, ...]
    scope: str = Scope.GLOBAL.value
    temporal: str = TemporalType.UNDATED.value
    start: str | None = None
    end: str | None = None
    updates: str | None = None  # the id of a shown memory this statement replaces


@dataclass(frozen=True, slots=True)
class MemoryItem:
    """An item that passed every deterministic check. ``quotes`` hold the exact text of
    the events they cite (as shown to the model). ``incidental`` items were not asked for;
    ``updates`` names the live item this one supersedes (checked: see
    :func:`memoir.memory.validate.check_update`)."""

    content: str
    kind: ItemKind
    keys: tuple[str, ...]
    scope: Scope
    temporal: Temporal
    quotes: tuple[Quote, ...]
    incidental: bool = False
    updates: str | None = None


@dataclass(frozen=True, slots=True)
class KnownItem:
    """A live memory item shown to the model so it can name the one a statement changes:
    ``latest`` is when its newest evidence was said (None: unknown), ``last_ordinal``
    the newest event it quotes in the session being read (None: none there)."""

    id: str
    content: str
    kind: str
    keys: tuple[str, ...]
    latest: datetime | None = None
    last_ordinal: int | None = None


class ProposalStatus(StrEnum):
    COMPLETE = "complete"  # items (and up to 10 incidental)
    NOT_APPLICABLE = "not_applicable"  # nothing was asked for / nothing durable; incidental allowed
    SEARCH_REQUIRED = "search_required"  # an elliptical reference: 1–8 localization terms
    CANNOT_RESOLVE = "cannot_resolve"  # the request cannot be answered from this history


@dataclass(frozen=True, slots=True)
class Proposal:
    """A model's answer. The shape is checked on construction (:class:`MalformedProposal`
    otherwise): complete → 1..MAX_ITEMS items; not_applicable → no items; search_required
    → 1..8 terms and nothing else; cannot_resolve → nothing but a reason; at most 10
    incidental items, and search terms only with search_required."""

    status: ProposalStatus
    items: tuple[ProposedItem, ...] = ()
    incidental: tuple[ProposedItem, ...] = ()
    search_terms: tuple[str, ...] = ()
    reason: str | None = None

    def __post_init__(self) -> None:
        problem = _shape_problem(self)
        if problem is not None:
            raise MalformedProposal(problem)


def _shape_problem(p: Proposal) -> str | None:
    if len(p.items) > MAX_ITEMS:
        return f"more than {MAX_ITEMS} items"
    if len(p.incidental) > MAX_INCIDENTAL:
        return f"more than {MAX_INCIDENTAL} incidental items"
    if p.status is ProposalStatus.SEARCH_REQUIRED:
        if not 1 <= len(p.search_terms) <= MAX_SEARCH_TERMS:
            return f"search_required needs 1–{MAX_SEARCH_TERMS} search terms"
        if any(not t.strip() or len(t) > MAX_SEARCH_TERM_CHARS for t in p.search_terms):
            return f"a search term is blank or longer than {MAX_SEARCH_TERM_CHARS} characters"
        if p.items or p.incidental:
            return "search_required carries no items"
        return None
    if p.search_terms:
        return f"search terms only with search_required, not {p.status.value}"
    if p.status is ProposalStatus.COMPLETE and not p.items:
        return "complete needs at least one item (else not_applicable)"
    if p.status is ProposalStatus.NOT_APPLICABLE and p.items:
        return "not_applicable carries no items (only incidental ones)"
    if p.status is ProposalStatus.CANNOT_RESOLVE and (p.items or p.incidental):
        return "cannot_resolve carries no items"
    return None


class ReceiptOutcome(StrEnum):
    REMEMBERED = "remembered"  # a remember saved items
    EXTRACTED = "extracted"  # an extract / compaction / incidental range saved items
    NOT_APPLICABLE = "not_applicable"  # the model found nothing durable
    NO_OP = "no_op"  # nothing to ask (no user text, a secret in a remember request)
    SKIPPED = "skipped"  # superseded or already settled
    POLICY_DENIED = "policy_denied"  # incognito, memory disabled, archived, subagent
    DISCARDED = "discarded"  # failed twice: the cursor moves on


@dataclass(frozen=True, slots=True)
class Range:
    """``(after_cursor, coverage_through]`` is covered (citable, the cursor advances to
    its end); ``(coverage_through, context_through]`` may be read, never cited."""

    after_cursor: int
    coverage_through: int
    context_through: int

    def __post_init__(self) -> None:
        if not 0 <= self.after_cursor <= self.coverage_through <= self.context_through:
            raise ValueError(
                "a range needs 0 <= after_cursor <= coverage_through <= context_through, "
                f"got ({self.after_cursor}, {self.coverage_through}, {self.context_through})"
            )

    @classmethod
    def covering(cls, after_cursor: int, through: int, context: int | None = None) -> Range:
        return cls(after_cursor, through, through if context is None else context)

    @property
    def empty(self) -> bool:
        return self.coverage_through == self.after_cursor

    @property
    def span(self) -> tuple[int, int]:
        """The covered span (what identifies the range for retry and discard)."""
        return (self.after_cursor, self.coverage_through)

    def covers(self, ordinal: int) -> bool:
        return self.after_cursor < ordinal <= self.coverage_through

    def context_only(self, ordinal: int) -> bool:
        return self.coverage_through < ordinal <= self.context_through

    def reads(self, ordinal: int) -> bool:
        return self.after_cursor < ordinal <= self.context_through


@dataclass(frozen=True, slots=True)
class PendingFailure:
    """The one failed range a session may hold, retried first by the next distinct
    trigger with its own trigger, boundary and operation id.

    ``anchor`` is what the operation id was made from (checkpoint id, turn or tool-call
    id; a split prefix's own :func:`split_anchor`); ``checkpoint_id`` keeps the checkpoint
    association; ``requested_turn`` rebuilds a remember's original turn identity."""

    session_id: str
    range: Range
    coverage_hash: str
    first_operation_id: str
    trigger: Trigger
    failure_class: str
    anchor: str
    checkpoint_id: str | None = None
    requested_turn: int | None = None


@dataclass(frozen=True, slots=True)
class Receipt:
    """What one operation settled on; ``prompt`` is the prompt id (version + hash) when a
    model was asked, ``dropped`` the incidental items that failed validation."""

    operation_id: str
    session_id: str
    trigger: Trigger
    outcome: ReceiptOutcome
    range: Range
    reason: str | None = None
    items: int = 0
    dropped: int = 0
    model_calls: int = 0
    prompt: str | None = None


def operation_id(session_id: str, trigger: Trigger | str, anchor: str | int) -> str:
    """The stable identity of one operation: a hash of (session, trigger, anchor) where
    the anchor is the checkpoint id, the requested turn or the tool-call id. Replays and
    duplicate dispatches of the same work get the same id."""
    raw = json.dumps([session_id, str(trigger), str(anchor)], ensure_ascii=False)
    return "op_" + hashlib.sha256(raw.encode("utf-8")).hexdigest()[:32]


def split_anchor(anchor: str | int, boundary: int) -> str:
    """The anchor of the first part of a range split at ``boundary`` (its own identity)."""
    return f"{anchor}#split@{boundary}"


class ExtractionError(MemoirError):
    """A memory extraction could not be carried out."""


class MalformedProposal(ExtractionError):
    """The model answered something that is not a valid proposal. ``where`` names the
    offending field as a path (``items[2].quotes[0].ordinal``), empty for the whole answer."""

    def __init__(self, message: str, *, where: str = "") -> None:
        super().__init__(f"{where}: {message}" if where else message)
        self.where = where
        self.detail = message
