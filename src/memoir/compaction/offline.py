"""The compaction engine's offline strategy: the summary of an agent's work.

:class:`CompactionTask` is what a compaction request carries beside its prompt
(``ModelRequest.task``): the transcript of the covered messages as the request renders
them (stand-ins included) and the previous checkpoint's summary. The offline model
answers it with :func:`work_summary`, or the prose summary
(:func:`memoir.llm.offline_prose.prose_summary`) when the transcript shows no work.
Lines, each under a heading of :data:`memoir.compaction.request.WORK_SUMMARY_FORMAT`::

    Goals and constraints:
    - <the user's sentences: the first request, every constraint or preference, the latest>
    Decisions:
    - <sentences deciding something, with their reasons>
    Files touched: <paths edited, then paths read>.
    Commands run:
    - `<command>` → <outcome: ok, or exit status and error line> (× runs)
    Open errors:
    - `<command>`: <its last error line>
    Key facts:
    - <the transcript's most central other sentences>
    Last state: <the latest user request and where the assistant was>.

Items are taken by importance while the text fits ``max_tokens`` (the user's words and
the last state first, then open errors and decisions, edited files, failed commands,
then the rest) and shown in conversation order. A previous summary in this format is
merged item by item, so a rolling compaction keeps what earlier rounds kept; a previous
summary in another form is carried as key facts. The stand-ins' own wording never
becomes an item: only what they say of the work (:mod:`memoir.compaction.standin` reads
them back).

Reading an agent's transcript for the summary of the work (:func:`read_work`).

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

import re
from collections.abc import Callable
from dataclasses import dataclass, field, replace

from memoir.compaction.standin import (
    brief_args,
    call_args_of,
    is_stand_in,
    long_message_said,
    one_line,
    run_outcome,
    stood_in_run,
)
from memoir.llm.offline_prose import is_filler, prose_summary
from memoir.llm.offline_summary import finish, said_before
from memoir.llm.transcript import (
    Sentence,
    Turn,
    clip_words,
    content_words,
    cue,
    parse_turns,
    rank_sentences,
    sentences_of,
    split_sentences,
)

__all__ = [
    "SECTIONS",
    "AgentWork",
    "CompactionTask",
    "ToolRun",
    "read_work",
    "work_summary",
]

_CALL_LINE = re.compile(r"^→ (?P<name>[\w.:/-]{1,80})\((?P<args>.*)\)\s*$")
_COLLAPSED = re.compile(r"^\[(?P<n>\d+) messages omitted here: (?P<what>[^\]]*)\]\s*$")
_PATH = re.compile(
    r"(?<![\w@/.-])(?:\.{0,2}/)?(?:[\w.-]+/)+[\w.-]*\w\.\w{1,8}\b"
    r"|(?<![\w/.-])[\w-]+\.(?:py|js|ts|tsx|jsx|go|rs|rb|java|kt|c|h|cpp|hpp|cs|md|toml|yaml"
    r"|yml|json|sql|sh|cfg|ini|txt|lock|html|css)\b"
)
_PATH_KEYS = ("path", "file_path", "filepath", "filename", "file", "paths", "target")
_COMMAND_KEYS = ("command", "cmd", "script")
_EDITING = re.compile(r"edit|write|create|patch|apply|replace|insert|update|save|rename|delete")


@dataclass
class ToolRun:
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
class AgentWork:
    turns: list[Turn]
    user: list[Sentence]
    assistant: list[Sentence]
    runs: list[ToolRun] = field(default_factory=list)
    paths: dict[str, bool] = field(default_factory=dict)  # path -> edited
    long_user: list[tuple[int, str]] = field(default_factory=list)  # (turn, what it was)


class _Reader:
    def __init__(self, work: AgentWork) -> None:
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
                self.call_args(m.group("name"), call_args_of(m.group("args")))
            elif not line.startswith("["):
                self.paths_in(line)
            self.collapsed(line, turn.index)

    def tool_turn(self, turn: Turn) -> None:
        head, _, body = turn.text.partition("\n")
        brief = head[:-1] if head.endswith("]") else head
        tool = brief.split(" ", 1)[0] or "tool"
        args = brief_args(brief)
        command = next((args[k] for k in _COMMAND_KEYS if k in args), None)
        run = ToolRun(tool, one_line(brief), command, turn=turn.index)
        self.call_args(tool, dict(args))
        if is_stand_in(body.strip()):
            run.omitted_tokens, run.exit_status, run.errors = stood_in_run(body.strip())
        else:
            run.exit_status, run.errors = run_outcome(body)
            for line in body.splitlines():
                self.collapsed(line, turn.index)
        self.work.runs.append(run)

    def user_turn(self, turn: Turn) -> None:
        for line in turn.text.splitlines():
            if is_stand_in(line.strip()):
                if said := long_message_said(line):
                    self.work.long_user.append((turn.index, said))
            else:
                self.paths_in(line)
            self.collapsed(line, turn.index)

    def collapsed(self, line: str, turn: int) -> None:
        m = _COLLAPSED.match(line.strip())
        if not m or "; calls: " not in m.group("what"):
            return
        calls = m.group("what").split("; calls: ", 1)[1]
        for brief in re.split(r", (?=[\w.:/-]+(?: |$))", calls.split(" and ")[0]):
            args = brief_args(brief)
            tool = brief.split(" ", 1)[0]
            command = next((args[k] for k in _COMMAND_KEYS if k in args), None)
            self.work.runs.append(ToolRun(tool, one_line(brief), command, turn=turn))
            self.call_args(tool, dict(args))


def read_work(transcript: str) -> AgentWork:
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
    work = AgentWork(
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


@dataclass(frozen=True, slots=True)
class CompactionTask:
    """The covered messages as the request's transcript, and the previous checkpoint's
    summary ('' for none)."""

    transcript: str
    previous: str = ""

    def answer(self, max_tokens: int, count: Callable[[str], int]) -> str:
        text = work_summary(self.transcript, max_tokens, count, self.previous)
        return text or prose_summary(self.transcript, max_tokens, count, self.previous)


SECTIONS = (
    "Goals and constraints",
    "Decisions",
    "Files touched",
    "Commands run",
    "Open errors",
    "Key facts",
    "Last state",
)
_INLINE = frozenset({"Files touched", "Last state"})
_CONSTRAINT = re.compile(
    r"\b(?:never|always|don'?t|do not|must(?:n'?t)?|make sure|only|avoid|without|keep|prefer"
    r"|please|should(?:n'?t)?|no longer|from now on|remember)\b",
    re.IGNORECASE,
)
_REASON = re.compile(r"\b(?:because|since|so that|due to|the reason)\b", re.IGNORECASE)
_HEADING = re.compile(r"^(?P<name>[A-Z][a-z]+(?: [a-z]+){0,3}):\s*(?P<rest>.*)$")
_ITEM_WORDS = 45
_GOAL_WORDS = 90  # a goal or constraint is the user's whole sentence up to this
_LIMITS = {"Goals and constraints": 16, "Decisions": 12, "Commands run": 24, "Key facts": 16}


@dataclass(frozen=True, slots=True)
class WorkItem:
    section: str
    text: str
    priority: int  # 0 first
    rank: float  # within a priority, lower first
    order: float  # where it is shown within its section (conversation order)


def _previous_items(previous: str) -> list[WorkItem]:
    """Items of a previous summary: by heading when it has this format's headings."""
    out: list[WorkItem] = []
    section: str | None = None
    loose: list[str] = []
    # lines count from 1: a previous file sorts just before the fresh file it precedes
    for n, raw in enumerate(previous.splitlines(), start=1):
        line = raw.strip()
        m = _HEADING.match(line)
        if m and m.group("name") in SECTIONS:
            section = m.group("name")
            rest = m.group("rest").strip()
            if rest and section == "Files touched":
                for k, path in enumerate(rest.rstrip(".").split(", ")):
                    out.append(WorkItem(section, path, 2, -1.0, n - 1 + k / 1000))
            continue  # a previous last state is superseded by this one
        if line.startswith("- ") and section is not None:
            text = line[2:].strip()
            priority = {"Goals and constraints": 0, "Decisions": 1, "Open errors": 1}.get(
                section, 3
            )
            first_goal = section == "Goals and constraints" and not any(
                it.section == section for it in out
            )
            if section == "Goals and constraints" and not first_goal:
                priority = 0 if _CONSTRAINT.search(text) else 3
            out.append(WorkItem(section, text, priority, -1.0 + n / 10_000, -1.0 + n / 10_000))
        elif line:
            loose.append(line)
    if not out:
        for n, sentence in enumerate(s for line in loose for s in split_sentences(line)):
            if len(sentence.split()) >= 3:
                out.append(WorkItem("Key facts", finish(sentence), 2, n, -1.0 + n / 10_000))
    return out


