"""Where the tools read from: the home, what a reference names, and the ``read`` tool.

:class:`Home`: the Memoir home a server answers from, opened on the first tool call, acting
for the one user the server was started for (``memoir mcp --user NAME``; no tool takes a
user). Opening the store is left until a tool needs it, so the ``initialize`` round trip
pays only for the SDK's import. A home with no archive yet is not created: each call
answers "run `memoir sync`" until one exists (a mistyped ``MEMOIR_HOME`` must not become an
empty home).

References: sessions and projects as a model names them (an id or a unique prefix, a folder
name), and what a reference to a conversation (``memoir show X``, the ``read`` tool's
``id``) names — an exchange, or a whole session (:func:`read_target`, shared by both).

The ``read`` tool: a stored conversation, or one exchange with its neighbours, in pages. A
page holds the events after ``after`` (an event number) that fit in ``max_chars``
characters of JSON, read from the store a few dozen events at a time, so a 5 MB transcript
costs a page, not the transcript. Thinking and meta events are passed over (they still
count as read); tool calls and results are cut short unless asked for in full; an event
longer than a whole page is cut to its start and end. ``next_after`` is the last event
number the page covered while more of the range remains, so pages never overlap and never
skip an event. Every secret in the text is shown as its placeholder (``[redacted: AWS
access key]``, :func:`memoir.secrets.mask`): a tool's result goes to a model, and there is
no argument to reveal them (``memoir show --reveal`` is the person's way).
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from memoir import service
from memoir.config import Settings
from memoir.errors import ConfigError, MemoirError, NotFound
from memoir.mcp.tools import (
    DEFAULT_PAGE_CHARS,
    MAX_RESULT_CHARS,
    MIN_PAGE_CHARS,
    TOOL_TEXT_CHARS,
    Args,
    json_len,
    shorten,
)
from memoir.model import Author, Event, EventKind, exchanges_around, spoken_text
from memoir.model.event import LOCAL_USER
from memoir.model.exchange import TERMINAL_ESCAPE

if TYPE_CHECKING:
    from memoir.app import Memoir

__all__ = [
    "PROJECT_BLANK",
    "SESSION_BLANK",
    "Home",
    "exchange_parts",
    "known_project",
    "page_event",
    "read",
    "read_target",
    "session_id",
]


class Home:
    """``settings``: read once at the edge (``memoir mcp``). ``workdir``: the directory the
    agent works in (Claude Code's project directory, else the server's working
    directory), where ``remember`` looks for the current conversation. ``user``: whose
    conversations and memories every tool reads and changes (default ``local``, the owner
    of the sessions synced from this machine)."""

    def __init__(
        self, settings: Settings, workdir: Path | None = None, user: str = LOCAL_USER
    ) -> None:
        self.settings = settings
        self.workdir = workdir
        self.user = user
        self._memoir: Memoir | None = None
        self._lock = threading.Lock()

    def memoir(self) -> Memoir:
        """The open Memoir; ``NotFound`` while the home has no archive (tool calls run on
        worker threads: the first one opens it, the others wait for it)."""
        with self._lock:
            if self._memoir is None:
                from memoir.app import Memoir
                from memoir.service import database_file

                path = database_file(self.settings)
                if path is not None and not path.exists():
                    raise NotFound(
                        f"no Memoir archive at {self.settings.home} yet; run `memoir sync` "
                        "to make one (or set MEMOIR_HOME to the home you use)"
                    )
                self._memoir = Memoir.open(self.settings, user=self.user)
            return self._memoir

    def close(self) -> None:
        with self._lock:
            if self._memoir is not None:
                self._memoir.close()
                self._memoir = None


# what an empty ``session`` / ``project`` argument is told to give instead
SESSION_BLANK = "give a session id or a unique prefix of it (a search hit's session_id)"
PROJECT_BLANK = "give a project's name, its folder or the folder's last part"


def session_id(home: Home, ref: str) -> str:
    """The session of the server's user ``ref`` names (an id or a unique prefix); another
    user's is "no session", as one that does not exist."""
    from memoir import service

    return service.session_id(home.memoir(), ref)


def known_project(home: Home, project: str) -> str:
    """``project`` as the index names it among the server's user's sessions: its name, its
    folder or the folder's last part; an unknown project is an error, not a silent
    "nothing found"."""
    from memoir import service

    return service.project(home.memoir(), project)


def exchange_parts(ref: str) -> tuple[str, str] | None:
    """``(session part, exchange number)`` when ``ref`` is shaped as an exchange id
    (``SESSION:N``: the last ``:`` followed by ASCII digits only), else None. Pure."""
    head, sep, tail = ref.rpartition(":")
    if sep and head and tail and tail.isascii() and tail.isdigit():
        return head, tail
    return None


