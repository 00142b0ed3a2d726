"""The offline default extractor: durable statements of the user, by their cues.

Deterministic, no network, linear in the slice. It reads only the citable user turns of
an evidence slice, and of each only the user's own lines
(:func:`memoir.memory.evidence.own_lines`: no code, logs, traces, shell prompts,
blockquotes, pasted emails, letters, chat transcripts or text after "Here's the email:"),
sentence by sentence (:func:`memoir.llm.transcript.split_sentences`), and keeps a
sentence that carries a cue (:func:`memoir.memory.cues.reading`), taking the kind from
the first cue family that matches:

- decision — "we decided / agreed / settled on / chose", "we'll use / go with / stick
  with / switch to", "let's go with / use", "we're going with", "we switched / are
  moving to", "the decision is", "decision made";
- preference — "I prefer / like / love / enjoy / hate / dislike / can't stand", "I don't
  like / want / enjoy", "I'd rather", "my favorite", "I'm a fan of", "I always / never /
  usually …" (a habit);
- plan — "I plan to / I'm planning to / we plan", "I intend to", "I'm hoping to", "my
  goal / plan is", "I'll / I'm going to / we'll / I want to …" *with* a time ("next
  month", "tomorrow", "in June", "in Q3"), or after one ("Next quarter we'll …");
- constraint — a sentence opening with "always / never + a verb" or "don't / do not"
  (an instruction), "you should never", "we always / never + a verb", "from now on",
  "going forward", "in future", "every time / whenever …, <do this>", "when you …,
  <do this>", "so please don't …", an imperative scoped to "this repo / project" or
  "everywhere", "we can't / must not use …", "please remember to", "I'm allergic", "I
  can't eat …", "I'm vegetarian / vegan / gluten-free …";
- fact — "my … is / are / was …", "our … is / uses / runs …" and "this repo uses …"
  opening the sentence, "X is my sister / boss / dog …", "I live / work / grew up / was
  born / moved …", "I'm a / an …", "I'm the maintainer / owner / only …", "I'm from",
  "I'm N years old", "I have a / two …", "I've been …ing for", "I'm learning / training
  / studying …", "I'm / we're on Python / Windows / v3 …", "I use / we use", "we … every
  Tuesday", and a life event in the first person ("I adopted a dog", "I just started a
  pottery class", "I got promoted") unless it is about the work at hand ("I started the
  server");
- the user's own life without any cue above (:func:`memoir.memory.cues._own_life`): the
  user, "we", "my family and I" or one of their people as the subject of an event ("Last
  weekend we took the kids camping"), a pursuit under way ("I've been painting a lot
  lately"), a plan ("We're going to visit my parents for Thanksgiving") or a doing of
  their people ("My daughter starts school in September"), in a sentence placed in
  everyday life (a time of life, one of their people, a pursuit, place or occasion) and
  not about the work at hand ("I pushed the fix to staging last night") — a plan when
  it is ahead, else a fact.

A frame that only asks to keep what follows is cut from the item's text, never from its
quote: "Remember that X", "Please remember: X", "Keep in mind that X", "Note that X",
"Don't forget that X", "For future reference, X" keep X (its first letter upper-cased)
whether or not X carries a cue, as a fact unless a cue names another kind; "FYI, X",
"For the record, X", "Just so you know, X" keep X only when X has a cue of its own. "X,
keep that in mind" keeps the whole sentence. The quote stays the sentence exactly as the
user wrote it, frame included.

Rejected: questions (ending in "?", or opening with a question word or "can you"),
hedges ("maybe", "probably", "might", "I guess", "not sure", "we could", "should we"),
hypotheticals ("if I wanted / were / had …", "what if", "suppose", "imagine", "let's
say", "in theory", "I wish", "I'd / we'd + a verb"), complaints ("ugh", "sigh", "so
annoying", "tired of", "can't believe", "why does …", "you always …", "always the same
…"), someone else's words (a cue inside quotation marks, a sentence mostly quoted, "my
boss said / told me …"), requests for work now ("add / fix / run / explain …", "I need
you to …", "let's add …") unless they carry a standing marker ("always", "from now on",
"every time", "by default"), what holds only for the moment ("for now", "this time",
"temporarily"; "today" and "yet" for instructions), a decision about something only the
conversation names ("let's go with that"), code in the sentence, the passing state of a
task ("is broken", "failing", "slow", "error" — not "error tracking"), a preference
about a pronoun ("I like it / this / your idea"), sentences under 2 or over 80 words,
and anything holding a secret. None of these apply to what a strong frame asks to keep,
except the question, hedge, hypothetical, complaint, quotation, request and code rules.

Content is the sentence as the user wrote it, less a frame (NFC, whitespace collapsed,
first person kept — no rewriting, so nothing is lost or garbled; "I" is always the user);
each item quotes the sentence exactly as it stands in the shown event text, and the same
content said again later (with or without a frame) adds a quote (up to 8) instead of a
second item. Keys come from :func:`memoir.llm.transcript.keywords` (lower-cased, 1–6).
Scope is ``project`` when the sentence names the project, repo, codebase, app, API,
branch or CI, or is a "we" decision; else ``global``. Temporal is ``point`` for a
sentence holding exactly one ISO date, else ``undated``.

``remember``: the items are the requested turn's statements — or, when that turn is only
"remember that / this", the statements of the nearest earlier user turn of the range —
and the rest of the range gives up to 10 incidental items. ``offline_proposal`` with a turn works
the same; without one, and for ``compaction`` / ``incidental`` ranges, every statement is
an item.

Misses: facts without a first-person cue ("The main branch is protected", "The API is on
Fly.io"), a life told without anything placing it in everyday life ("I got the keys at
noon"), "I'm <adjective>" ("I'm left-handed"), instructions without a standing marker
("Keep memory under 512 MB"), third-person and reported statements, implicit preferences
("ugh, semicolons again"), a sentence with a semicolon (read as code), statements split
across sentences or turns, references resolved only by the assistant's words, non-English
text (except what the cues happen to match), and dates written in words. It cannot
localize an elliptical reference outside the range.

:class:`ExtractionTask` is what a memory request carries beside its prompt
(``ModelRequest.task``, set by :meth:`memoir.memory.request.Envelope.request`): the
offline model answers it with the proposal JSON; it never reads the prompt.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace

from memoir.llm.transcript import content_words, keywords, split_sentences
from memoir.memory.cues import cue_form, reading
from memoir.memory.evidence import EvidenceSlice, SliceTurn, own_lines
from memoir.memory.prompt import proposal_json
from memoir.memory.values import (
    MAX_INCIDENTAL,
    MAX_ITEMS,
    ItemKind,
    KnownItem,
    Proposal,
    ProposalStatus,
    ProposedItem,
    Quote,
    Range,
    Scope,
    TemporalType,
    Trigger,
)
from memoir.secrets import has_secret

__all__ = [
    "KEY_LIMIT",
    "ExtractionTask",
    "Statement",
    "extract_turns",
    "offline_proposal",
    "slot_of",
]

KEY_LIMIT = 6
_QUOTES_PER_ITEM = 8

_LIST_MARK = re.compile(r"^\s*(?:[-*•]+|\d{1,3}[.)]|#{1,6})\s+")
_PROJECT = re.compile(
    r"\b(?:this|our|the) (?:project|repo|repository|codebase|code base|app|service|api"
    r"|package|module|branch|pipeline|ci|build|tests?)\b"
)
_WE_DECISION = re.compile(r"\b(?:we|let's|we're|we'll|we've)\b")
_ISO_DATE = re.compile(r"\b(\d{4}-\d{2}-\d{2})\b")
_ELLIPTICAL = re.compile(
    r"^(?:please |ok(?:ay)?,? |yes,? )?(?:remember|keep|note|save|store) (?:that|this|it)"
    r"(?: (?:for (?:later|next time|the future)|please))?[.!]*$"
)


# Slots: what a statement is about when a later one can replace it. A slot's name becomes
# one of the item's keys (so the two share a key), and a new statement of a slot updates
# the newest shown memory of that slot — for home and workplace any new statement (one
# lives in one place), for tools only with a change cue ("we switched to pnpm").
_SLOTS: tuple[tuple[str, re.Pattern[str], bool], ...] = (
    (
        "home",
        re.compile(
            r"\bi (?:now |currently )?live in\b|\bi(?:'ve| have)? (?:just |recently )?"
            r"(?:moved|relocated) to\b|\bi(?:'m| am) (?:now )?based in\b|\bmy home is\b"
        ),
        False,
    ),
    (
        "workplace",
        re.compile(
            r"\bi (?:now |currently )?work (?:at|for)\b|\bi(?:'ve| have)? (?:just )?joined\b"
            r"|\bi started (?:a new job|working) (?:at|for)\b|\bmy employer is\b"
        ),
        False,
    ),
    ("package manager", re.compile(r"\b(?:npm|yarn|pnpm|bun|poetry|pipenv|uv)\b"), True),
    (
        "database",
        re.compile(r"\b(?:postgres(?:ql)?|mysql|mariadb|sqlite|mongodb|redis|dynamodb)\b"),
        True,
    ),
)
_CHANGE = re.compile(
    r"\b(?:switch(?:ed|ing)?|migrat(?:ed|ing|e)|mov(?:ed|ing)|chang(?:ed|ing)|replac(?:ed|ing))"
    r" (?:over )?(?:to|from|with)\b|\binstead of\b|\bno longer\b|\bnow use\b"
)


def slot_of(text: str) -> tuple[str, bool] | None:
    """The slot a statement fills (its name, and whether only a change cue replaces an
    earlier one), or None."""
    folded = cue_form(text)
    for name, pattern, needs_change in _SLOTS:
        if pattern.search(folded):
            return name, needs_change
    return None


def _updates(item: ProposedItem, known: Sequence[KnownItem]) -> str | None:
    """The shown memory ``item`` replaces: the newest one of its slot (see ``_SLOTS``)."""
    slot = slot_of(item.content)
    if slot is None or (slot[1] and not _CHANGE.search(cue_form(item.content))):
        return None
    same = [k for k in known if slot[0] in k.keys and cue_form(k.content) != cue_form(item.content)]
    if not same:
        return None
    return max(same, key=lambda k: (k.latest is not None, k.latest or 0, k.id)).id


@dataclass(frozen=True, slots=True)
class Statement:
    """A sentence picked from a user event: ``text`` is exact (the quote), ``kind`` its
    cue's, ``content`` the words to keep ("Remember that X" keeps X; else ``text``)."""

    ordinal: int
    text: str
    kind: ItemKind
    content: str = ""

    @property
    def kept(self) -> str:
        return self.content or self.text