def _command_items(work: AgentWork) -> tuple[list[WorkItem], list[WorkItem]]:
    """Commands run (one item per command: its runs, last outcome, last failure) and the
    open errors (commands whose last run failed)."""
    runs: dict[str, list[ToolRun]] = {}
    for run in work.runs:
        runs.setdefault(run.key, []).append(run)
    commands: list[WorkItem] = []
    errors: list[WorkItem] = []
    last_turn = max((r.turn for r in work.runs), default=0) or 1
    for key, group in runs.items():
        last = group[-1]
        failures = [r for r in group if r.failed]
        shown = f"`{clip_words(key, 30)}`"
        times = f" (× {len(group)})" if len(group) > 1 else ""
        outcome = _describe(last)
        if failures and not last.failed:
            outcome = f"{_describe(failures[-1])}, later ok"
        recency = 1 - last.turn / last_turn
        commands.append(
            WorkItem(
                "Commands run", f"{shown}{times} → {outcome}", 2 if failures else 4, recency, 0.0
            )
        )
        if last.failed:
            why = "; ".join(last.errors) or f"exit status {last.exit_status}"
            errors.append(WorkItem("Open errors", f"{shown}: {why}", 1, recency, last.turn))
    ordered = sorted(commands, key=lambda it: -it.rank)  # conversation order of last runs
    return [replace(it, order=k) for k, it in enumerate(ordered)], errors


