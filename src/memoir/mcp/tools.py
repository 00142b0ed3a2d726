"""The tools the MCP server lists, the arguments a call brings, and how big an answer may be.
Pure values and helpers (no SDK import).

Bounds. Every tool result is one JSON text of at most :data:`MAX_RESULT_CHARS` characters
(about 5,000 tokens of English): a result must never flood the agent's context, whatever
the archive holds. A long text is shortened to its start and its end (an error is usually
the last line of a log), saying how much was left out; a list that does not fit loses its
tail and says how many entries it dropped.

Arguments (:class:`Args`). Clients send whatever JSON a model wrote: a number as a string,
a negative limit, a 100 KB query, an argument the tool does not take. Each reader checks
one argument and raises :class:`memoir.errors.ConfigError` with a sentence a model can act
on (the server returns it as a tool error, and the next call is served as usual).

Tools (:data:`TOOLS`): names, descriptions written for a model, input schemas. The server
turns each :class:`ToolSpec` into the SDK's tool type, and the tests read them as they are.
A description says when to use the tool, what it returns and its limits; the schemas
describe the arguments for the model, and :class:`Args` checks them again whatever a
client sends.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from memoir.errors import ConfigError

__all__ = [
    "DEFAULT_PAGE_CHARS",
    "HIT_SUMMARY_CHARS",
    "INSTRUCTIONS",
    "KINDS",
    "MAX_QUERY_CHARS",
    "MAX_RESULT_CHARS",
    "MIN_PAGE_CHARS",
    "TOOLS",
    "TOOL_TEXT_CHARS",
    "Args",
    "ToolSpec",
    "fit_items",
    "json_len",
    "shorten",
    "spec",
    "to_text",
]

MAX_RESULT_CHARS = 20_000  # the whole JSON text of any tool result
MAX_QUERY_CHARS = 2_000  # a search or recall query; past it the call is refused
DEFAULT_PAGE_CHARS = 12_000  # one `read` page unless the call asks for another size
MIN_PAGE_CHARS = 2_000
TOOL_TEXT_CHARS = 800  # a tool call or result in a `read` page, unless tools="full"
HIT_SUMMARY_CHARS = 400  # the session summary beside each search hit (`summary` has it all)


def to_text(payload: Any) -> str:
    """The JSON text a tool returns: compact, non-ASCII kept as itself."""
    return json.dumps(payload, ensure_ascii=False, separators=(",", ":"), default=str)


def json_len(value: Any) -> int:
    """Characters ``value`` takes in a result's JSON text."""
    return len(to_text(value))


def shorten(text: str, cap: int) -> tuple[str, int]:
    """``text`` whole when it has at most ``cap`` characters, else its first two thirds and
    last third of ``cap`` around a line saying how many characters were left out; returns
    the text and that count (0: whole). The marker is counted inside ``cap``."""
    if len(text) <= cap:
        return text, 0
    marker = "\n… [{:,} characters left out] …\n"
    room = max(0, cap - len(marker.format(len(text))))
    head = room * 2 // 3
    tail = room - head
    left_out = len(text) - head - tail
    end = text[len(text) - tail :] if tail else ""
    return text[:head] + marker.format(left_out) + end, left_out


def fit_items(
    build: Callable[[list[Any], int], dict[str, Any]],
    items: Sequence[Any],
    cap: int = MAX_RESULT_CHARS,
) -> dict[str, Any]:
    """The payload ``build(kept, dropped)`` makes from the longest head of ``items`` whose
    JSON text fits in ``cap`` characters. ``build`` must say ``dropped`` in the payload (a
    model has to know a list was cut). Binary search over the head's length: a payload
    grows with each item kept."""
    whole = build(list(items), 0)
    if json_len(whole) <= cap:
        return whole
    low, high = 0, len(items)  # build(items[:low]) fits; build(items[:high]) does not
    while high - low > 1:
        mid = (low + high) // 2
        if json_len(build(list(items[:mid]), len(items) - mid)) <= cap:
            low = mid
        else:
            high = mid
    return build(list(items[:low]), len(items) - low)


# ASCII digits only: str.isdigit() also takes "²" and "①", which int() refuses
_WHOLE = re.compile(r"-?[0-9]+")


