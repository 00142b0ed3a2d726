"""Reading an agent's transcript for the summary of the work (see :mod:`.offline`).

A compaction request renders the history as entries (``[user]``, ``[assistant]`` with
``→ name(arguments)`` lines for its tool calls, ``[tool result: bash command="…"]``) and
stands in for what it leaves out with ``[content omitted …]`` lines that say what is
known (the call, ``exit status N``, ``error: "…"``, a user message's first and last
lines), or one ``[N messages omitted here: …; calls: …]`` line per run of them. This
module turns that into facts — the user's sentences, the assistant's, the calls with
their outcomes, the paths touched — and never reads the stand-ins' own wording as what
was said. Pure and deterministic.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field

from memoir.llm.transcript import Sentence, Turn, parse_turns, sentences_of
from memoir.model.event import tool_outcome

__all__ = ["Run", "Work", "read_work"]

_CALL_LINE = re.compile(r"^→ (?P<name>[\w.:/-]{1,80})\((?P<args>.*)\)\s*$")
_STAND_IN = re.compile(r"^\[content omitted from [^:\]]*: ")
_COLLAPSED = re.compile(r"^\[(?P<n>\d+) messages omitted here: (?P<what>[^\]]*)\]\s*$")
_QUOTED = re.compile(r'"((?:[^"\\]|\\.)*)"')
_STAND_ERROR = re.compile(r'; error: ((?:"(?:[^"\\]|\\.)*"(?: / )?)+)')
_STAND_USER = re.compile(r"; ([\d,]+ lines; it began: .*?)\. The user sent it")
_PATH = re.compile(
    r"(?<![\w@/.-])(?:\.{0,2}/)?(?:[\w.-]+/)+[\w.-]*\w\.\w{1,8}\b"
    r"|(?<![\w/.-])[\w-]+\.(?:py|js|ts|tsx|jsx|go|rs|rb|java|kt|c|h|cpp|hpp|cs|md|toml|yaml"
    r"|yml|json|sql|sh|cfg|ini|txt|lock|html|css)\b"
)
_PATH_KEYS = ("path", "file_path", "filepath", "filename", "file", "paths", "target")
_COMMAND_KEYS = ("command", "cmd", "script")
_EDITING = re.compile(r"edit|write|create|patch|apply|replace|insert|update|save|rename|delete")
_ARG_CHARS = 160


@dataclass
class Run:
    """One tool call with what came back: ``ok`` unless an exit status other than 0 or an
    error line was seen (``errors``)."""

    tool: str
    brief: str  # "bash command=\"pytest -q\""
    command: str | None  # the shell command, when the call ran one
    exit_status: str | None = None
    errors: tuple[str, ...] = ()
    omitted_tokens: int | None = None  # the output was left out of the request
    turn: int = 0

    @property
    def failed(self) -> bool:
        return bool(self.errors) or self.exit_status not in (None, "0")

    @property
    def key(self) -> str:
        return self.command or self.brief


@dataclass
class Work:
    turns: list[Turn]
    user: list[Sentence]
    assistant: list[Sentence]
    runs: list[Run] = field(default_factory=list)
    paths: dict[str, bool] = field(default_factory=dict)  # path -> edited
    long_user: list[tuple[int, str]] = field(default_factory=list)  # (turn, what it was)


def _one_line(text: str, limit: int = _ARG_CHARS) -> str:
    one = " ".join(text.split())
    if len(one) <= limit:
        return one
    cut = one[:limit].rsplit(" ", 1)[0] if " " in one[:limit] else one[:limit]
    return cut + "…"


def _args_of(raw: str) -> dict[str, object]:
    try:
        value = json.loads(raw)
    except ValueError:
        return {}
    return value if isinstance(value, dict) else {}


def _brief_args(brief: str) -> dict[str, str]:
    """``bash command="pytest -q" path="x"`` -> {"command": "pytest -q", "path": "x"}."""
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


def _outcome(body: str) -> tuple[str | None, tuple[str, ...]]:
    def clean(line: str) -> str | None:
        line = line.removeprefix("> ")
        return None if _STAND_IN.match(line) else line

    return tool_outcome(body, clean=clean, show=_one_line)


class _Reader:
    def __init__(self, work: Work) -> None:
        self.work = work

    def touch(self, path: str, edited: bool) -> None:
        path = path.strip().strip("'\"`,;:()")
        if not path or len(path) > 200 or " " in path or not _PATH.fullmatch(path):
            return  # a folder ("src"), a glob or a sentence is no file touched
        self.work.paths[path] = self.work.paths.get(path, False) or edited

    def paths_in(self, text: str, edited: bool = False) -> None:
        for m in _PATH.finditer(text):
            self.touch(m.group(0), edited)

    def call_args(self, name: str, args: dict[str, object]) -> None:
        editing = bool(_EDITING.search(name.lower()))
        for key in _PATH_KEYS:
            value = args.get(key)
            values = value if isinstance(value, list) else [value]
            for v in values:
                if isinstance(v, str):
                    self.touch(v, editing)
        for key in _COMMAND_KEYS:
            value = args.get(key)
            if isinstance(value, str):
                self.paths_in(value)

    def assistant_turn(self, turn: Turn) -> None:
        for line in turn.text.splitlines():
            m = _CALL_LINE.match(line.strip())
            if m:
                self.call_args(m.group("name"), _args_of(m.group("args")))
            elif not line.startswith("["):
                self.paths_in(line)
            self.collapsed(line, turn.index)

    def tool_turn(self, turn: Turn) -> None:
        head, _, body = turn.text.partition("\n")
        brief = head[:-1] if head.endswith("]") else head
        tool = brief.split(" ", 1)[0] or "tool"
        args = _brief_args(brief)
        command = next((args[k] for k in _COMMAND_KEYS if k in args), None)
        run = Run(tool, _one_line(brief), command, turn=turn.index)
        self.call_args(tool, dict(args))
        stand = body.strip()
        if _STAND_IN.match(stand):
            size = re.search(r", ~(\d+) tokens", stand)
            run.omitted_tokens = int(size.group(1)) if size else None
            exit_status = re.search(r"; exit status (-?\d+)", stand)
            run.exit_status = exit_status.group(1) if exit_status else None
            said = _STAND_ERROR.search(stand)
            run.errors = _quoted(said.group(1)) if said else ()
        else:
            run.exit_status, run.errors = _outcome(body)
            for line in body.splitlines():
                self.collapsed(line, turn.index)
        self.work.runs.append(run)

    def user_turn(self, turn: Turn) -> None:
        for line in turn.text.splitlines():
            if _STAND_IN.match(line.strip()):
                said = _STAND_USER.search(line)
                if said:
                    self.work.long_user.append((turn.index, said.group(1)))
            else:
                self.paths_in(line)
            self.collapsed(line, turn.index)

    def collapsed(self, line: str, turn: int) -> None:
        m = _COLLAPSED.match(line.strip())
        if not m or "; calls: " not in m.group("what"):
            return
        calls = m.group("what").split("; calls: ", 1)[1]
        for brief in re.split(r", (?=[\w.:/-]+(?: |$))", calls.split(" and ")[0]):
            args = _brief_args(brief)
            tool = brief.split(" ", 1)[0]
            command = next((args[k] for k in _COMMAND_KEYS if k in args), None)
            self.work.runs.append(Run(tool, _one_line(brief), command, turn=turn))
            self.call_args(tool, dict(args))


def read_work(transcript: str) -> Work:
    """The facts of an agent's transcript (see the module docstring)."""
    turns = parse_turns(transcript)
    # the call lines of an assistant turn are calls, not what it said
    spoken = [
        Turn(t.role, "\n".join(x for x in t.text.splitlines() if not x.startswith("→ ")), t.index)
        if t.role == "assistant"
        else t
        for t in turns
    ]
    prose = sentences_of(spoken, roles=("user", "assistant"))
    work = Work(
        turns,
        [s for s in prose if s.role == "user"],
        [s for s in prose if s.role == "assistant"],
    )
    reader = _Reader(work)
    for turn in turns:
        if turn.role == "tool":
            reader.tool_turn(turn)
        elif turn.role == "assistant":
            reader.assistant_turn(turn)
        elif turn.role == "user":
            reader.user_turn(turn)
    return work