def read_target(
    ref: str,
    *,
    resolve: Callable[[str], str],
    is_session: Callable[[str], bool],
    is_exchange: Callable[[str], bool],
    hint: str = "",
) -> tuple[str, str | None]:
    """The session ``ref`` names, and the exchange when it names one. ``resolve``: the
    session an id or a unique prefix names (raising ``MemoirError`` when none or several);
    ``is_session`` / ``is_exchange``: whether that exact id is stored; ``hint`` ends the
    "no exchange" sentence. Pure given pure lookups (the tests pass dictionaries).

    ``SESSION:N`` reads first as exchange ``N`` of ``SESSION`` when that session (an id or
    a unique prefix) has that exchange — even when ``SESSION:N`` is also a session's id:
    ids are one namespace across users, and a session named ``alice-session:1`` must not
    take over a reference to alice's exchange. The whole string as a session id is the
    fallback, so a session of an older version whose id holds ``:`` stays reachable.
    Otherwise an exchange-shaped ``ref`` is an error about the exchange (or its session
    part), anything else a session id or a unique prefix."""
    parts = exchange_parts(ref)
    if parts is None:
        return resolve(ref), None
    head, tail = parts
    try:
        sid = resolve(head)
    except MemoirError:
        if is_session(ref):
            return ref, None
        raise
    exchange = f"{sid}:{tail}"
    if is_exchange(exchange):
        return sid, exchange
    if is_session(ref):
        return ref, None
    raise NotFound(f"no exchange {ref!r}: session {sid} has no exchange :{tail}{hint}")


_CHUNK = 48  # events read from the store per query
# a page's envelope must leave most of even the smallest page to the events: a stored
# field (a 30,000-character cwd, a project name, a tool name) is cut to its start and end
_FIELD_CHARS = 160
_EXCHANGE_LIST_CHARS = 600  # the ids of the exchanges in range, as many as fit
_HIDDEN = (EventKind.META, EventKind.THINKING)
_TOOLS = (EventKind.TOOL_CALL, EventKind.TOOL_RESULT)
_LABEL = {EventKind.USER_TEXT: "user", EventKind.ASSISTANT_TEXT: "assistant"}
_NATURAL = {EventKind.USER_TEXT: Author.USER, EventKind.ASSISTANT_TEXT: Author.ASSISTANT}


def read(home: Home, args: Args) -> dict[str, Any]:
    ref = args.text("id", required=True, max_chars=400)
    assert ref is not None
    context = args.integer("context", default=1, low=0, high=20) or 0
    after = args.integer("after", default=None, low=0, high=2**53)
    page = args.integer(
        "max_chars", default=DEFAULT_PAGE_CHARS, low=MIN_PAGE_CHARS, high=MAX_RESULT_CHARS
    )
    tools = args.choice("tools", ("short", "full", "none"), default="short") or "short"
    memoir = home.memoir()
    sid, focus = _resolve(home, ref)
    info = service.find_session(memoir, sid)
    if info is None:  # removed between the two reads
        raise NotFound(f"no session {sid!r} in this Memoir home")
    range_: dict[str, Any]
    if focus is None:
        first, last = 1, service.last_event(memoir, sid)
        range_ = {"first": first, "last": last}
    else:
        window = exchanges_around(memoir.exchanges(sid), focus, context)
        if not window:  # removed between the two reads
            raise NotFound(f"no exchange {focus!r} in this Memoir home")
        first, last = window[0].first_ordinal, window[-1].last_ordinal
        range_ = {"first": first, "last": last, "exchange": focus}
        range_.update(_exchange_ids([x.id for x in window]))
    start = first - 1 if after is None else after
    if not first - 1 <= start <= last:
        raise ConfigError(
            f"after must be from {first - 1} to {last} for this range (events {first}-{last}); "
            f"got {start}"
        )
    ref = sid if focus is None else focus  # the note names the id in full, never a long ref
    out: dict[str, Any] = {
        "session": {
            "id": sid,
            **({"name": clip(info.name)} if info.name else {}),  # its client's name for it
            "project": clip(info.project),
            "harness": info.harness.value,
            "cwd": clip(info.cwd),
            "events": service.last_event(memoir, sid),
        },
        "range": range_,
        "events": [],
        "next_after": last,
        "note": _more(ref, last),
    }
    budget = (page or DEFAULT_PAGE_CHARS) - json_len(out)  # the envelope at its longest
    events, covered = _page(memoir, sid, start, last, budget, tools)
    out["events"] = events
    if covered < last:
        out["next_after"], out["note"] = covered, _more(ref, covered)
    else:
        out["next_after"] = None
        del out["note"]
    return out


