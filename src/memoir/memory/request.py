"""The portable request envelope, its preflight, the one split, and the call budget.

An :class:`Envelope` is everything one memory request is made of: the latest policy-safe
prior compaction summary (:func:`safe_summary`), the evidence slice of the range
(user/assistant text after the cursor), optional localization turns, and the memory prompt
(:mod:`memoir.memory.prompt`). It never carries the agent's system prompt, tool schemas,
active tools or provider options. :func:`preflight` counts the *whole* request — system
prompt, every message, framing — with the exact token counter and adds the output
reserve; it fits when that total is within the frozen window.

Too big → :func:`split_range` cuts the range once into two sequential ranges: at a turn
boundary (before a user event that opens a turn) where both parts pass preflight, else at
an event boundary; no recursion, None when no boundary gives two fitting parts. Among the
feasible boundaries of a kind, the most even cut (smallest larger part, ties to the
earlier) is taken, found by bisection — part sizes grow and shrink monotonically with the
cut — so a split costs O(log n) preflights; every returned part was preflighted exactly.
The first part is an ``incidental`` extract with its own anchor (so its own operation id)
and boundary; the second keeps the trigger, the anchor and, for ``remember``, the requested
turn (which a cut never leaves in the first part).

Localization (:func:`localization_window`) gives at most 7 turns / 12,000 characters of
the same session before the range, never reaching back across a policy-denied range, and
always context-only. A segment makes at most :data:`MAX_MODEL_CALLS` model calls
(:func:`next_call`).
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from enum import StrEnum
from typing import Literal

from memoir.llm import default_counter, request_tokens
from memoir.llm.port import ModelRequest, TokenCounter
from memoir.memory.evidence import EvidenceSlice, SliceTurn
from memoir.memory.offline_extractor import ExtractionTask
from memoir.memory.prompt import build_request
from memoir.memory.values import (
    KnownItem,
    ProposalStatus,
    Range,
    Trigger,
    operation_id,
    split_anchor,
)

__all__ = [
    "LOCALIZATION_MAX_CHARS",
    "LOCALIZATION_MAX_TURNS",
    "MAX_MODEL_CALLS",
    "Boundary",
    "CallStep",
    "Envelope",
    "Preflight",
    "PriorSummary",
    "Split",
    "choose_boundary",
    "localization_window",
    "may_call",
    "next_call",
    "preflight",
    "safe_summary",
    "split_range",
    "without_tail",
]

MAX_MODEL_CALLS = 3
LOCALIZATION_MAX_TURNS = 7
LOCALIZATION_MAX_CHARS = 12_000


@dataclass(frozen=True, slots=True)
class PriorSummary:
    """A compaction summary written before the range: it covers history through
    ``watermark``; ``eligible`` is its checkpoint's frozen disposition."""

    checkpoint_id: str
    watermark: int
    text: str
    eligible: bool = True


def safe_summary(
    candidates: Sequence[PriorSummary], before: int, denied: Sequence[Range]
) -> PriorSummary | None:
    """The latest summary that may go into a request for a range starting after
    ``before``: from an eligible checkpoint, covering nothing past ``before``, and not
    accumulated over any denied range (a summary carries everything up to its watermark,
    so a denied range starting before the watermark makes it unsafe: the summary barrier)."""
    safe = [
        s
        for s in candidates
        if s.eligible
        and s.text.strip()
        and s.watermark <= before
        and not any(d.after_cursor < s.watermark for d in denied)
    ]
    return max(safe, key=lambda s: s.watermark, default=None)


@dataclass(frozen=True, slots=True)
class Envelope:
    """One memory request, before it is written out. ``anchor`` is the checkpoint id,
    requested turn or tool-call id the operation id is made from; ``note`` is an extract's
    note from the agent (context, never evidence)."""

    session_id: str
    trigger: Trigger
    anchor: str
    slice: EvidenceSlice
    summary: str | None = None
    requested_turn: int | None = None
    note: str | None = None
    localization: tuple[SliceTurn, ...] = ()
    checkpoint_id: str | None = None
    known: tuple[KnownItem, ...] = ()  # live memories a statement may update

    @property
    def range(self) -> Range:
        return self.slice.range

    @property
    def operation_id(self) -> str:
        return operation_id(self.session_id, self.trigger, self.anchor)

    def request(self, max_tokens: int) -> ModelRequest:
        return build_request(
            trigger=self.trigger,
            turns=self.slice.turns,
            max_tokens=max_tokens,
            summary=self.summary,
            requested_turn=self.requested_turn,
            note=self.note,
            localization=self.localization,
            session_id=self.session_id,
            known=self.known,
            task=ExtractionTask(self.trigger, self.slice.turns, self.requested_turn, self.known),
        )


