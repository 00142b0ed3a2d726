"""Deterministic validation of every proposed item, whatever the model said.

An item is accepted only if all of these hold (the reason codes in brackets):

- content: not blank [``empty_content``], at most 2,000 code points after NFC and
  whitespace collapse [``content_too_long``];
- kind, scope, temporal type among the known values [``invalid_kind``, ``invalid_scope``,
  ``invalid_temporal``]; dates ISO ``YYYY-MM-DD`` [``invalid_date``] fitting the type
  (:meth:`Temporal.problem`: ``interval_start_after_end`` …);
- 1–16 distinct keys (lower-cased, stripped) [``no_keys``, ``too_many_keys``], none blank or
  over 100 characters [``blank_key``, ``key_too_long``];
- 1–8 quotes [``no_quotes``, ``too_many_quotes``], each, normalized (NFC, whitespace
  collapsed), of 4–1,000 code points [``quote_too_short``, ``quote_too_long``], citing an
  event of the slice [``quote_unknown_event``] that is user text [``quote_not_user_text``],
  inside the covered range — never the retained tail [``quote_context_only``] — and
  citable [``quote_not_citable``], and an exact substring of that event's shown text
  after the same normalization [``quote_not_found``];
- no secret in the content or a quote [``sensitive_information``]: an item that would
  store a credential is refused, never kept with a placeholder. A model behind the
  redacting boundary (:mod:`memoir.llm.wiring`) was shown ``[redacted: …]`` where the
  credential is; a quote of those words matches the shown (masked) text, not the stored
  one, and is refused with this reason too — a stored quote stays an exact substring of
  its stored message, and a credential is never stored;
- quotes of evidence the user had forgotten are left out, and an item with none left is
  dropped [``forgotten``] (never a range failure: forgetting wins over a remember).

An ``updates`` claim is checked by :func:`check_update` (the named memory was shown, the
keys overlap, the new evidence is later); one that does not hold is refused and counted,
and the item is kept as a new item.

A requested item (``remember`` / ``extract``) that fails makes the range fail; an
incidental item that fails is dropped and counted. A later item saying what an accepted
one said is dropped as ``duplicate_item`` (never a range failure). Accepted quotes carry
the exact text of the event they cite (the span the normalized match covers), so
``event_text[i:j] == quote.text`` for the text the model was shown.
"""

from __future__ import annotations

import unicodedata
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from datetime import date, datetime

from memoir.memory.evidence import EvidenceSlice, SliceTurn
from memoir.memory.values import (
    ItemKind,
    KnownItem,
    MemoryItem,
    Proposal,
    ProposedItem,
    Quote,
    Scope,
    Temporal,
    TemporalType,
    Trigger,
)
from memoir.secrets import has_secret, mask

__all__ = [
    "FORGOTTEN",
    "MAX_CONTENT_CHARS",
    "MAX_KEYS",
    "MAX_KEY_CHARS",
    "MAX_QUOTES",
    "MAX_QUOTE_CHARS",
    "MIN_QUOTE_CHARS",
    "SENSITIVE_INFORMATION",
    "Rejection",
    "Validation",
    "check_item",
    "check_keys",
    "check_update",
    "locate",
    "normalize",
    "remember_precheck",
    "validate_proposal",
]

MIN_QUOTE_CHARS = 4
MAX_QUOTE_CHARS = 1000
MAX_QUOTES = 8
MAX_CONTENT_CHARS = 2000
MAX_KEYS = 16
MAX_KEY_CHARS = 100
SENSITIVE_INFORMATION = "sensitive_information"
FORGOTTEN = "forgotten"  # every quote of the item is evidence the user had forgotten
DUPLICATE_ITEM = "duplicate_item"
_KINDS = frozenset(k.value for k in ItemKind)
_SCOPES = frozenset(s.value for s in Scope)


def normalize(text: str) -> str:
    """NFC, every run of whitespace one space, no leading or trailing space."""
    return " ".join(unicodedata.normalize("NFC", text).split())


def _normalized_map(text: str) -> tuple[str, list[tuple[int, int]]] | None:
    """``normalize(text)`` with, for each of its characters, the span of ``text`` it came
    from; None when composing piecewise (a base character and its combining marks) does
    not give the whole-text NFC (a rare script where composition crosses starters)."""
    out: list[str] = []
    spans: list[tuple[int, int]] = []
    i, n = 0, len(text)
    while i < n:
        if text[i].isspace():
            j = i
            while j < n and text[j].isspace():
                j += 1
            if out and j < n:
                out.append(" ")
                spans.append((i, j))
            i = j
            continue
        j = i + 1
        while j < n and unicodedata.combining(text[j]):
            j += 1
        for ch in unicodedata.normalize("NFC", text[i:j]):
            out.append(ch)
            spans.append((i, j))
        i = j
    joined = "".join(out)
    return (joined, spans) if joined == normalize(text) else None


