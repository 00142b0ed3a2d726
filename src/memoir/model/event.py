"""Sessions and their events: the values ingest writes and everything else is derived from.

The session value: one conversation, wherever it came from.

Durable events: the authority everything else is derived from.

When an event the source gave no time happened: the nearest known time (pure).

Sources leave times out: a Claude Code line written without one, a generic JSON chat that
has none at all, a message appended over the API without one. Such an event is never
left without a time — date filters, "recent" orderings and the page would drop it. It
takes, in this order:

1. the time of the nearest event before it that has one of its own (``before`` stands for
   what came before the events given: the last known time of a transcript's earlier
   batches, or of its earlier syncs);
2. else the time of the nearest event after it that has one;
3. else ``fallback``: the transcript file's modification time, or the time the events
   are stored (an API append).

Earlier wins over later: a message is written after what it answers, so the time of what
came before is the closer bound a reader expects (and one that never runs ahead of the
file). The event is marked ``time_inferred``; an inferred time is never taken as a known
one for another event (it would pass a guess along as if it were the source's).

What a tool's output says of how it ended: the last exit status it states and its last
error lines. Pure; the one reading compaction's stand-ins and the offline work summary
share.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from enum import StrEnum
from typing import Any

__all__ = [
    "ERROR_LINE",
    "EXIT_STATUS",
    "LOCAL_USER",
    "MAX_SPEAKER_CHARS",
    "Author",
    "Event",
    "EventKind",
    "Harness",
    "RecentKey",
    "RecentPage",
    "RecentQuery",
    "Session",
    "SessionFlags",
    "SessionInfo",
    "clean_speaker",
    "fill_times",
    "infer_times",
    "named_session_id",
    "scrub",
    "scrub_deep",
    "speaker_of",
    "spoken_text",
    "time_of_ns",
    "tool_outcome",
]

LOCAL_USER = "local"
"""The owner of every session synced from this machine's transcripts, and the user a
Memoir, the CLI and the MCP server act for unless told otherwise."""


class Harness(StrEnum):
    """Where a conversation came from."""

    CLAUDE_CODE = "claude-code"
    CODEX = "codex"
    GEMINI_CLI = "gemini-cli"
    OPENCODE = "opencode"
    AIDER = "aider"
    GENERIC = "generic"
    API = "api"


@dataclass(frozen=True, slots=True)
class SessionFlags:
    """Policy flags. Any of them set makes the session ineligible for memory extraction."""

    incognito: bool = False
    archived: bool = False
    subagent: bool = False
    memory_disabled: bool = False

    @property
    def memory_denied(self) -> bool:
        return self.incognito or self.archived or self.subagent or self.memory_disabled


@dataclass(frozen=True, slots=True)
class Session:
    """One conversation.

    ``id`` is the transcript's own session id (Claude Code ``sessionId``, Codex
    ``session_meta.payload.id``, the file stem for generic files, or the caller's id for
    sessions fed through the API). ``project`` is the folder the transcript sits in
    under its source (the archive folder name).

    ``name`` is the id a client chose for a session it fed (over the HTTP API or
    ``Memoir.append``): a name of its user's, not an id. Such a session is stored under
    :func:`named_session_id` of its user and name, so two users may each have a
    ``chat-1``; every lookup of a user's session takes the name or the id. None for
    transcripts, for sessions whose id Memoir chose, and for those fed before v21.
    """

    id: str
    project: str
    harness: Harness
    user: str = LOCAL_USER
    source_path: str | None = None
    flags: SessionFlags = field(default_factory=SessionFlags)
    cwd: str | None = None
    created_at: datetime | None = None
    updated_at: datetime | None = None
    name: str | None = None


def named_session_id(user: str, name: str) -> str:
    """The id ``user``'s session named ``name`` is stored under: 32 hex digits (as a
    generated id), a digest of the user and the name, NUL between them (no user name holds
    a NUL, so each user and name make one id of their own). A function of the caller's own
    user and name only, so the id a create returns never depends on what another user
    holds. Pure."""
    raw = f"{user}\0{name}".encode("utf-8", "surrogatepass")
    return hashlib.sha256(raw).hexdigest()[:32]


class EventKind(StrEnum):
    USER_TEXT = "user_text"
    ASSISTANT_TEXT = "assistant_text"
    TOOL_CALL = "tool_call"
    TOOL_RESULT = "tool_result"
    THINKING = "thinking"
    ATTACHMENT = "attachment"
    META = "meta"
    COMPACTION = "compaction"
    # text the agent's CLI put in a user-role message (a command echo, a system reminder,
    # an environment block …; :mod:`memoir.model.harness`), its shape in
    # ``payload["harness"]``: archived, searched and shown, never the user's words
    HARNESS = "harness"


class Author(StrEnum):
    USER = "user"
    ASSISTANT = "assistant"
    TOOL = "tool"
    SYSTEM = "system"


@dataclass(frozen=True, slots=True)
class Event:
    """One durable event of a session.

    ``ordinal`` is per-session, starting at 1, strictly increasing, never reused.
    ``timestamp`` is timezone-aware UTC (or None when the source had none and none was
    inferred yet). ``time_inferred``: the source gave this event no time of its own, and
    ``timestamp`` is the nearest known one (:func:`memoir.model.event.infer_times`:
    the events around it, else the transcript file's modification time, else the time it
    was stored).
    ``tool_name``/``call_id`` are set for tool calls and results (a result carries the
    call id of the call it answers). ``payload`` holds what the source had beyond text
    (tool input as a dict, ``is_error``, model name, …) and must be JSON-serialisable.
    ``payload["speaker"]`` is the name of who wrote a user or assistant message when the
    source named one (an OpenAI-style message's ``name``: a person in a group chat, one agent
    of several); :func:`spoken_text` shows it.
    ``source_offset`` is the byte offset of the transcript line it came from and
    ``source_line`` its 1-based line number (None for API-fed events).
    """

    session_id: str
    ordinal: int
    kind: EventKind
    author: Author
    text: str
    timestamp: datetime | None = None
    tool_name: str | None = None
    call_id: str | None = None
    payload: dict[str, Any] = field(default_factory=dict)
    source_offset: int | None = None
    source_line: int | None = None
    time_inferred: bool = False


MAX_SPEAKER_CHARS = 64
_SPACE = re.compile(r"\s+")
_CONTROL = re.compile(r"[\x00-\x1f\x7f]")


def clean_speaker(raw: object) -> str | None:
    """A source's participant name as Memoir keeps it: a string, control characters and
    runs of spaces collapsed, at most :data:`MAX_SPEAKER_CHARS` characters; None when
    nothing is left (or it was not a string)."""
    if not isinstance(raw, str):
        return None
    name = _SPACE.sub(" ", _CONTROL.sub(" ", raw)).strip()[:MAX_SPEAKER_CHARS].strip()
    return name or None


def speaker_of(event: Event) -> str | None:
    """The named speaker of a user or assistant message, if the source gave one."""
    if event.kind not in (EventKind.USER_TEXT, EventKind.ASSISTANT_TEXT):
        return None
    return clean_speaker(event.payload.get("speaker"))


def spoken_text(event: Event) -> str:
    """The event's text as a transcript shows it: led by the speaker's name when the source
    named one (``"Alice: …"``), so the name is searched, embedded and summarised with the
    words it said."""
    speaker = speaker_of(event)
    if speaker is None or not event.text:
        return event.text
    return f"{speaker}: {event.text}"


def time_of_ns(ns: int) -> datetime:
    """The UTC time ``ns`` nanoseconds after the epoch (a file's ``st_mtime_ns``), cut to
    the microsecond exactly: ``ns / 1e9`` goes through a float and can land one off."""
    seconds, rest = divmod(ns, 1_000_000_000)
    return datetime.fromtimestamp(seconds, UTC).replace(microsecond=rest // 1000)


def fill_times(
    times: Sequence[datetime | None], *, before: datetime | None, fallback: datetime
) -> list[datetime]:
    """``times`` with each None replaced by the nearest known time (see the module): the
    last known one before it (``before`` when none of ``times`` precedes it), else the
    first known one after it, else ``fallback``."""
    following: list[datetime | None] = [None] * len(times)
    after: datetime | None = None
    for at in range(len(times) - 1, -1, -1):
        if times[at] is not None:
            after = times[at]
        following[at] = after
    out: list[datetime] = []
    previous = before
    for at, own in enumerate(times):
        if own is not None:
            previous = own
            out.append(own)
        elif previous is not None:
            out.append(previous)
        else:
            out.append(following[at] or fallback)
    return out


def infer_times(
    events: Sequence[Event], *, before: datetime | None, fallback: datetime
) -> list[Event]:
    """``events`` (in ordinal order) with a time for each one that has none, marked
    ``time_inferred`` (:func:`fill_times`). An event already inferred keeps its time but
    is no anchor for the others; events with times of their own are returned as they are."""
    if all(e.timestamp is not None for e in events):
        return list(events)
    own = [None if e.time_inferred else e.timestamp for e in events]
    filled = fill_times(own, before=before, fallback=fallback)
    return [
        e if e.timestamp is not None else replace(e, timestamp=at, time_inferred=True)
        for e, at in zip(events, filled, strict=True)
    ]


EXIT_STATUS = re.compile(
    r"\b(?:exit(?:ed)?(?:[ _]with)?[ _](?:code|status)|exit_?code|return_?code|returncode"
    r"|status code|process exited with code)\b[\s:=]*(-?\d{1,4})\b",
    re.IGNORECASE,
)
ERROR_LINE = re.compile(
    r"\b(?:error|errors|exception|traceback|failed|failure|failing|fatal|panic|denied"
    r"|not found|no such file|cannot|can't|could not|unable to|refused|timed out)\b"
    r"|(?-i:[a-z](?:Error|Exception)\b)",  # ModuleNotFoundError, NullPointerException
    re.IGNORECASE,
)
_SCAN_CHARS = 20_000  # the tail an exit status is looked for in
_SCAN_LINES = 4_000  # the tail error lines are looked for in


def _collapsed(line: str) -> str:
    return " ".join(line.split())


def tool_outcome(
    text: str,
    *,
    most: int = 2,
    clean: Callable[[str], str | None] = lambda line: line,
    show: Callable[[str], str] = _collapsed,
) -> tuple[str | None, tuple[str, ...]]:
    """The last exit status stated in ``text`` (None: none) and its last ``most`` distinct
    error lines, in order. ``clean`` turns a stripped line into the text to judge (None:
    skip it); ``show`` into the text kept (whitespace collapsed by default)."""
    statuses = EXIT_STATUS.findall(text[-_SCAN_CHARS:])
    errors: list[str] = []
    for line in reversed(text.splitlines()[-_SCAN_LINES:]):
        if len(errors) >= most:
            break
        candidate = clean(line.strip())
        if candidate is None or len(candidate) < 4 or not ERROR_LINE.search(candidate):
            continue
        shown = show(candidate)
        if shown not in errors:
            errors.append(shown)
    return (statuses[-1] if statuses else None), tuple(reversed(errors))


# the values a listing of sessions takes and gives -------------------------------------
@dataclass(frozen=True, slots=True)
class SessionInfo:
    """A session with its counts and the span of its exchanges (a line of a listing)."""

    session: Session
    exchanges: int
    events: int
    first_at: datetime | None
    last_at: datetime | None


RecentKey = tuple[datetime | None, str]
"""Where a page of the most recently active sessions ends: its last session's ``last_at``
and id (the order is ``last_at`` newest first, sessions with none last, then id)."""


@dataclass(frozen=True, slots=True)
class RecentQuery:
    """Which sessions a listing keeps: of ``project``, of ``harness``, active (their
    exchanges, first to last) on or after ``since`` and before ``until``."""

    project: str | None = None
    harness: str | None = None
    since: datetime | None = None
    until: datetime | None = None


@dataclass(frozen=True, slots=True)
class RecentPage:
    """A page of a listing; ``total``, ``projects`` and ``harnesses`` when counted."""

    sessions: tuple[SessionInfo, ...]
    more: bool
    total: int | None = None
    projects: tuple[str, ...] = ()
    harnesses: tuple[str, ...] = ()

    @property
    def last_key(self) -> RecentKey | None:
        """The keyset the next page starts after (None: an empty page)."""
        if not self.sessions:
            return None
        last = self.sessions[-1]
        return (last.last_at, last.session.id)


# text a database can store ------------------------------------------------------------
# PostgreSQL text holds no NUL, and no backend stores a lone UTF-16 surrogate (half an
# emoji, or an undecodable byte read with ``surrogateescape``): what sync does to a
# transcript's text, and the HTTP API to a body it reads, before either reaches the store.
def scrub(text: str) -> str:
    """Text a database can store: NUL → U+FFFD."""
    return text.replace("\x00", "\ufffd") if "\x00" in text else text


def scrub_deep(text: str) -> str:
    """Also replace lone surrogates (undecodable bytes) so the text encodes as UTF-8."""
    return scrub(text).encode("utf-8", "replace").decode("utf-8")