@dataclass(frozen=True, slots=True)
class Preflight:
    fits: bool
    input_tokens: int  # the whole request: system prompt, messages, framing
    output_reserve: int
    window: int

    @property
    def total(self) -> int:
        return self.input_tokens + self.output_reserve


def preflight(
    envelope: Envelope, window: int, output_reserve: int, counter: TokenCounter | None = None
) -> Preflight:
    """Does the whole request, plus the output reserve, fit the frozen window?"""
    tokens = request_tokens(envelope.request(output_reserve), counter or default_counter())
    return Preflight(tokens + output_reserve <= window, tokens, output_reserve, window)


@dataclass(frozen=True, slots=True)
class Boundary:
    """Cut after event ``ordinal``: the parts are ``(after, ordinal]`` and
    ``(ordinal, through]``."""

    ordinal: int
    kind: Literal["turn", "event"]


def _best(
    cuts: Sequence[int], prefix: Callable[[int], int], suffix: Callable[[int], int], limit: int
) -> int | None:
    """The most even feasible cut of ``cuts`` (ascending), by bisection."""
    lo, hi = 0, len(cuts) - 1
    last_prefix = -1  # largest index whose prefix fits
    while lo <= hi:
        mid = (lo + hi) // 2
        if prefix(cuts[mid]) <= limit:
            last_prefix, lo = mid, mid + 1
        else:
            hi = mid - 1
    lo, hi = 0, len(cuts) - 1
    first_suffix = len(cuts)  # smallest index whose suffix fits
    while lo <= hi:
        mid = (lo + hi) // 2
        if suffix(cuts[mid]) <= limit:
            first_suffix, hi = mid, mid - 1
        else:
            lo = mid + 1
    if first_suffix > last_prefix:
        return None
    lo, hi = first_suffix, last_prefix
    while lo < hi:  # first index where the prefix is at least the suffix
        mid = (lo + hi) // 2
        if prefix(cuts[mid]) >= suffix(cuts[mid]):
            hi = mid
        else:
            lo = mid + 1
    options = [i for i in (lo - 1, lo) if first_suffix <= i <= last_prefix]
    best = min(options, key=lambda i: (max(prefix(cuts[i]), suffix(cuts[i])), i))
    ok = prefix(cuts[best]) <= limit and suffix(cuts[best]) <= limit
    return cuts[best] if ok else None


def choose_boundary(
    turn_cuts: Sequence[int],
    event_cuts: Sequence[int],
    prefix_size: Callable[[int], int],
    suffix_size: Callable[[int], int],
    limit: int,
) -> Boundary | None:
    """Where to split: a turn cut where both parts fit (the most even), else an event cut,
    else None. Sizes are whole-request totals (output reserve included)."""
    prefix, suffix = _memo(prefix_size), _memo(suffix_size)
    kinds: tuple[tuple[Literal["turn", "event"], Sequence[int]], ...] = (
        ("turn", turn_cuts),
        ("event", event_cuts),
    )
    for kind, cuts in kinds:
        cut = _best(sorted(set(cuts)), prefix, suffix, limit)
        if cut is not None:
            return Boundary(cut, kind)
    return None


def _memo(fn: Callable[[int], int]) -> Callable[[int], int]:
    seen: dict[int, int] = {}

    def call(x: int) -> int:
        if x not in seen:
            seen[x] = fn(x)
        return seen[x]

    return call


@dataclass(frozen=True, slots=True)
class Split:
    first: Envelope
    second: Envelope
    boundary: Boundary
    preflights: tuple[Preflight, Preflight]


def _part(slice_: EvidenceSlice, range_: Range) -> EvidenceSlice:
    turns = tuple(t for t in slice_.turns if range_.reads(t.ordinal))
    return EvidenceSlice(range_, turns, slice_.excluded, slice_.removed)


def _parts(envelope: Envelope, cut: int) -> tuple[Envelope, Envelope]:
    r = envelope.range
    first = Envelope(
        session_id=envelope.session_id,
        trigger=Trigger.INCIDENTAL,
        anchor=split_anchor(envelope.anchor, cut),
        slice=_part(envelope.slice, Range(r.after_cursor, cut, cut)),
        summary=envelope.summary,
        checkpoint_id=envelope.checkpoint_id,
    )
    second = replace(
        envelope, slice=_part(envelope.slice, Range(cut, r.coverage_through, r.context_through))
    )
    return first, second


