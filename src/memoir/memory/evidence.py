"""The evidence slice: what of a range the extractor may read, and what it may cite.

Rules, applied to the durable events of ``(after_cursor, context_through]``:

- **Evidence** is only user text: a ``USER_TEXT`` event authored by the user, inside the
  covered part ``(after_cursor, coverage_through]``. Its shown text has quotes of other
  text removed — lines opening with ``>`` (a quote block, also how Memoir's renderers
  neutralize pasted speaker labels), fenced code blocks (pasted code, logs, command
  output) and harness-injected tags (``<system-reminder>…</system-reminder>``,
  ``<command-…>``, ``<local-command-…>``, ``<bash-…>``) — and attachment references
  removed (``[image]``, ``[Image #2]``, ``[file]``, ``[Pasted text #1 +20 lines]``,
  ``scheme://…/attachments/…`` and ``attachment:…`` URIs).
- A user event flagged in its payload as not the user's own words (``pasted``, ``quoted``,
  ``command``, ``command_output``, ``echo``, ``meta``, ``sidechain``) is excluded whole.
- User text after ``coverage_through`` (the retained tail) is shown, never citable.
- **Assistant text** (``ASSISTANT_TEXT`` by the assistant) is interpretation context: shown,
  never citable; attachment references and fenced code removed.
- Everything else — tool calls and their inputs, tool results, thinking, attachments,
  meta, compaction markers, harness text (``HARNESS``: what the agent's CLI wrote in the
  user's place, told apart at ingest by :mod:`memoir.model.harness`), and user-kind
  events not authored by the user — is excluded entirely: not sanitized, not summarized,
  not counted into the request.

A turn whose text is empty after removal is left out. The slice keeps event order; a
:class:`SliceTurn` marks whether it opens a conversational turn (a user event after a
non-user one), where a split may cut.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Literal

from memoir.memory.values import Range
from memoir.model import Author, Event, EventKind, speaker_of

__all__ = [
    "EXCLUDING_FLAGS",
    "EvidenceSlice",
    "SliceTurn",
    "build_slice",
    "clean_assistant_text",
    "clean_user_text",
    "coverage_hash",
    "exchange_end",
    "has_user_text",
    "turn_text",
]

EXCLUDING_FLAGS = ("pasted", "quoted", "command", "command_output", "echo", "meta", "sidechain")

_FENCE = re.compile(r"^[ \t]*(```|~~~).*?(?:^[ \t]*\1[^\n]*$|\Z)", re.DOTALL | re.MULTILINE)
_QUOTE_LINE = re.compile(r"^[ \t]*>.*$\n?", re.MULTILINE)
_INJECTED = re.compile(
    r"<(system-reminder|command-[\w-]+|local-command-[\w-]+|bash-[\w-]+)>.*?(?:</\1>|\Z)",
    re.DOTALL,
)
_ATTACHMENT = re.compile(
    r"\[(?:image|file|audio|video|document|attachment|pdf)(?:\s*#\d+)?\]"
    r"|\[Pasted text(?: #\d+)?(?: \+\d+ lines)?\]"
    r"|\b[a-z][a-z0-9+.-]*://\S*?\battachments?\b\S*"
    r"|\battachment:\S+",
    re.IGNORECASE,
)
_BLANK_RUN = re.compile(r"\n[ \t]*\n(?:[ \t]*\n)+")


@dataclass(frozen=True, slots=True)
class SliceTurn:
    """One shown event: ``text`` is exactly what the model is shown."""

    ordinal: int
    role: Literal["user", "assistant"]
    text: str
    citable: bool
    opens_turn: bool = False
    speaker: str | None = None


@dataclass(frozen=True, slots=True)
class EvidenceSlice:
    """The shown events of a range, in order; ``excluded`` counts the events of the
    range left out entirely, ``removed`` the quoted or pasted pieces cut from user text."""

    range: Range
    turns: tuple[SliceTurn, ...]
    excluded: int = 0
    removed: int = 0

    @property
    def citable(self) -> tuple[SliceTurn, ...]:
        return tuple(t for t in self.turns if t.citable)

    def turn(self, ordinal: int) -> SliceTurn | None:
        for t in self.turns:
            if t.ordinal == ordinal:
                return t
        return None


def _tidy(text: str) -> str:
    return _BLANK_RUN.sub("\n\n", text).strip()


def clean_user_text(text: str) -> tuple[str, int]:
    """(shown text, number of pieces removed) of a user message: quote blocks, fenced
    code, injected harness tags and attachment references cut."""
    removed = 0
    for pattern in (_INJECTED, _FENCE, _QUOTE_LINE, _ATTACHMENT):
        text, n = pattern.subn("", text)
        removed += n
    return _tidy(text), removed


def clean_assistant_text(text: str) -> str:
    """The shown text of an assistant message: fenced code, injected tags and attachment
    references cut (it is context, never evidence)."""
    for pattern in (_INJECTED, _FENCE, _ATTACHMENT):
        text = pattern.sub("", text)
    return _tidy(text)


def _user_event(event: Event) -> bool:
    return event.kind is EventKind.USER_TEXT and event.author is Author.USER


def _flagged(event: Event) -> bool:
    return any(event.payload.get(flag) for flag in EXCLUDING_FLAGS)


def build_slice(events: Iterable[Event], range_: Range) -> EvidenceSlice:
    """The evidence slice of ``range_`` over a session's events (any order; events
    outside ``(after_cursor, context_through]`` are ignored)."""
    turns: list[SliceTurn] = []
    excluded = removed = 0
    previous_role: str | None = None
    for event in sorted((e for e in events if range_.reads(e.ordinal)), key=lambda e: e.ordinal):
        shown: SliceTurn | None = None
        if _user_event(event) and not _flagged(event):
            text, cut = clean_user_text(event.text)
            removed += cut
            if text:
                shown = SliceTurn(
                    event.ordinal,
                    "user",
                    text,
                    citable=range_.covers(event.ordinal),
                    opens_turn=previous_role != "user",
                    speaker=speaker_of(event),
                )
        elif event.kind is EventKind.ASSISTANT_TEXT and event.author is Author.ASSISTANT:
            text = clean_assistant_text(event.text)
            if text:
                shown = SliceTurn(event.ordinal, "assistant", text, False, False, speaker_of(event))
        if shown is None:
            excluded += 1
            continue
        turns.append(shown)
        previous_role = shown.role
    return EvidenceSlice(range_, tuple(turns), excluded, removed)


def has_user_text(slice_: EvidenceSlice) -> bool:
    """Whether the range holds any citable user text (without it: a no-op receipt, no
    model call)."""
    return any(t.citable for t in slice_.turns)


def turn_text(slice_: EvidenceSlice, ordinal: int) -> str | None:
    """The shown text of the user event at ``ordinal`` (a remember's requested turn)."""
    t = slice_.turn(ordinal)
    return t.text if t is not None and t.role == "user" else None


def coverage_hash(events: Iterable[Event], range_: Range) -> str:
    """A fingerprint of the covered events (ordinal, kind, author, text), so a retry can
    tell whether the history under a pending range changed."""
    digest = hashlib.sha256()
    for e in sorted((e for e in events if range_.covers(e.ordinal)), key=lambda e: e.ordinal):
        row = [e.ordinal, e.kind.value, e.author.value, e.text]
        digest.update(json.dumps(row, ensure_ascii=False).encode("utf-8"))
        digest.update(b"\n")
    return digest.hexdigest()[:32]


def exchange_end(events: Sequence[Event], turn: int) -> int:
    """The last event of the exchange the user event ``turn`` opens (up to the next user
    text), or ``turn`` itself."""
    end = turn
    for e in events:
        if e.ordinal <= turn:
            continue
        if e.kind.value == "user_text" and e.author.value == "user":
            break
        end = e.ordinal
    return end
