r"""The evidence slice: what of a range the extractor may read, and what it may cite.

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

Which lines of a user message are the user's own words, and not material they brought.

A person reading a message keeps what its author says, not what the author pasted or
quoted to talk about. :func:`own_lines` gives the lines of a message (exact substrings,
in order) that read as the user's own prose, leaving out:

- **code** — fenced blocks (```` ``` ```` / ``~~~``), indented blocks (a tab or four
  spaces, list items excepted), shell and REPL prompts (``$ ``, ``% ``, ``❯``, ``>>>``,
  ``In [3]:``, ``PS C:\>``, ``user@host:~$``), markdown tables, and any line under 75 %
  letters and spaces;
- **logs and traces** — lines opening with a timestamp, a log level, a syslog or
  ``key=value`` prefix, an exception (``TypeError: …``, ``java.lang.…Exception``,
  ``Caused by:``), a compiler or tool diagnostic (``error[E0382]:``, ``npm ERR!``,
  ``warning:``), a test runner's verdict (``FAILED``, ``E   assert``), a traceback
  frame (``Traceback``, ``File "…", line N``, ``at pkg.Cls(File.java:12)``); and the
  whole paragraph when most of its lines are code or log;
- **quoted or pasted text** — blockquote lines (``>``); everything after a line that
  introduces material ("Here's the email he sent:", "Proofread this:", "The error
  says:" — a line ending in a colon that names a document, a message, output, or asks for
  work on text; on one line, the text after that colon); everything from an email header
  (``From:``/``To:``/``Subject:``), a reply marker ("On Mon, … wrote:"), a forwarded or
  original-message rule, or a letter's salutation ("Dear Sam,") on; a letter between a
  salutation line and a sign-off line ("Best,", "Regards,"); and chat transcripts (two or
  more lines opening with a speaker's name and a colon, at least two speakers).

Pure, linear in the message, deterministic; the sentence-level rules (inline quotes,
questions, hypotheticals, complaints) are :mod:`memoir.memory.cues`'.
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
    "code_or_log",
    "coverage_hash",
    "exchange_end",
    "has_user_text",
    "own_lines",
    "prose_line",
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


_FENCE_LINE = re.compile(r"^\s*(```|~~~)")
_LIST_ITEM = re.compile(r"^\s*(?:[-*•+]|\d{1,3}[.)])\s+")
_INDENTED = re.compile(r"^(?:\t| {4,})\S")
_PROMPT = re.compile(
    r"^\s*(?://|/\*|\*/|<!--|#!|[$%❯➜λ]\s|>>>|\.\.\.\s|In \[\d+\]:|Out\[\d+\]:|PS [A-Za-z]:\\[^>]*>"
    r"|[\w.-]+@[\w.-]+(?::\S*)?\s?[$#%]\s|C:\\[^>]*>)"
)
_HASH = re.compile(r"^\s*#")
_TABLE = re.compile(r"^\s*\|.*\|\s*$")
_LOG = re.compile(
    r"^\s*\[?(?:\d{4}-\d{2}-\d{2}|\d{2}:\d{2}(?::\d{2})?|\d{2}/\d{2}/\d{4})"
    r"|^\s*\[?(?:ERROR|ERR|WARN|WARNING|INFO|DEBUG|TRACE|FATAL|CRITICAL|NOTICE|PANIC)\b"
    r"|^\s*(?:Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Oct|Nov|Dec) +\d{1,2} \d{2}:\d{2}"
    r"|^\s*(?:Traceback\b|File \"|at [\w.$<>]+\(|Caused by:|Exception in thread|During handling"
    r"|npm ERR!|npm WARN|yarn error|FAILED\b|PASSED\b|ERRORS?\b|E {2,}|\d+ (?:passed|failed)"
    r"|panicked at|thread '\w+' panicked|Segmentation fault|Killed\b|fatal:|hint:|remote:"
    r"|\s*\^+\s*$)"
    r"|^\s*(?:[\w$]+\.)*[\w$]*(?:Error|Exception|Warning|Fault|Failure)\b:?"
    r"|^\s*(?:error|warning|note|help|fatal|panic)(?:\[\w+\])?:"
    r"|^\s*\w+=\S+\s+\w+=\S+"
    r"|\bline \d+, in \S+"
)
_LETTERS = 0.75
_PASTE_START = re.compile(
    r"^\s*(?:(?:From|To|Cc|Bcc|Subject|Date|Sent|Reply-To):\s+\S"
    r"|On\s.{4,160}\swrote:\s*$"
    r"|-{2,}\s*(?:Original Message|Forwarded message)\s*-{2,}"
    r"|Begin forwarded message:"
    r"|Dear\s[^\n,]{1,40},\s*$)",
    re.IGNORECASE,
)
_SALUTATION = re.compile(
    r"^\s*(?:dear|hi|hello|hey|good (?:morning|afternoon|evening))\b[^.!?:\n]{0,40},\s*$",
    re.IGNORECASE,
)
_SIGN_OFF = re.compile(
    r"^\s*(?:best|best regards|kind regards|warm regards|regards|cheers|thanks|many thanks"
    r"|thank you|sincerely|yours sincerely|yours truly|warmly|all the best|love|xoxo"
    r"|sent from my \w+)[,!.]?\s*$",
    re.IGNORECASE,
)
# a line that introduces material: its text up to a colon names a document, a message or
# output ("Here's the email:", "the error I get:"), reports speech ("He wrote:") or asks
# for work on text ("Proofread this:", "Can you translate:")
_NOUNS = (
    r"e-?mails?|mail|messages?|msg|reply|replies|letter|text|post|tweet|comments?|review"
    r"|description|ticket|issue|doc|docs|document|paragraph|draft|snippet|excerpt|quote"
    r"|output|logs?|errors?|trace|traceback|stack ?trace|response|transcript|chat|thread"
    r"|readme|changelog|diff|patch|config|yaml|json|html|sql|code|script|function|class"
    r"|notes|minutes|announcement|memo|proposal|spec|statement|bio|summary|article"
)
_TECHNICAL = re.compile(
    r"\b(?:output|logs?|errors?|trace|traceback|stack ?trace|diff|patch|snippet|code|script"
    r"|config|yaml|json|html|sql|function|class|response)\b",
    re.IGNORECASE,
)
_DETERMINER = r"(?:this|the|that|these|those|his|her|their|my|our|your|an?|attached)"
_WORK_ON_TEXT = (
    r"proofread|translate|summari[sz]e|rewrite|reword|rephrase|edit|polish|shorten|improve"
    r"|format|review|explain|analy[sz]e|parse|fix|check|correct|critique|read|look at"
)
_INTRO = re.compile(
    r"^(?P<intro>(?=[^:\n]{0,160}?(?:"
    rf"\b{_DETERMINER}\s+(?:[\w'-]+\s+){{0,2}}(?:{_NOUNS})\b"
    rf"|^\s*(?:please\s+|pls\s+|can you\s+|could you\s+)?(?:{_WORK_ON_TEXT})\b"
    r"|\b(?:wrote|writes|said|says|replied|posted|sent|asked|told (?:me|us))\b"
    r"))[^:\n]{1,240}?):(?=\s|$)",
    re.IGNORECASE,
)
_SPEAKER = re.compile(
    r"^\s*(?:\[[^\]\n]{1,25}\]\s*)?(?P<name>[A-Z][\w.'-]{0,20}(?: [A-Z][\w.'-]{0,20})?):\s+\S"
)
# labels people write before their own words, never a speaker
_NOT_SPEAKER = frozenset(
    """note notes remember reminder important ps fyi update edit context background goal
    goals task tasks question questions q a answer problem issue rule rules constraint
    preference preferences decision decisions plan plans todo tl;dr tldr summary example
    why what how when where who status result results idea ideas bonus also nb warning
    caveat step steps option options pro pros con cons reason reasons requirement
    requirements error output input expected actual""".split()  # noqa: SIM905
)


def code_or_log(line: str) -> bool:
    """Whether one line is code, a prompt, a table, a log line or a trace frame."""
    stripped = line.strip()
    if not stripped:
        return False
    if _PROMPT.match(line) or _TABLE.match(line) or _LOG.search(line):
        return True
    if _INDENTED.match(line) and not _LIST_ITEM.match(line):
        return True
    letters = sum(ch.isalpha() or ch.isspace() for ch in stripped)
    return letters / len(stripped) < _LETTERS


def prose_line(line: str) -> bool:
    """Whether a line reads as prose: 8+ characters, and not code or a log line."""
    return len(line.strip()) >= 8 and not code_or_log(line)


def _paragraphs(lines: list[str]) -> list[list[int]]:
    groups: list[list[int]] = [[]]
    for i, line in enumerate(lines):
        if line.strip():
            groups[-1].append(i)
        elif groups[-1]:
            groups.append([])
    return [g for g in groups if g]


def _speakers(lines: list[str]) -> set[int]:
    """The lines of a pasted chat transcript: two or more ``Name: text`` lines, two
    names at least (labels people use for their own notes are no names)."""
    found = {}
    for i, line in enumerate(lines):
        m = _SPEAKER.match(line)
        if m and m.group("name").casefold() not in _NOT_SPEAKER:
            found[i] = m.group("name").casefold()
    if len(found) >= 2 and len(set(found.values())) >= 2:
        return set(found)
    return set()


def _letter(lines: list[str]) -> set[int]:
    """The lines of a letter: from a salutation line through a later sign-off line."""
    out: set[int] = set()
    start = None
    for i, line in enumerate(lines):
        if start is None and _SALUTATION.match(line):
            start = i
        elif start is not None and _SIGN_OFF.match(line):
            out.update(range(start, min(i + 2, len(lines))))  # the name under the sign-off
            start = None
    return out


def own_lines(text: str) -> list[str]:
    """The lines of ``text`` that are the user's own prose, each an exact substring of
    ``text`` (a line introducing material on the same line is cut at its colon)."""
    lines = text.split("\n")
    material = [False] * len(lines)
    kept: dict[int, str] = {}
    fence: str | None = None
    for i, line in enumerate(lines):
        stripped = line.strip()
        if fence is not None:
            material[i] = True
            if stripped.startswith(fence):
                fence = None
            continue
        opened = _FENCE_LINE.match(line)
        if opened:
            fence, material[i] = opened.group(1), True
            continue
        if _PASTE_START.match(line):
            material[i:] = [True] * (len(lines) - i)
            break
        if stripped.startswith(">") or code_or_log(line):
            material[i] = True
            continue
        intro = _INTRO.match(line) if ":" in line else None
        if intro:
            kept[i] = intro.group("intro") + ":"
            if line[intro.end() + 1 :].strip() or not _TECHNICAL.search(intro.group("intro")):
                material[i + 1 :] = [True] * (len(lines) - i - 1)
                break
            # output, a log or code on the lines below: each line is judged as code or log
            # (fenced blocks are gone from a slice's text; what follows them is the user's)
    for i in _speakers(lines) | _letter(lines):
        material[i] = True
    for group in _paragraphs(lines):
        code = sum(material[i] for i in group)
        for i in group:
            # most of the paragraph is code: all of it; a "# …" line beside code: a comment
            if (len(group) >= 2 and code * 2 > len(group)) or (code and _HASH.match(lines[i])):
                material[i] = True
    out = []
    for i, line in enumerate(lines):
        if material[i]:
            continue
        piece = kept.get(i, line)
        if len(piece.strip()) >= 8:
            out.append(piece)
    return out