def _describe(run: ToolRun) -> str:
    parts = []
    if run.exit_status is not None and (run.exit_status != "0" or not run.errors):
        parts.append(f"exit status {run.exit_status}")
    if run.errors:
        parts.append(run.errors[-1])
    if not parts:
        parts.append("ok" if run.omitted_tokens is None else "ran (output not shown)")
    return ": ".join(parts)


def _sentence_items(work: AgentWork) -> list[WorkItem]:
    items: list[WorkItem] = []
    users = work.user
    first_turn = users[0].turn if users else None
    for s in users:
        # whole sentences of the user's (issue 38): a goal is not cut mid-clause; only a
        # wall of text is clipped; a greeting or a "thanks" is no goal
        text = finish(clip_words(s.text, _GOAL_WORDS))
        if is_filler(s.text) and not _CONSTRAINT.search(s.text):
            continue
        if s.turn == first_turn or _CONSTRAINT.search(s.text):
            items.append(WorkItem("Goals and constraints", text, 0, s.position, s.position))
        elif len(s.text.split()) >= 4:  # a request ("ok, continue" is none)
            items.append(WorkItem("Goals and constraints", text, 3, -s.position, s.position))
    for n, (turn, what) in enumerate(work.long_user):
        text = f"The user sent a long message ({what})."
        items.append(WorkItem("Goals and constraints", text, 2, n, turn - 0.5))
    prose = sorted(work.user + work.assistant, key=lambda s: s.position)
    for s in prose:
        if cue("decision", s.text) or (s.role == "assistant" and _REASON.search(s.text)):
            text = finish(clip_words(s.text, _ITEM_WORDS))
            items.append(WorkItem("Decisions", text, 1, s.position, s.position))
    ranked = [s for _, s in rank_sentences(work.assistant)]
    for k, s in enumerate(ranked[:40]):
        text = finish(clip_words(s.text, _ITEM_WORDS))
        items.append(WorkItem("Key facts", text, 5, k, s.position))
    return items


def _last_state(work: AgentWork) -> list[WorkItem]:
    parts = []
    if work.user:
        last_turn = [s.text for s in work.user if s.turn == work.user[-1].turn]
        parts.append(f"the user last asked: {finish(clip_words(' '.join(last_turn), 40))}")
    if work.assistant:
        last = work.assistant[-1]
        if not work.user or last.position > work.user[-1].position:
            parts.append(f"the assistant was at: {finish(clip_words(last.text, 40))}")
    if work.runs:
        parts.append(f"its last call was `{clip_words(work.runs[-1].key, 30)}`.")
    if not parts:
        return []
    text = " ".join(p[0].upper() + p[1:] for p in parts)
    return [WorkItem("Last state", text, 0, 0, 0)]