def clip(text: str | None, cap: int = _FIELD_CHARS) -> str | None:
    """``text`` whole when it has at most ``cap`` characters, else its start and end around
    an ellipsis, ``cap`` characters in all (a path keeps its last folders)."""
    if text is None or len(text) <= cap:
        return text
    head = (cap - 1) * 2 // 3
    tail = cap - 1 - head
    return text[:head] + "…" + text[len(text) - tail :]


def _exchange_ids(ids: list[str]) -> dict[str, Any]:
    """``{"exchanges": ids}``, or the head of ``ids`` that fits and how many were dropped."""
    kept = list(ids)
    while kept and json_len(kept) > _EXCHANGE_LIST_CHARS:
        kept.pop()
    out: dict[str, Any] = {"exchanges": kept}
    if len(kept) < len(ids):
        out["exchanges_dropped"] = len(ids) - len(kept)
    return out


def _more(ref: str, after: int) -> str:
    return f"more follows: call read with id={ref!r} and after={after}"


def _resolve(home: Home, ref: str) -> tuple[str, str | None]:
    """The session ``ref`` names, and the exchange when it is an exchange id (``SESSION:N``,
    the session part may be a unique prefix; read as an exchange before the whole string
    is taken as a session id: :func:`memoir.mcp.reading.read_target`)."""
    memoir = home.memoir()
    return read_target(
        ref,
        resolve=lambda part: session_id(home, part),
        is_session=lambda sid: service.find_session(memoir, sid) is not None,
        is_exchange=lambda xid: service.has_exchange(memoir, xid),
        hint=" (exchange ids come from search hits)",
    )


def _page(
    memoir: Memoir, sid: str, start: int, last: int, budget: int, tools: str
) -> tuple[list[dict[str, Any]], int]:
    """The events after ``start`` (up to ``last``) that fit in ``budget`` characters, and the
    last event number they cover."""
    kept: list[dict[str, Any]] = []
    used = 0
    covered = start
    while covered < last:
        upto = min(last, covered + _CHUNK)
        chunk = memoir.events(sid, after=covered, upto=upto)
        if not chunk:  # no event numbers in this stretch
            covered = upto
            continue
        for event in chunk:
            shown = page_event(event, tools)
            if shown is None:  # passed over, but read
                covered = event.ordinal
                continue
            size = json_len(shown) + 1  # and its comma
            if used + size > budget:
                if kept:
                    return kept, covered
                kept.append(_fit(shown, budget))  # one event longer than the page
                return kept, event.ordinal
            kept.append(shown)
            used += size
            covered = event.ordinal
    return kept, covered


def page_event(event: Event, tools: str = "short") -> dict[str, Any] | None:
    """One event as a page shows it (None: left out)."""
    if event.kind in _HIDDEN or (tools == "none" and event.kind in _TOOLS):
        return None
    from memoir.secrets import mask  # detect-secrets loads on use

    text = spoken_text(event)
    out: dict[str, Any] = {"n": event.ordinal, "kind": _LABEL.get(event.kind, event.kind.value)}
    natural = _NATURAL.get(event.kind)
    if natural is not None and event.author is not natural:
        out["author"] = event.author.value  # a note in the user's place, not their words
    if event.kind is EventKind.USER_TEXT and event.author is Author.USER:
        out["exchange"] = f"{event.session_id}:{event.ordinal}"
    if event.timestamp is not None:
        out["at"] = event.timestamp.isoformat(timespec="seconds")
        if event.time_inferred:  # the source gave none: the nearest known time
            out["at_inferred"] = True
    if event.tool_name:
        out["tool"] = clip(event.tool_name)
    if event.kind in _TOOLS and "\x1b" in text:
        text = TERMINAL_ESCAPE.sub("", text)
    text = mask(text)  # before any cut: a cut never splits a secret
    if event.kind in _TOOLS and tools == "short":
        text, left_out = shorten(text, TOOL_TEXT_CHARS)
        if left_out:
            out["left_out"] = left_out
    out["text"] = text
    return out


def _fit(shown: dict[str, Any], budget: int) -> dict[str, Any]:
    """``shown`` with its text cut to its start and end so the whole event fits."""
    text = shown["text"]
    before = shown.get("left_out", 0)
    room = max(200, budget - json_len({**shown, "text": "", "left_out": 10**9}))
    while True:
        cut, left_out = shorten(text, room)
        fitted = {**shown, "text": cut, "left_out": before + left_out}
        if json_len(fitted) <= budget or room <= 200:
            return fitted
        room = room * 3 // 4  # text JSON escapes (quotes, newlines) took more room
