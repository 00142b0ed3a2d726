"""The summary request, bounded: what the summarizer is asked to read (built purely).

The covered messages are rendered as a transcript inside ``<transcript>…</transcript>``
(a previous checkpoint's summary inside ``<previous_summary>…</previous_summary>``, the
headings of the summary asked for inside ``<summary_format>…</summary_format>``) in the
last user message, with ``RequestMeta.purpose = Purpose.COMPACTION``; the same transcript
and summary ride as the request's task for the offline model
(:class:`memoir.compaction.offline.CompactionTask`). A tool result's
entry is headed by the call it answers (``[tool result: bash command="pytest -q"]``).

Every message over the per-message cap — of any role, a pasted log in a user message
too — is replaced whole by its stand-in, which says what is known of it (the call, exit
status and error lines; a user message's first and last lines) and its size. If the
request still does not fit ``window - output budget``, the largest other entries are
replaced too, the user's last; then runs of stand-ins become one line each (naming the
calls they stood for), then runs of replies and tool output, and only then runs that
hold the user's words. If even that cannot fit there is no request (the caller goes to
the backstop). The request is built once, for the first output budget, and the ladder
only lowers ``max_tokens``: retries are byte-identical otherwise.

Asking for the summary: the budget ladder and the validity check around one model.

:func:`ladder_step` is the pure decision; :func:`ask_for_summary` the loop that calls the
model.
On :class:`OutputBudgetRejected` the same request is sent again with the next lower
budget of the ladder (4096, 2048, 1024, 256 — only budgets below the one rejected),
stopping at the first accepted. Any other failure — a truncated, empty, refused or
invalid summary, reasoning without content, the provider down — ends the attempt: the
caller falls back to the backstop. Nothing rejected ever reaches the context.

Is a summary usable? A rejected summary goes to the ladder/backstop, never into the
context. Pure.

Rejected: empty text; reasoning without content (a ``<think>`` block and nothing else, or
an unclosed one, or a provider reasoning trace with empty text); text ending inside an
open code fence; text ending mid-sentence. Truncation (max_tokens) never reaches this
check: the model port raises :class:`memoir.llm.port.Truncated` instead.

"Mid-sentence" is judged on the last line: a prose line may not end with a bare word
(``… and then the``, ``… the user asked``) or a CJK character (CJK prose ends with
``。``); it may end with terminal punctuation (Latin or CJK), a closing quote or bracket,
or a token that is no plain word (``src/app.py``, ``3.2``, an emoji). A list item,
heading or table row may end bare (summaries often end with a bullet). None may end with
a comma, colon, an opening bracket or a dangling connective.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from memoir.compaction.offline import CompactionTask
from memoir.compaction.plan import Budget, ladder_after
from memoir.compaction.sequence import MESSAGE_FRAME_TOKENS, Message, content_text, tool_call_text
from memoir.compaction.standin import StandIns, call_brief
from memoir.compaction.values import Omission
from memoir.llm.port import (
    ChatMessage,
    Model,
    ModelError,
    ModelRequest,
    OutputBudgetRejected,
    Purpose,
    RequestMeta,
    Truncated,
)
from memoir.llm.transcript import quote_speaker_lines
from memoir.model import clean_speaker

__all__ = [
    "SUMMARY_SYSTEM",
    "WORK_SUMMARY_FORMAT",
    "SummaryOutcome",
    "SummaryPlan",
    "ask_for_summary",
    "build_summary_request",
    "ladder_step",
    "render_entry",
    "strip_reasoning",
    "summary_problem",
]

_THINK = re.compile(r"<(think|thinking|reasoning)>.*?</\1>", re.DOTALL | re.IGNORECASE)
_OPEN_THINK = re.compile(r"<(think|thinking|reasoning)>", re.IGNORECASE)
_FENCE = re.compile(r"^\s{0,3}(```|~~~)", re.MULTILINE)
_TERMINAL = tuple(".!?…。！？」』）)]}\"'`*_>")
_DANGLING = tuple(",;:-–—(/[{&+=")
_CJK_END = re.compile("[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af]$")
_LIST_ITEM = re.compile(r"^\s*([-*+•]|\d+[.)]|#{1,6}\s|\|)")
_CONNECTIVE = re.compile(
    r"\b(and|or|but|the|a|an|of|to|with|for|in|on|that|which|because|then)$", re.IGNORECASE
)


def strip_reasoning(text: str) -> str:
    """The text without closed reasoning blocks; '' when an unclosed one remains."""
    stripped = _THINK.sub("", text)
    if _OPEN_THINK.search(stripped):
        return ""
    return stripped.strip()


def summary_problem(text: str, extra: Mapping[str, Any] | None = None) -> str | None:
    """Why ``text`` cannot be used as a summary, or None when it can."""
    if not text.strip():
        if extra and any(extra.get(k) for k in ("reasoning", "reasoning_content", "thinking")):
            return "reasoning without content"
        return "empty summary"
    body = strip_reasoning(text)
    if not body:
        return "reasoning without content"
    if len(_FENCE.findall(body)) % 2 == 1:
        return "ends inside an open code fence"
    last = body.rstrip().splitlines()[-1].rstrip()
    if last.endswith(_DANGLING) or _CONNECTIVE.search(last):
        return "ends mid-sentence"
    if _LIST_ITEM.match(last) or last.endswith(_TERMINAL):
        return None
    words = last.split()
    if words and words[-1].isascii() and words[-1].isalpha():
        return "ends mid-sentence"  # a bare word: the sentence was going on
    if _CJK_END.search(last):
        return "ends mid-sentence"  # CJK prose ends with 。！？ — without, it was cut
    return None  # a path, a version, a number, an emoji: a line can end so


@dataclass(frozen=True, slots=True)
class SummaryOutcome:
    summary: str | None  # None: no usable summary, see ``reason``
    reason: str | None
    budgets: tuple[int, ...]  # max_tokens of every request sent, in order

    @property
    def calls(self) -> int:
        return len(self.budgets)

    @property
    def budget_used(self) -> int | None:
        return self.budgets[-1] if self.budgets else None


def ladder_step(error: BaseException | None, budget: int) -> int | None:
    """The next budget to try after ``error`` at ``budget``; None means stop (accepted,
    when ``error`` is None, or backstop)."""
    if isinstance(error, OutputBudgetRejected):
        return ladder_after(budget)
    return None


def ask_for_summary(model: Model, request: ModelRequest) -> SummaryOutcome:
    budgets: list[int] = []
    budget: int | None = request.max_tokens
    while budget is not None:
        sent = (
            request
            if budget == request.max_tokens
            else dataclasses.replace(request, max_tokens=budget)
        )
        budgets.append(budget)
        try:
            completion = model.complete(sent)
        except OutputBudgetRejected as exc:
            budget = ladder_step(exc, budget)
            if budget is None:
                return SummaryOutcome(None, "output budget rejected at every step", tuple(budgets))
            continue
        except Truncated:
            return SummaryOutcome(None, "summary cut by max_tokens", tuple(budgets))
        except ModelError as exc:
            said = str(exc).strip().splitlines()[0][:200] if str(exc).strip() else ""
            reason = f"summarizer failed: {type(exc).__name__}" + (f": {said}" if said else "")
            return SummaryOutcome(None, reason, tuple(budgets))
        problem = summary_problem(completion.text, completion.extra)
        if problem is not None:
            return SummaryOutcome(None, f"summary rejected: {problem}", tuple(budgets))
        return SummaryOutcome(strip_reasoning(completion.text), None, tuple(budgets))
    return SummaryOutcome(None, "no output budget to try", tuple(budgets))


SUMMARY_SYSTEM = (
    "You compact the history of a conversation between a user and an AI assistant that "
    "uses tools, so the assistant can continue the work from your summary alone."
)

# the headings of the summary of the work: what an agent resuming needs, in that order
WORK_SUMMARY_FORMAT = (
    "Goals and constraints: the user's goals, requests, preferences and constraints, in "
    "their own words.\n"
    "Decisions: what was decided, and why.\n"
    "Files touched: the paths read, written or edited.\n"
    "Commands run: each command or tool call that mattered, and its outcome.\n"
    "Open errors: failures not fixed yet, with their error lines.\n"
    "Key facts: other facts learned that the work depends on.\n"
    "Last state: what was being done when the transcript ends, and what comes next."
)

_INSTRUCTIONS = (
    "Summarize the work in the transcript below so the assistant can continue it. Write "
    "the summary under the headings of <summary_format>, in that order, leaving out a "
    "heading with nothing under it; keep exact paths, commands, identifiers and error "
    "messages. Entries marked [content omitted …] stand for output that was produced but "
    "is not shown here: use what they say of it (the call, its arguments, exit status, "
    "error lines, size), say that its source should be re-read, and never invent its "
    "contents; their wording is not part of the conversation. If a previous summary is "
    "given, write one updated summary that covers both it and the transcript. Answer with "
    "the summary only, ending with a complete sentence."
)


@dataclass(frozen=True, slots=True)
class SummaryPlan:
    """A ready summary request (``max_tokens`` = the budget's first step), what it left
    out, and the indices (in the job's history) of the messages it left out."""

    request: ModelRequest
    input_tokens: int
    omitted: tuple[Omission, ...]
    omitted_indices: frozenset[int] = frozenset()


def render_entry(
    message: Message, tool_name: str | None, call: Mapping[str, Any] | None = None
) -> str:
    """One transcript entry: a role line, then the text (and tool calls), led by the
    speaker's name when the message has one; a line of the text that would read as a
    role line is quoted (:func:`memoir.llm.transcript.quote_speaker_lines`). A tool
    result is headed by the call it answers when ``call`` is known."""
    role = message.get("role")
    text = quote_speaker_lines(content_text(message), first_line_too=True)
    if role == "tool":
        head = call_brief(call) if call is not None else tool_name or message.get("name")
        return f"[tool result: {head or 'tool'}]\n{text}"
    if role in ("user", "assistant") and (named := clean_speaker(message.get("name"))):
        text = f"{named}: {text}"  # who of several people or agents said it
    if role == "assistant":
        calls = [f"→ {tool_call_text(c)}" for c in message.get("tool_calls") or []]
        body = "\n".join([text, *calls]) if text else "\n".join(calls)
        return f"[assistant]\n{body}"
    return f"[{role}]\n{text}"


def _stand_in_entry(m: Message, i: int, stand_ins: StandIns) -> str:
    role = m.get("role")
    if role == "tool":
        call = stand_ins.calls.get(i)
        head = call_brief(call) if call is not None else stand_ins.tool_names.get(i, "tool")
        return f"[tool result: {head}]\n{stand_ins.request_text(i)}"
    return f"[{role}]\n{stand_ins.request_text(i)}"


def build_summary_request(
    covered: Sequence[tuple[int, Message]],
    *,
    positions: Sequence[int],
    stand_ins: StandIns,
    budget: Budget,
    previous_summary: str | None,
    count: Callable[[str], int],
    message_tokens: Callable[[int], int],
    session: str | None = None,
) -> SummaryPlan | None:
    """The request summarizing ``covered`` ((index, message) pairs), or None when not
    even one line per run of messages fits the window."""
    t = _Transcript(covered, positions, stand_ins, count, message_tokens)
    for k, (i, _) in enumerate(covered):
        if message_tokens(i) > budget.message_cap:
            t.stand_in(k)
    fixed = _fixed_tokens(previous_summary, count)
    limit = budget.window - budget.output_budget
    entries = t.fit(limit - fixed)
    if entries is None:
        return None
    transcript = "\n\n".join(entries)
    content = _user_content(previous_summary, transcript)
    task = CompactionTask(transcript, previous_summary.strip() if previous_summary else "")
    request = ModelRequest(
        messages=(ChatMessage(role="user", content=content),),
        max_tokens=budget.output_budget,
        system=SUMMARY_SYSTEM,
        temperature=0.0,
        meta=RequestMeta(session=session, purpose=Purpose.COMPACTION),
        task=task,
    )
    input_tokens = count(SUMMARY_SYSTEM) + count(content) + 2 * MESSAGE_FRAME_TOKENS
    return SummaryPlan(
        request,
        input_tokens,
        tuple(t.omitted[k] for k in sorted(t.omitted)),
        frozenset(covered[k][0] for k in t.omitted),
    )


class _Transcript:
    """The entries of a summary request as they are made to fit."""

    def __init__(
        self,
        covered: Sequence[tuple[int, Message]],
        positions: Sequence[int],
        stand_ins: StandIns,
        count: Callable[[str], int],
        message_tokens: Callable[[int], int],
    ) -> None:
        self.covered, self.positions, self.stand_ins = covered, positions, stand_ins
        self.count, self.message_tokens = count, message_tokens
        self.entries = [
            render_entry(m, stand_ins.tool_names.get(i), stand_ins.calls.get(i)) for i, m in covered
        ]
        self.sizes = [count(e) for e in self.entries]
        self.omitted: dict[int, Omission] = {}
        self.users = {k for k, (_, m) in enumerate(covered) if m.get("role") == "user"}

    def omit(self, k: int) -> None:
        i, m = self.covered[k]
        tool = self.stand_ins.tool_names.get(i)
        self.omitted[k] = _omission(m, self.positions[i], tool, self.message_tokens(i))

    def stand_in(self, k: int) -> int:
        """Replace entry ``k`` by its stand-in; the change in tokens."""
        i, m = self.covered[k]
        self.omit(k)
        self.entries[k] = _stand_in_entry(m, i, self.stand_ins)
        new = self.count(self.entries[k])
        change, self.sizes[k] = new - self.sizes[k], new
        return change

    def tokens(self, entries: Sequence[str]) -> int:
        return sum(self.count(e) for e in entries) + 2 * len(entries)

    def fit(self, room: int) -> list[str] | None:
        """The entries within ``room`` tokens: the largest stood in first (a user's own
        words only once nothing else is left); then each run of stand-ins becomes one
        line, then each run of replies and tool output; then the user's messages are
        stood in, largest first; and as the last resort every run becomes one line.
        None when even that does not fit."""
        total = sum(self.sizes) + 2 * len(self.sizes)
        others = set(range(len(self.entries))) - self.users
        for k in sorted(others, key=lambda k: (-self.sizes[k], k)):
            if total <= room:
                break
            if k not in self.omitted:
                total += self.stand_in(k)
        shown, runs = self.entries, set()
        for collapsible in (set(self.omitted) - self.users, others):
            if total <= room:
                break
            runs = collapsible
            shown = self.collapsed(runs)
            total = self.tokens(shown)
        for k in sorted(self.users, key=lambda k: (-self.sizes[k], k)):
            if total <= room:
                break
            if k not in self.omitted:
                total += self.stand_in(k)
        if total > room:
            runs = set(range(len(self.entries)))
        if runs:
            shown = self.collapsed(runs)
            total = self.tokens(shown)
            for k in runs - set(self.omitted):
                self.omit(k)
        return shown if total <= room else None

    def collapsed(self, runs: set[int]) -> list[str]:
        return _collapse_runs(self.entries, runs, self.message_tokens, self.covered, self.stand_ins)


def _collapse_runs(
    entries: list[str],
    collapsible: set[int],
    message_tokens: Callable[[int], int],
    covered: Sequence[tuple[int, Message]],
    stand_ins: StandIns,
) -> list[str]:
    """``entries`` (one per covered message) with each run of consecutive ``collapsible``
    ones as one line naming the calls it held (a stand-in costs ~50 tokens; hundreds of
    them crowd out the words they sit between)."""
    out: list[str] = []
    k = 0
    while k < len(entries):
        if k not in collapsible:
            out.append(entries[k])
            k += 1
            continue
        run = k
        while run < len(entries) and run in collapsible:
            run += 1
        if run - k == 1:
            out.append(entries[k])
        else:
            out.append(_run_line([covered[j] for j in range(k, run)], message_tokens, stand_ins))
        k = run
    return out


_RUN_CALLS = 6


def _run_line(
    run: Sequence[tuple[int, Message]], message_tokens: Callable[[int], int], stand_ins: StandIns
) -> str:
    tokens = sum(message_tokens(i) for i, _ in run)
    users = sum(1 for _, m in run if m.get("role") == "user")
    what = "replies and tool output" if not users else f"{users} user message(s), replies and tools"
    briefs = [call_brief(c) for i, _ in run if (c := stand_ins.calls.get(i)) is not None]
    named = dict.fromkeys(briefs)  # in order, each once
    shown = list(named)[:_RUN_CALLS]
    calls = f"; calls: {', '.join(shown)}" if shown else ""
    more = f" and {len(named) - len(shown)} more" if len(named) > len(shown) else ""
    return f"[{len(run)} messages omitted here: ~{tokens:,} tokens of {what}{calls}{more}]"


def _omission(m: Message, position: int, tool: str | None, tokens: int) -> Omission:
    role = str(m.get("role"))
    if role == "assistant":
        calls = m.get("tool_calls") or []
        tool = ",".join(str((c.get("function") or {}).get("name") or "tool") for c in calls) or None
    return Omission(position=position, role=role, tool=tool, tokens=tokens, where="request")


def _fixed_tokens(previous_summary: str | None, count: Callable[[str], int]) -> int:
    frame = _user_content(previous_summary, "")
    return count(SUMMARY_SYSTEM) + count(frame) + 2 * MESSAGE_FRAME_TOKENS + 8


def _user_content(previous_summary: str | None, transcript: str) -> str:
    parts = [_INSTRUCTIONS, f"<summary_format>\n{WORK_SUMMARY_FORMAT}\n</summary_format>"]
    if previous_summary:
        parts.append(f"<previous_summary>\n{previous_summary.strip()}\n</previous_summary>")
    parts.append(f"<transcript>\n{transcript}\n</transcript>")
    return "\n\n".join(parts)