class Args:
    """The arguments of one call of ``tool``; every reader names the argument it reads."""

    def __init__(self, tool: str, raw: Mapping[str, Any] | None, known: Iterable[str]) -> None:
        self.tool = tool
        self.raw: Mapping[str, Any] = raw or {}
        if not isinstance(self.raw, Mapping):
            raise ConfigError(f"{tool}: the arguments must be a JSON object")
        allowed = list(known)
        unknown = sorted(k for k in self.raw if k not in allowed)
        if unknown:
            takes = ", ".join(allowed) if allowed else "no arguments"
            raise ConfigError(
                f"{tool} does not take {', '.join(repr(u) for u in unknown)}; it takes: {takes}"
            )

    def _get(self, name: str) -> Any:
        value = self.raw.get(name)
        return None if value is None else value

    def text(
        self,
        name: str,
        *,
        required: bool = False,
        max_chars: int = 500,
        strip: bool = True,
        blank: str | None = None,
    ) -> str | None:
        """A string argument (None when left out). A blank one is refused when ``required``
        or when ``blank`` says what to give instead (a filter: an empty one dropped would
        widen the call to everything); otherwise it reads as left out."""
        value = self._get(name)
        if value is None or (isinstance(value, str) and not value.strip()):
            if required:
                raise ConfigError(f"{self.tool} needs {name!r} (a non-empty string)")
            if blank is not None and value is not None:
                raise ConfigError(f"{name} is empty: {blank}, or leave {name} out")
            return None
        if not isinstance(value, str):
            raise ConfigError(f"{name} must be a string, not {_kind(value)}")
        if len(value) > max_chars:
            raise ConfigError(
                f"{name} is {len(value):,} characters long; {self.tool} takes at most "
                f"{max_chars:,} — shorten it to the words that matter"
            )
        return value.strip() if strip else value

    def integer(self, name: str, *, default: int | None, low: int, high: int) -> int | None:
        value = self._get(name)
        if value is None:
            return default
        if isinstance(value, str) and _WHOLE.fullmatch(value.strip()):
            value = int(value.strip())
        if isinstance(value, float) and value.is_integer():
            value = int(value)
        if isinstance(value, bool) or not isinstance(value, int):
            raise ConfigError(f"{name} must be a whole number, not {_kind(value)}")
        if not low <= value <= high:
            raise ConfigError(f"{name} must be from {low:,} to {high:,}; got {value:,}")
        return value

    def flag(self, name: str, *, default: bool) -> bool:
        value = self._get(name)
        if value is None:
            return default
        if isinstance(value, str) and value.strip().lower() in ("true", "false"):
            return value.strip().lower() == "true"
        if not isinstance(value, bool):
            raise ConfigError(f"{name} must be true or false, not {_kind(value)}")
        return value

    def choice(
        self, name: str, options: Iterable[str], *, default: str | None, blank_ok: bool = True
    ) -> str | None:
        """One of ``options`` (``default`` when left out; a blank string too, unless
        ``blank_ok`` is false: a filter given as "" is refused, as the CLI refuses it)."""
        raw = self._get(name)
        value = self.text(name, max_chars=100)
        allowed = list(options)
        if value is None and raw is not None and not blank_ok:
            raise ConfigError(f"{name} must be one of {', '.join(allowed)}; got {raw!r}")
        if value is None:
            return default
        if value not in allowed:
            raise ConfigError(f"{name} must be one of {', '.join(allowed)}; got {value!r}")
        return value

    def words(self, name: str, *, max_items: int = 16, max_chars: int = 100) -> list[str]:
        """A list of short strings (one string is taken as a list of one)."""
        value = self._get(name)
        if value is None:
            return []
        if isinstance(value, str):
            value = [value]
        if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
            raise ConfigError(f"{name} must be a list of strings, not {_kind(value)}")
        if len(value) > max_items:
            raise ConfigError(f"{name} takes at most {max_items} entries; got {len(value)}")
        long = next((v for v in value if len(v) > max_chars), None)
        if long is not None:
            raise ConfigError(f"each {name} entry is at most {max_chars} characters")
        return [v.strip() for v in value if v.strip()]


def _kind(value: Any) -> str:
    """A short description of a wrong value for an error sentence (never the whole of a
    100 KB string)."""
    shown = repr(value)
    shown = shown if len(shown) <= 40 else shown[:37] + "…"
    return f"{type(value).__name__} {shown}"


KINDS = ("fact", "preference", "decision", "plan", "constraint")
_BOUND = f"The result is one JSON text of at most {MAX_RESULT_CHARS:,} characters."