def _sentences(turn: SliceTurn) -> list[str]:
    out = []
    for line in own_lines(turn.text):
        for piece in split_sentences(line):
            piece = piece.strip()
            mark = _LIST_MARK.match(piece)
            if mark:
                piece = piece[mark.end() :].strip()
            if piece:
                out.append(piece)
    return out


def extract_turns(turns: Sequence[SliceTurn]) -> list[Statement]:
    """Every durable statement of the citable user turns, in order."""
    found = []
    for turn in turns:
        if turn.role != "user" or not turn.citable:
            continue
        for sentence in _sentences(turn):
            read = reading(sentence)
            if read is not None and sentence in turn.text and not has_secret(sentence):
                found.append(Statement(turn.ordinal, sentence, read.kind, read.kept(sentence)))
    return found


def _keys(text: str, kind: ItemKind) -> tuple[str, ...]:
    slot = slot_of(text)
    keys: list[str] = [slot[0]] if slot is not None else []
    for k in keywords(text, KEY_LIMIT) or content_words(text)[:3] or [kind.value]:
        k = " ".join(k.lower().split())[:100]
        if k and k not in keys:
            keys.append(k)
    return tuple(keys[:KEY_LIMIT]) or (kind.value,)


def _item(group: list[Statement]) -> ProposedItem:
    first = group[0]
    content = " ".join(unicodedata.normalize("NFC", first.kept).split())
    folded = cue_form(content)
    project = _PROJECT.search(folded) or (
        first.kind is ItemKind.DECISION and _WE_DECISION.search(folded)
    )
    dates = set(_ISO_DATE.findall(content))
    point = dates.pop() if len(dates) == 1 else None
    return ProposedItem(
        content=content,
        kind=first.kind.value,
        keys=_keys(content, first.kind),
        quotes=tuple(Quote(s.ordinal, s.text) for s in group[:_QUOTES_PER_ITEM]),
        scope=(Scope.PROJECT if project else Scope.GLOBAL).value,
        temporal=(TemporalType.POINT if point else TemporalType.UNDATED).value,
        start=point,
    )