def _cuts(envelope: Envelope) -> tuple[list[int], list[int]]:
    """(turn cuts, event cuts): cut just before a shown event of the covered range, never
    the first one, never past a remember's requested turn."""
    r, turns = envelope.range, envelope.slice.turns
    latest = envelope.requested_turn if envelope.requested_turn is not None else r.coverage_through
    turn_cuts, event_cuts = [], []
    for previous, t in itertools.pairwise(turns):
        cut = t.ordinal - 1
        if not (previous.ordinal <= cut and t.ordinal <= min(latest, r.coverage_through)):
            continue
        event_cuts.append(cut)
        if t.opens_turn:
            turn_cuts.append(cut)
    return turn_cuts, event_cuts


def split_range(
    envelope: Envelope, window: int, output_reserve: int, counter: TokenCounter | None = None
) -> Split | None:
    """The one split of an envelope too big for the window, or None when no boundary
    gives two parts that both pass preflight."""
    counter = counter or default_counter()

    def size(part: int) -> Callable[[int], int]:
        return lambda cut: (
            preflight(_parts(envelope, cut)[part], window, output_reserve, counter).total
        )

    turn_cuts, event_cuts = _cuts(envelope)
    boundary = choose_boundary(turn_cuts, event_cuts, size(0), size(1), window)
    if boundary is None:
        return None
    first, second = _parts(envelope, boundary.ordinal)
    checks = (
        preflight(first, window, output_reserve, counter),
        preflight(second, window, output_reserve, counter),
    )
    if not (checks[0].fits and checks[1].fits):  # pragma: no cover - sizes were checked
        return None
    return Split(first, second, boundary, checks)


def localization_window(
    candidates: Sequence[SliceTurn], before: int, denied: Sequence[Range]
) -> tuple[SliceTurn, ...]:
    """Same-session turns before ordinal ``before`` for an elliptical reference: the
    latest ones, at most 7 turns and 12,000 characters, none at or before the end of a
    denied range (its retained tail included) that starts before ``before`` — the
    localization barrier — all marked context-only. They add no evidence."""
    barrier = max((d.context_through for d in denied if d.after_cursor < before), default=0)
    picked: list[SliceTurn] = []
    chars = 0
    for t in sorted(candidates, key=lambda t: -t.ordinal):
        if t.ordinal >= before:
            continue
        if t.ordinal <= barrier or len(picked) == LOCALIZATION_MAX_TURNS:
            break
        if chars + len(t.text) > LOCALIZATION_MAX_CHARS:
            break
        chars += len(t.text)
        picked.append(replace(t, citable=False))
    return tuple(reversed(picked))


class CallStep(StrEnum):
    PROPOSE = "propose"  # the first proposal
    LOCALIZE = "localize"  # again, with localization turns for an elliptical reference
    CANONICALIZE = "canonicalize"  # optional last pass over accepted items
    STOP = "stop"


def may_call(calls_made: int) -> bool:
    """Whether a segment may make another model call (at most three)."""
    return calls_made < MAX_MODEL_CALLS


def next_call(
    calls_made: int,
    last: ProposalStatus | None,
    *,
    localized: bool = False,
    canonicalize: bool = False,
    canonicalized: bool = False,
) -> CallStep:
    """The next model call of a segment: propose first; after ``search_required``, one
    localized proposal; after a complete one, when wanted, one canonicalization; never a
    fourth call."""
    if not may_call(calls_made):
        return CallStep.STOP
    if last is None:
        return CallStep.PROPOSE
    if last is ProposalStatus.SEARCH_REQUIRED:
        return CallStep.STOP if localized else CallStep.LOCALIZE
    if last is ProposalStatus.COMPLETE and canonicalize and not canonicalized:
        return CallStep.CANONICALIZE
    return CallStep.STOP


def without_tail(envelope: Envelope) -> Envelope:
    """The envelope without the retained tail past the coverage boundary."""
    r = envelope.slice.range
    bare = Range(r.after_cursor, r.coverage_through, r.coverage_through)
    turns = tuple(t for t in envelope.slice.turns if bare.reads(t.ordinal))
    return replace(envelope, slice=replace(envelope.slice, range=bare, turns=turns))