INSTRUCTIONS = (
    "Memoir is the archive of this user's past conversations with coding agents (Claude "
    "Code, Codex, other chats), with summaries and long-term memories of what the user "
    "said. Use `search` when the user refers to earlier work or before redoing something "
    "that may have been solved already; `read` to see a hit in context (paged); `summary` "
    "for what a session was about; `memories` for the user's stated preferences and "
    "decisions; `remember` when the user asks you to keep something; `forget` when they "
    "ask you to drop a memory."
)


@dataclass(frozen=True, slots=True)
class ToolSpec:
    name: str
    title: str
    description: str
    properties: dict[str, Any]
    required: tuple[str, ...] = ()
    read_only: bool = True
    destructive: bool = False
    idempotent: bool = True

    @property
    def arguments(self) -> tuple[str, ...]:
        return tuple(self.properties)

    def input_schema(self) -> dict[str, Any]:
        schema: dict[str, Any] = {
            "type": "object",
            "properties": self.properties,
            "additionalProperties": False,
        }
        if self.required:
            schema["required"] = list(self.required)
        return schema


def _string(description: str, **more: Any) -> dict[str, Any]:
    return {"type": "string", "description": description, **more}


def _integer(description: str, low: int, high: int, default: int | None = None) -> dict[str, Any]:
    out: dict[str, Any] = {
        "type": "integer",
        "description": description,
        "minimum": low,
        "maximum": high,
    }
    if default is not None:
        out["default"] = default
    return out


_SESSION_REF = "A session id, or a unique prefix of one (as search hits give)."

SEARCH = ToolSpec(
    name="search",
    title="Search past conversations",
    description=(
        "Search the user's past conversations with coding agents by words and, when "
        "embeddings are installed, by meaning. Use it when the user refers to earlier work "
        "('like we did last week', 'that flaky test'), asks what was decided, or before "
        "solving something that may have been solved in an earlier session. Returns hits, "
        "best first: session_id, exchange_id (SESSION:N — pass it to `read` for the whole "
        "exchange in context), timestamp, project, a snippet of the matching text, and the "
        "start of that session's summary (`summary` gives all of it). Query language: "
        'words (all must match, else any), "a phrase", a OR b, -word to exclude, word* '
        f"for a prefix. Limits: query at most {MAX_QUERY_CHARS:,} characters; limit 1-50 "
        f"(default 10). {_BOUND} Hits that do not fit are dropped and counted in `dropped`."
    ),
    properties={
        "query": _string("What to look for.", maxLength=MAX_QUERY_CHARS),
        "mode": _string(
            "text (words only), vector (meaning only) or hybrid (both; the default when "
            "embeddings are installed).",
            enum=["text", "vector", "hybrid"],
        ),
        "limit": _integer("Most hits to return.", 1, 50, 10),
        "project": _string("Only this project (named after its folder, e.g. -home-ann-app)."),
        "session": _string("Only this session. " + _SESSION_REF),
        "harness": _string(
            "Only sessions of this agent.",
            enum=[
                "claude-code",
                "codex",
                "gemini-cli",
                "opencode",
                "aider",
                "generic",
                "api",
            ],
        ),
        "role": _string(
            "Where the words must match: user, assistant or tool.",
            enum=["user", "assistant", "tool"],
        ),
        "after": _string("On or after this ISO date or datetime (UTC when no zone)."),
        "before": _string("On or before this ISO date or datetime (a date includes its day)."),
        "include_subagents": {
            "type": "boolean",
            "description": "Also search subagent sessions.",
            "default": False,
        },
    },
    required=("query",),
)

READ = ToolSpec(
    name="read",
    title="Read a stored conversation",
    description=(
        "Read a stored conversation as it was said: a whole session from its start, or an "
        "exchange id from `search` (SESSION:N) with `context` exchanges on each side. Use it "
        "after `search` to see a hit in context, or to read a session the user names. "
        "Returns the session (id, project, harness, cwd), the range read, and events in "
        "order: n (event number), kind, time, text; an exchange's opening user message "
        "carries its exchange id. Thinking and meta events are left out; tool calls and "
        f"results are cut to {TOOL_TEXT_CHARS} characters unless tools='full' ('none' "
        "leaves them out). Paging: when `next_after` is not null there is more — call read "
        "again with the same id and after=next_after. Limits: a page holds at most "
        f"max_chars characters ({MIN_PAGE_CHARS:,}-{MAX_RESULT_CHARS:,}, default "
        f"{DEFAULT_PAGE_CHARS:,}); an event longer than the page is cut to its start and "
        "end, saying how many characters were left out. "
        f"{_BOUND}"
    ),
    properties={
        "id": _string("A session id (or a unique prefix), or an exchange id SESSION:N."),
        "context": _integer("With an exchange id: exchanges shown on each side.", 0, 20, 1),
        "after": _integer(
            "Start after this event number: the `next_after` of the previous page.",
            0,
            2**53,
        ),
        "max_chars": _integer(
            "Size of the page in characters.",
            MIN_PAGE_CHARS,
            MAX_RESULT_CHARS,
            DEFAULT_PAGE_CHARS,
        ),
        "tools": _string(
            "How tool calls and results are shown: short (the default), full or none.",
            enum=["short", "full", "none"],
        ),
    },
    required=("id",),
)