def _items(found: Sequence[Statement], limit: int) -> tuple[ProposedItem, ...]:
    groups: dict[str, list[Statement]] = {}
    for s in found:
        group = groups.setdefault(cue_form(s.kept), [])
        if all((g.ordinal, g.text) != (s.ordinal, s.text) for g in group):
            group.append(s)
    return tuple(_item(g) for g in list(groups.values())[:limit])


def _requested(slice_: EvidenceSlice, turn: int) -> list[Statement]:
    """The statements a remember of ``turn`` asks for: the turn's own, or, when the turn
    only says "remember that", those of the nearest earlier user turn of the range."""
    asked = [t for t in slice_.turns if t.ordinal == turn]
    picked = extract_turns(asked)
    if picked or not asked or not _ELLIPTICAL.match(cue_form(asked[0].text)):
        return picked
    earlier = [t for t in slice_.turns if t.citable and t.role == "user" and t.ordinal < turn]
    for candidate in reversed(earlier):
        picked = extract_turns([candidate])
        if picked:
            return picked
    return []


def offline_proposal(
    slice_: EvidenceSlice,
    trigger: Trigger,
    requested_turn: int | None = None,
    known: Sequence[KnownItem] = (),
) -> Proposal:
    """The offline proposal for a slice (see the module docstring), each item naming the
    shown memory it updates, if any."""
    proposal = _extract(slice_, trigger, requested_turn)
    if not known:
        return proposal
    return Proposal(
        proposal.status,
        tuple(replace(i, updates=_updates(i, known)) for i in proposal.items),
        tuple(replace(i, updates=_updates(i, known)) for i in proposal.incidental),
    )