def locate(quote: str, text: str) -> str | None:
    """The exact words of ``text`` that ``quote`` matches once both are normalized, or
    None when it is not there. When no exact span can be recovered (see
    :func:`_normalized_map`) the normalized quote itself is returned."""
    wanted = normalize(quote)
    if not wanted:
        return None
    mapped = _normalized_map(text)
    if mapped is None:
        return wanted if wanted in normalize(text) else None
    flat, spans = mapped
    at = flat.find(wanted)
    if at < 0:
        return None
    return text[spans[at][0] : spans[at + len(wanted) - 1][1]]


@dataclass(frozen=True, slots=True)
class Rejection:
    """Item ``index`` of ``items`` (or of ``incidental``) failed with ``reason``."""

    index: int
    incidental: bool
    reason: str
    content: str = ""

    @property
    def fails_range(self) -> bool:
        return not self.incidental and self.reason not in (DUPLICATE_ITEM, FORGOTTEN)


@dataclass(frozen=True, slots=True)
class Validation:
    """``refused_updates``: reason codes of ``updates`` claims that did not hold (the item
    was kept, as a new item, without superseding anything)."""

    accepted: tuple[MemoryItem, ...]
    rejected: tuple[Rejection, ...]
    refused_updates: tuple[str, ...] = ()

    @property
    def failed(self) -> bool:
        """A requested item failed: the whole range fails."""
        return any(r.fails_range for r in self.rejected)

    @property
    def dropped(self) -> int:
        """Incidental items dropped (counted on the receipt)."""
        return sum(1 for r in self.rejected if not r.fails_range)

    @property
    def failure_reason(self) -> str | None:
        return next((r.reason for r in self.rejected if r.fails_range), None)


def _parse_date(raw: str | None) -> date | None:
    return None if raw is None else date.fromisoformat(raw)


def _temporal(item: ProposedItem) -> Temporal | str:
    try:
        kind = TemporalType(item.temporal)
    except ValueError:
        return "invalid_temporal"
    try:
        temporal = Temporal(kind, _parse_date(item.start), _parse_date(item.end))
    except ValueError:
        return "invalid_date"
    return temporal.problem() or temporal


def check_keys(raw: tuple[str, ...]) -> tuple[str, ...] | str:
    """The keys lower-cased, stripped and each once, or the reason code they fail with."""
    return _keys(raw)


def _keys(raw: tuple[str, ...]) -> tuple[str, ...] | str:
    keys: list[str] = []
    for key in raw:
        k = normalize(key).lower()
        if not k:
            return "blank_key"
        if len(k) > MAX_KEY_CHARS:
            return "key_too_long"
        if k not in keys:
            keys.append(k)
    if not keys:
        return "no_keys"
    return "too_many_keys" if len(keys) > MAX_KEYS else tuple(keys)


def _quote(quote: Quote, slice_: EvidenceSlice) -> Quote | str:
    size = len(normalize(quote.text))
    if size < MIN_QUOTE_CHARS:
        return "quote_too_short"
    if size > MAX_QUOTE_CHARS:
        return "quote_too_long"
    turn: SliceTurn | None = slice_.turn(quote.ordinal)
    if turn is None:
        return "quote_unknown_event"
    if turn.role != "user":
        return "quote_not_user_text"
    if slice_.range.context_only(turn.ordinal):
        return "quote_context_only"
    if not turn.citable or not slice_.range.covers(turn.ordinal):
        return "quote_not_citable"
    exact = locate(quote.text, turn.text)
    if exact is None:
        # the words as the model was shown them, a placeholder where a secret is
        if "[redacted: " in quote.text and locate(quote.text, mask(turn.text)) is not None:
            return SENSITIVE_INFORMATION
        return "quote_not_found"
    return Quote(turn.ordinal, exact)


def _quotes(raw: tuple[Quote, ...], slice_: EvidenceSlice) -> tuple[Quote, ...] | str:
    if not raw:
        return "no_quotes"
    if len(raw) > MAX_QUOTES:
        return "too_many_quotes"
    quotes: list[Quote] = []
    for q in raw:
        checked = _quote(q, slice_)
        if isinstance(checked, str):
            return checked
        if checked not in quotes:
            quotes.append(checked)
    return tuple(quotes)