SUMMARY = ToolSpec(
    name="summary",
    title="A session's summary",
    description=(
        "The stored summary of one session and how much of the conversation it covers. Use "
        "it to learn what a session (a search hit's session_id) was about before reading it "
        "in full. Returns summary (null when none has been written yet), state (real, "
        "missing, empty, errored or legacy), updated_at, model, and coverage: covered and "
        "current in `unit` (bytes of the archived transcript, or events) and complete "
        "(false: the conversation went on after the summary was written; `read` the rest). "
        f"A summary longer than the bound is cut to its start and end. {_BOUND}"
    ),
    properties={"session": _string(_SESSION_REF)},
    required=("session",),
)

REMEMBER = ToolSpec(
    name="remember",
    title="Remember what the user said",
    description=(
        "Save what the user said that stays true - facts, preferences, decisions, plans, "
        "constraints - as long-term memory items, each with the user's exact words as its "
        "evidence. Use it when the user asks you to remember something, or states a lasting "
        "preference or decision ('from now on…', 'we decided…'). Only the user's own "
        "messages since the last extraction are read (never your replies or tool output); "
        "secrets are never saved; private sessions are refused. It runs now and returns "
        "outcome, reason, and the items saved with their quotes. session: the "
        "conversation to read; omit it for the current one (the transcripts are synced "
        "first, then the most recently active conversation started in this working "
        "directory is taken). turn: the user message to remember from (its event number; "
        f"default the latest). {_BOUND}"
    ),
    properties={
        "session": _string("The conversation to remember from (omit: the current one)."),
        "turn": _integer("The user message to remember from (its event number).", 1, 2**53),
    },
    read_only=False,
)

MEMORIES = ToolSpec(
    name="memories",
    title="Recall long-term memories",
    description=(
        "Recall long-term memory items: what the user said they prefer, decided, plan or "
        "must keep to, each with the quotes it came from and the exchange that holds them "
        "(pass it to `read`). Use it when starting a task in a project, or when a choice "
        "may already be settled ('which test runner?', 'how do we name branches?'). With "
        "query: the items holding the most of its words first; with keys: items tagged with "
        "any of those keys; with neither: the newest items. Filters: project, session, kind "
        f"({', '.join(KINDS)}). Limit 1-100 (default 20). {_BOUND} Items that do not fit "
        "are dropped and counted in `dropped`."
    ),
    properties={
        "query": _string("Words the items must hold.", maxLength=MAX_QUERY_CHARS),
        "keys": {
            "type": "array",
            "items": {"type": "string"},
            "maxItems": 16,
            "description": "Keys the items are tagged with (any of them).",
        },
        "project": _string("Only items from this project."),
        "session": _string("Only items from this session. " + _SESSION_REF),
        "kind": _string("Only items of this kind.", enum=list(KINDS)),
        "limit": _integer("Most items to return.", 1, 100, 20),
    },
)

FORGET = ToolSpec(
    name="forget",
    title="Forget a memory item",
    description=(
        "Delete one long-term memory item and its quotes (the conversation itself stays in "
        "the archive). Use it only when the user asks you to forget something or says an "
        "item is wrong. id: the item's id from `memories` (a unique prefix of 4 or more "
        "characters will do). Returns the forgotten item's id and content."
    ),
    properties={"id": _string("The memory item's id (or a unique prefix of 4+ characters).")},
    required=("id",),
    read_only=False,
    destructive=True,
)

TOOLS: tuple[ToolSpec, ...] = (SEARCH, READ, SUMMARY, REMEMBER, MEMORIES, FORGET)


def spec(name: str) -> ToolSpec | None:
    return next((t for t in TOOLS if t.name == name), None)