def _extract(slice_: EvidenceSlice, trigger: Trigger, requested_turn: int | None) -> Proposal:
    everything = extract_turns(slice_.turns)
    if requested_turn is None or not trigger.requests_items:
        items = _items(everything, MAX_ITEMS)
        status = ProposalStatus.COMPLETE if items else ProposalStatus.NOT_APPLICABLE
        return Proposal(status, items)
    asked = _requested(slice_, requested_turn)
    taken = {(s.ordinal, s.text) for s in asked}
    rest = [s for s in everything if (s.ordinal, s.text) not in taken]
    items = _items(asked, MAX_ITEMS)
    known = {i.content.casefold() for i in items}
    incidental = tuple(i for i in _items(rest, MAX_ITEMS) if i.content.casefold() not in known)
    status = ProposalStatus.COMPLETE if items else ProposalStatus.NOT_APPLICABLE
    return Proposal(status, items, incidental[:MAX_INCIDENTAL])


@dataclass(frozen=True, slots=True)
class ExtractionTask:
    """A memory request's structured input: the trigger, the slice's turns, the turn a
    remember asks for and the live memories shown. Its offline answer is the proposal
    JSON of :func:`offline_proposal`, within ``max_tokens`` (incidental items, then items, are
    dropped from the end to fit)."""

    trigger: Trigger
    turns: tuple[SliceTurn, ...]
    requested_turn: int | None = None
    known: tuple[KnownItem, ...] = ()

    def answer(self, max_tokens: int, count: Callable[[str], int]) -> str:
        # the extractor reads what the prompt shows: a turn's role, text and citability
        # (a user's only), a known item's id, content, kind and keys
        turns = tuple(
            SliceTurn(t.ordinal, t.role, t.text, t.citable and t.role == "user") for t in self.turns
        )
        known = tuple(KnownItem(k.id, k.content, k.kind, k.keys) for k in self.known)
        proposal = offline_proposal(_slice_of(turns), self.trigger, self.requested_turn, known)
        text = proposal_json(proposal)
        while count(text) > max_tokens and (proposal.items or proposal.incidental):
            proposal = _smaller(proposal)
            text = proposal_json(proposal)
        return text


def _slice_of(turns: Sequence[SliceTurn]) -> EvidenceSlice:
    last = max((t.ordinal for t in turns), default=0)
    return EvidenceSlice(Range(0, last, last), tuple(turns))


def _smaller(p: Proposal) -> Proposal:
    if p.incidental:
        return Proposal(p.status, p.items, p.incidental[:-1])
    items = p.items[:-1]
    status = p.status if items else ProposalStatus.NOT_APPLICABLE
    return Proposal(status, items, ())