def check_item(
    item: ProposedItem,
    slice_: EvidenceSlice,
    *,
    incidental: bool = False,
    forgotten: Callable[[Quote], bool] = lambda q: False,
) -> MemoryItem | str:
    """The accepted item, or the reason code it is rejected with. Quotes ``forgotten``
    says the user had forgotten are left out (``forgotten`` when none is left)."""
    content = normalize(item.content)
    if not content:
        return "empty_content"
    if len(content) > MAX_CONTENT_CHARS:
        return "content_too_long"
    if item.kind not in _KINDS:
        return "invalid_kind"
    if item.scope not in _SCOPES:
        return "invalid_scope"
    temporal = _temporal(item)
    if isinstance(temporal, str):
        return temporal
    keys = _keys(item.keys)
    if isinstance(keys, str):
        return keys
    quotes = _quotes(item.quotes, slice_)
    if isinstance(quotes, str):
        return quotes
    quotes = tuple(q for q in quotes if not forgotten(q))
    if not quotes:
        return FORGOTTEN
    if has_secret(content) or any(has_secret(q.text) for q in quotes):
        return SENSITIVE_INFORMATION
    kind, scope = ItemKind(item.kind), Scope(item.scope)
    return MemoryItem(content, kind, keys, scope, temporal, quotes, incidental)


def check_update(
    item: MemoryItem,
    known: Mapping[str, KnownItem],
    stamps: Mapping[int, datetime | None],
    now: datetime | None = None,
) -> str | None:
    """Why ``item.updates`` does not hold (a reason code), or None when it does: it names
    a memory the model was shown [``update_unknown_item``], their keys overlap
    [``update_keys_disjoint``], and the new evidence is later — a later event of the same
    session, or a later time [``update_not_later``] (``stamps``: the time of each event
    of the slice; events with no time count as said ``now``, when Memoir learns them)."""
    old = known.get(item.updates or "")
    if old is None:
        return "update_unknown_item"
    if not {k.casefold() for k in item.keys} & {k.casefold() for k in old.keys}:
        return "update_keys_disjoint"
    newest = max(q.ordinal for q in item.quotes)
    if old.last_ordinal is not None:
        return None if newest > old.last_ordinal else "update_not_later"
    times = [t for q in item.quotes if (t := stamps.get(q.ordinal)) is not None]
    if not times and now is not None:
        times = [now]
    if old.latest is None or not times or max(times) <= old.latest:
        return "update_not_later"
    return None


def validate_proposal(
    proposal: Proposal,
    slice_: EvidenceSlice,
    trigger: Trigger,
    *,
    known: Sequence[KnownItem] = (),
    stamps: Mapping[int, datetime | None] | None = None,
    forgotten: Callable[[Quote], bool] = lambda q: False,
    now: datetime | None = None,
) -> Validation:
    """Check every item of ``proposal`` against the slice the model was shown (and its
    ``updates`` claims against the ``known`` memories it was shown). For a trigger that
    requested nothing (compaction, incidental), every item is incidental."""
    accepted: list[MemoryItem] = []
    rejected: list[Rejection] = []
    refused: list[str] = []
    seen: set[str] = set()
    shown = {k.id: k for k in known}
    batches = ((proposal.items, not trigger.requests_items), (proposal.incidental, True))
    for items, incidental in batches:
        for index, item in enumerate(items):
            checked = check_item(item, slice_, incidental=incidental, forgotten=forgotten)
            if isinstance(checked, str):
                rejected.append(Rejection(index, incidental, checked, item.content))
                continue
            key = checked.content.casefold()
            if key in seen:
                rejected.append(Rejection(index, incidental, DUPLICATE_ITEM, item.content))
                continue
            if item.updates:
                claim = replace(checked, updates=item.updates)
                why = check_update(claim, shown, stamps or {}, now)
                if why is None:
                    checked = replace(checked, updates=item.updates)
                else:
                    refused.append(why)
            seen.add(key)
            accepted.append(checked)
    return Validation(tuple(accepted), tuple(rejected), tuple(refused))


def remember_precheck(requested_text: str | None) -> str | None:
    """Why a remember request gets a no-op receipt before any model call, or None:
    ``sensitive_information`` when the requested text carries a secret, ``no_user_text``
    when there is no requested user text at all."""
    if requested_text is None or not requested_text.strip():
        return "no_user_text"
    return SENSITIVE_INFORMATION if has_secret(requested_text) else None