def _file_items(work: AgentWork) -> list[WorkItem]:
    out = []
    for k, (path, edited) in enumerate(work.paths.items()):
        shown = f"{path} (edited)" if edited else path
        out.append(WorkItem("Files touched", shown, 1 if edited else 4, k, k))
    return out


def _render(items: list[WorkItem]) -> str:
    lines: list[str] = []
    for section in SECTIONS:
        chosen = sorted((it for it in items if it.section == section), key=lambda it: it.order)
        if not chosen:
            continue
        if section in _INLINE:
            sep = ", " if section == "Files touched" else " "
            body = sep.join(it.text for it in chosen)
            lines.append(f"{section}: {body}" + ("." if section == "Files touched" else ""))
        else:
            lines.append(f"{section}:")
            lines.extend(f"- {it.text}" for it in chosen)
    return "\n".join(lines)


def work_summary(
    transcript: str, max_tokens: int, count: Callable[[str], int], previous: str = ""
) -> str:
    """The summary of the work that fits ``max_tokens`` ('' when nothing was found)."""
    work = read_work(transcript)
    new_commands, open_errors = _command_items(work)
    fresh = _sentence_items(work) + _file_items(work) + new_commands + open_errors
    fresh += _last_state(work)
    earlier = _previous_items(previous) if previous.strip() else []
    fixed = {f"`{clip_words(r.key, 30)}`" for r in work.runs if not r.failed}
    earlier = [
        it
        for it in earlier
        if not (it.section == "Open errors" and it.text.split(":", 1)[0] in fixed)
        and not (it.section == "Files touched" and _head(it) in {_head(f) for f in fresh})
    ]
    earlier, fresh = _merge_commands(earlier, fresh)
    candidates = sorted(earlier + fresh, key=lambda it: (it.priority, it.rank, it.order))
    return _fit(candidates, max_tokens, count)


def _head(item: WorkItem) -> str:
    """What an item is about: a command (before its outcome), a path (without a mark)."""
    return item.text.split(" → ", 1)[0].split(" (× ", 1)[0].removesuffix(" (edited)")


_FAILED = re.compile(r"→ (?:exit status (?!0\b)|[^,]*(?:error|fail|exception))", re.IGNORECASE)


def _merge_commands(
    earlier: list[WorkItem], fresh: list[WorkItem]
) -> tuple[list[WorkItem], list[WorkItem]]:
    """A command run again: the new item says how it ends now and, if an earlier run
    failed and the new one does not say so, how that failure read."""
    new = {_head(it): k for k, it in enumerate(fresh) if it.section == "Commands run"}
    kept: list[WorkItem] = []
    for it in earlier:
        k = new.get(_head(it)) if it.section == "Commands run" else None
        if k is None:
            kept.append(it)
            continue
        if _FAILED.search(it.text) and not _FAILED.search(fresh[k].text):
            was = it.text.split(" → ", 1)[1].removesuffix(", later ok")
            item = fresh[k]
            text = f"{item.text}; earlier: {was}"
            fresh[k] = WorkItem(item.section, text, min(item.priority, 2), item.rank, item.order)
    return kept, fresh


def _fit(candidates: list[WorkItem], max_tokens: int, count: Callable[[str], int]) -> str:
    chosen: list[WorkItem] = []
    seen: set[str] = set()
    said: list[frozenset[str]] = []
    per_section: dict[str, int] = {}
    used = 0
    headings: set[str] = set()
    for item in candidates:
        key = " ".join(item.text.lower().split())  # as said, case and spacing aside
        if key in seen:
            continue
        prose = item.section not in ("Files touched", "Commands run", "Open errors")
        if prose and said_before(item.text, said):
            continue
        if per_section.get(item.section, 0) >= _LIMITS.get(item.section, 64):
            continue
        cost = count(item.text) + 3 + (0 if item.section in headings else count(item.section) + 2)
        if used + cost > max_tokens:
            continue
        chosen.append(item)
        used += cost
        headings.add(item.section)
        seen.add(key)
        per_section[item.section] = per_section.get(item.section, 0) + 1
        if prose:
            said.append(frozenset(content_words(item.text)))
    text = _render(chosen)
    while chosen and count(text) > max_tokens:  # the estimate was short: drop the least
        worst = max(range(len(chosen)), key=lambda k: (chosen[k].priority, chosen[k].rank))
        chosen.pop(worst)
        text = _render(chosen)
    return text
