"""Deterministic stand-ins for messages too large to send or keep whole.

A message over the cap is replaced whole — never sliced: a byte-slice can land inside a
structured value and the model "completes" it by guessing. The stand-in names the tool,
gives the approximate size, says what is known of it (the call's arguments, its exit
status and error lines; a user message's length and first and last lines), says the work
happened and that the source should be re-read rather than reconstructed. It is derived
only from the message and its place in the history (no clock, no request id), so retries
send byte-identical requests and prefix caches stay valid::

    [content omitted from this summary request: read_file result, ~225006 tokens; of
     read_file path="big.log"; error: "OSError: disk full". It ran and produced output;
     re-read the source for its contents rather than reconstructing them.]

In the context the same stand-in also says where the full message is: ``re-read the
source (#4 of the full history)``.

A stand-in says what it stands for with these facts — never with a slice of the content
cut at a byte count (a severed value reads as data): whole lines, each a quotation; a
long line only when it is prose, cut between words and ending in "…" (:func:`excerpt`).
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from memoir.compaction.sequence import Message, content_text
from memoir.model.event import EXIT_STATUS, tool_outcome

__all__ = [
    "IN_CONTEXT",
    "IN_REQUEST",
    "KEY_ARGUMENTS",
    "CallOutcome",
    "StandIns",
    "brief_args",
    "call_args_of",
    "call_brief",
    "call_outcome",
    "calls_by_result",
    "clip_line",
    "describe",
    "excerpt",
    "is_stand_in",
    "long_message_said",
    "message_details",
    "one_line",
    "replaced",
    "run_outcome",
    "stand_in",
    "stood_in_run",
    "tool_names_by_call",
]

# arguments that say what a call touched, in the order they are named
KEY_ARGUMENTS = (
    "command",
    "cmd",
    "path",
    "file_path",
    "filepath",
    "filename",
    "file",
    "paths",
    "directory",
    "dir",
    "pattern",
    "query",
    "url",
    "target",
    "name",
)
_MAX_ARGS = 3
_ARG_CHARS = 120
_LINE_CHARS = 160
_ERROR_LINES = 2
_ERROR_CHARS = 300


def clip_line(text: str, limit: int = _LINE_CHARS, *, strip: str = ",;:") -> str:
    """``text`` on one line, at most ``limit`` characters, cut between words with "…" (the
    cut's trailing ``strip`` characters dropped)."""
    one = " ".join(text.split())
    if len(one) <= limit:
        return one
    cut = one[:limit].rsplit(" ", 1)[0] if " " in one[:limit] else one[:limit]
    return cut.rstrip(strip) + "…"


# what str.isalpha() or str.isspace() holds for among ASCII characters
_ASCII_LETTERS_SPACES = bytes(c for c in range(128) if chr(c).isalpha() or chr(c).isspace())


def _letters(text: str) -> int:
    """How many characters of ``text`` are letters or spaces (``isalpha``/``isspace``):
    counted in C for ASCII text (a long tool output is one); otherwise the spaces are what
    ``split`` drops (it splits on what ``isspace`` holds for), a word of letters only is
    counted whole, an ASCII one in C, and only the other words go char by char."""
    if text.isascii():
        return len(text) - len(text.encode().translate(None, _ASCII_LETTERS_SPACES))
    words = text.split()
    count = len(text) - sum(map(len, words))
    for word in words:
        if word.isalpha():
            count += len(word)
        elif word.isascii():
            count += len(word) - len(word.encode().translate(None, _ASCII_LETTERS_SPACES))
        else:
            count += sum(ch.isalpha() for ch in word)
    return count


def _prose(text: str) -> bool:
    return bool(text) and _letters(text) / len(text) >= 0.8 and len(text.split()) >= 3


def excerpt(line: str, limit: int = _LINE_CHARS) -> str:
    """A line as a stand-in may quote it: whole when short; a long line of prose cut
    between words ("…"); any other long line (data, code, a minified value — where a cut
    would read as a severed value) only described."""
    one = " ".join(line.split())
    if len(one) <= limit:
        return json.dumps(one, ensure_ascii=False)
    if _prose(one):
        return json.dumps(clip_line(one, limit), ensure_ascii=False)
    return f"a line of {len(one):,} characters"


def calls_by_result(messages: Sequence[Message]) -> dict[int, Mapping[str, Any]]:
    """Index of each tool result -> the call it answers, matched by occurrence (the
    assistant message just before its block), so a reused call id never borrows another
    call's arguments."""
    out: dict[int, Mapping[str, Any]] = {}
    open_calls: dict[str, Mapping[str, Any]] = {}
    for i, m in enumerate(messages):
        role = m.get("role")
        if role == "assistant":
            open_calls = {
                str(c["id"]): c
                for c in m.get("tool_calls") or []
                if isinstance(c, Mapping) and c.get("id")
            }
        elif role == "tool":
            call = open_calls.get(str(m.get("tool_call_id") or ""))
            if call is not None:
                out[i] = call
        else:
            open_calls = {}
    return out


def _call_name(call: Mapping[str, Any]) -> str:
    fn = call.get("function") or {}
    name = fn.get("name") if isinstance(fn, Mapping) else None
    return str(name or call.get("name") or "tool")


def _arguments(call: Mapping[str, Any]) -> Any:
    fn = call.get("function") or {}
    raw = fn.get("arguments") if isinstance(fn, Mapping) else None
    if raw is None:
        raw = call.get("arguments", call.get("input"))
    if isinstance(raw, str):
        try:
            return json.loads(raw)
        except ValueError:
            return raw
    return raw


def _scalar(value: Any) -> str | None:
    if isinstance(value, bool) or value is None:
        return None
    if isinstance(value, (str, int, float)):
        return clip_line(str(value), _ARG_CHARS)
    if isinstance(value, list) and value and all(isinstance(v, str) for v in value):
        return clip_line(" ".join(value), _ARG_CHARS)
    return None


def call_brief(call: Any) -> str:
    """``bash command="pytest -q"``: the tool and the arguments that name what it touched
    (a command, paths, a query), each clipped; the name alone when none is known."""
    if not isinstance(call, Mapping):
        return "tool"
    name = _call_name(call)
    args = _arguments(call)
    if isinstance(args, str):
        text = clip_line(args, _ARG_CHARS)
        return f"{name} {json.dumps(text, ensure_ascii=False)}" if text else name
    if not isinstance(args, Mapping):
        return name
    keys = [k for k in KEY_ARGUMENTS if k in args and _scalar(args[k]) is not None]
    if not keys:
        keys = [k for k in args if isinstance(k, str) and _scalar(args[k]) is not None][:2]
    parts = [f"{k}={json.dumps(_scalar(args[k]), ensure_ascii=False)}" for k in keys[:_MAX_ARGS]]
    return " ".join([name, *parts])


@dataclass(frozen=True, slots=True)
class CallOutcome:
    """How a tool run ended, as far as its output says: an exit status, error lines."""

    exit_status: str | None
    errors: tuple[str, ...]

    def describe(self) -> str:
        parts = []
        if self.exit_status is not None:
            parts.append(f"exit status {self.exit_status}")
        if self.errors:
            quoted = " / ".join(json.dumps(e, ensure_ascii=False) for e in self.errors)
            parts.append(f"error: {quoted}")
        return "; ".join(parts)


def call_outcome(text: str) -> CallOutcome:
    """The exit status (the last one stated) and the last error lines of an output, each
    whole (an error line cut would mislead: longer ones are left out)."""
    status, errors = tool_outcome(
        text,
        most=_ERROR_LINES,
        clean=lambda line: line if len(line) <= _ERROR_CHARS else None,
    )
    return CallOutcome(status, errors)


def _user_words(text: str) -> str:
    lines = [line for line in text.splitlines() if line.strip()]
    if not lines:
        return ""
    count = "1 line" if len(lines) == 1 else f"{len(lines):,} lines"
    described = f"{count}; it began: {excerpt(lines[0])}"
    if len(lines) > 1:
        described += f" and ended: {excerpt(lines[-1])}"
    return described


def message_details(message: Message, call: Mapping[str, Any] | None) -> str:
    """What a stand-in says of ``message`` beyond its kind and size (may be empty): for a
    tool result the call and how it ended, for a tool call the calls made, for a user or
    assistant message its length in lines and its first and last lines."""
    role = message.get("role")
    text = content_text(message)
    if role == "tool":
        brief = call_brief(call) if call is not None else ""
        parts = [f"of {brief}"] if " " in brief else []  # the tool alone is said already
        outcome = call_outcome(text)
        if outcome.errors:
            parts.append(outcome.describe())
        else:  # no error line: how the output ended (often its own summary line)
            last = next((x for x in reversed(text.splitlines()) if x.strip()), "")
            if outcome.exit_status is not None:
                parts.append(f"exit status {outcome.exit_status}")
            if last and not EXIT_STATUS.search(last) and len(last.strip()) <= _LINE_CHARS:
                parts.append(f"last line: {excerpt(last)}")
        return "; ".join(parts)
    calls = message.get("tool_calls") or []
    if role == "assistant" and calls:
        briefs = [call_brief(c) for c in calls[:4]]
        more = f" and {len(calls) - 4} more" if len(calls) > 4 else ""
        return "calls: " + ", ".join(briefs) + more
    return _user_words(text)


Place = Literal["this summary request", "the context"]
IN_REQUEST: Place = "this summary request"
IN_CONTEXT: Place = "the context"


def tool_names_by_call(messages: Sequence[Message]) -> dict[int, str]:
    """Index of each tool result -> the name of the call it answers, matched by
    occurrence (the assistant message just before its block), so a call id reused later
    in the history never borrows another call's name."""
    return {i: _name_of(c) for i, c in calls_by_result(messages).items()}


def _call_names(message: Message) -> list[str]:
    out = []
    for call in message.get("tool_calls") or []:
        fn = call.get("function") or {} if isinstance(call, Mapping) else {}
        out.append(str(fn.get("name") or "tool"))
    return out


def describe(message: Message, tool_name: str | None = None) -> str:
    """What the message was, in a few words: ``read_file result``, ``user message``…"""
    role = message.get("role")
    if role == "tool":
        name = tool_name or message.get("name") or "tool"
        return f"{name} result"
    if role == "assistant":
        names = _call_names(message)
        if names:
            return " and ".join(dict.fromkeys(n + " call" for n in names))
        return "assistant message"
    return f"{role} message"


def stand_in(
    message: Message,
    tokens: int,
    *,
    tool_name: str | None,
    where: Place,
    details: str = "",
    position: int | None = None,
) -> str:
    """The text that replaces ``message`` whole; a pure function of its arguments.

    ``details`` (:func:`memoir.compaction.standin.message_details`) says what is known
    of it — the call and its outcome, a user message's first and last lines — and
    ``position`` where the full message is (its place in the caller's history)."""
    what = describe(message, tool_name)
    role = message.get("role")
    if role == "tool":
        did = "It ran and produced output"
    elif role == "assistant":
        did = "It was written and sent" if not message.get("tool_calls") else "It was made"
    else:
        did = "The user sent it"
    said = f"; {details}" if details else ""
    source = "the source" if position is None else f"the source (#{position} of the full history)"
    return (
        f"[content omitted from {where}: {what}, ~{tokens} tokens{said}. {did}; re-read "
        f"{source} for its contents rather than reconstructing them.]"
    )


def replaced(
    message: Message,
    tokens: int,
    *,
    tool_name: str | None,
    details: str = "",
    position: int | None = None,
) -> dict[str, Any]:
    """A copy of ``message`` for the context, its bulk replaced by the stand-in. Ids, roles
    and tool-call names stay (tool pairing untouched); tool-call arguments become a small
    JSON object holding the stand-in (providers expect JSON there)."""
    text = stand_in(
        message, tokens, tool_name=tool_name, where=IN_CONTEXT, details=details, position=position
    )
    out = dict(message)
    calls = message.get("tool_calls")
    if calls:
        new_calls = []
        for call in calls:
            c = dict(call)
            fn = dict(c.get("function") or {})
            fn["arguments"] = json.dumps({"omitted": text}, ensure_ascii=False)
            c["function"] = fn
            new_calls.append(c)
        out["tool_calls"] = new_calls
        out["content"] = None if message.get("content") in (None, "") else text
    else:
        out["content"] = text
    return out


class StandIns:
    """The stand-ins of one history, built once per message: what the summary request
    shows in a message's place, and the copy the context keeps instead of it."""

    def __init__(
        self,
        messages: Sequence[Message],
        positions: Sequence[int],
        sizes: Sequence[int],
    ) -> None:
        self.messages = messages
        self.positions = positions
        self.sizes = sizes  # content tokens (without the message framing)
        self._calls: dict[int, Mapping[str, Any]] | None = None  # read on first need
        self._names: dict[int, str] | None = None
        self._details: dict[int, str] = {}
        self._context: dict[int, dict[str, Any]] = {}

    @property
    def calls(self) -> dict[int, Mapping[str, Any]]:
        """Index of each tool result -> the call it answers."""
        if self._calls is None:
            self._calls = calls_by_result(self.messages)
        return self._calls

    @property
    def tool_names(self) -> dict[int, str]:
        if self._names is None:
            self._names = {i: _name_of(c) for i, c in self.calls.items()}
        return self._names

    def details(self, i: int) -> str:
        if i not in self._details:
            self._details[i] = message_details(self.messages[i], self.calls.get(i))
        return self._details[i]

    def request_text(self, i: int) -> str:
        m, name, said = self.messages[i], self.tool_names.get(i), self.details(i)
        return stand_in(m, self.sizes[i], tool_name=name, where=IN_REQUEST, details=said)

    def context(self, i: int) -> dict[str, Any]:
        hit = self._context.get(i)
        if hit is None:
            hit = replaced(
                self.messages[i],
                self.sizes[i],
                tool_name=self.tool_names.get(i),
                details=self.details(i),
                position=self.positions[i],
            )
            self._context[i] = hit
        return hit


def _name_of(call: Mapping[str, Any]) -> str:
    fn = call.get("function") or {}
    name = fn.get("name") if isinstance(fn, Mapping) else None
    return str(name or call.get("name") or "tool")


# reading a stand-in back: the offline strategy reads the requests these are written into --
_STAND_IN = re.compile(r"^\[content omitted from [^:\]]*: ")
_QUOTED = re.compile(r'"((?:[^"\\]|\\.)*)"')
_STAND_ERROR = re.compile(r'; error: ((?:"(?:[^"\\]|\\.)*"(?: / )?)+)')
_STAND_USER = re.compile(r"; ([\d,]+ lines; it began: .*?)\. The user sent it")
_READ_CHARS = 160


def is_stand_in(text: str) -> bool:
    """Whether ``text`` opens with a stand-in (``[content omitted from …: ``)."""
    return bool(_STAND_IN.match(text))


def stood_in_run(stand: str) -> tuple[int | None, str | None, tuple[str, ...]]:
    """What a tool result's stand-in says of its run: the tokens left out, the exit status
    and the error lines it quotes."""
    size = re.search(r", ~(\d+) tokens", stand)
    exit_status = re.search(r"; exit status (-?\d+)", stand)
    said = _STAND_ERROR.search(stand)
    return (
        int(size.group(1)) if size else None,
        exit_status.group(1) if exit_status else None,
        _quoted(said.group(1)) if said else (),
    )


def long_message_said(line: str) -> str | None:
    """What a long user message's stand-in says of it (``N lines; it began: …``)."""
    said = _STAND_USER.search(line)
    return said.group(1) if said else None


def run_outcome(body: str) -> tuple[str | None, tuple[str, ...]]:
    """The exit status and error lines of a tool result's text, stand-ins left out."""

    def clean(line: str) -> str | None:
        line = line.removeprefix("> ")
        return None if _STAND_IN.match(line) else line

    return tool_outcome(body, clean=clean, show=one_line)


def one_line(text: str, limit: int = _READ_CHARS) -> str:
    """:func:`clip_line` keeping the cut's punctuation."""
    return clip_line(text, limit, strip="")


def call_args_of(raw: str) -> dict[str, object]:
    """The arguments of a rendered call (``→ name({json})``), {} when they are no object."""
    try:
        value = json.loads(raw)
    except ValueError:
        return {}
    return value if isinstance(value, dict) else {}


def brief_args(brief: str) -> dict[str, str]:
    """The arguments a :func:`call_brief` names: ``bash command="pytest -q" path="x"`` ->
    {"command": "pytest -q", "path": "x"}."""
    out: dict[str, str] = {}
    for m in re.finditer(r'(\w+)=("(?:[^"\\]|\\.)*")', brief):
        try:
            out[m.group(1)] = str(json.loads(m.group(2)))
        except ValueError:
            continue
    return out


def _quoted(text: str) -> tuple[str, ...]:
    out = []
    for m in _QUOTED.finditer(text):
        try:
            out.append(str(json.loads(f'"{m.group(1)}"')))
        except ValueError:
            out.append(m.group(1))
    return tuple(out)
