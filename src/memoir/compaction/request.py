"""The summary request, bounded: what the summarizer is asked to read. Pure.

The covered messages are rendered as a transcript inside ``<transcript>…</transcript>``
(a previous checkpoint's summary inside ``<previous_summary>…</previous_summary>``) in the
last user message, with ``RequestMeta.purpose = Purpose.COMPACTION``. Every message over
the per-message cap is replaced whole by its stand-in; a user's own message never is. If
the request still does not fit ``window - output budget``, the largest non-user entries
are replaced too; if the user's text alone cannot fit, there is no request (the caller
goes to the backstop). The request is built once, for the first output budget, and the
ladder only lowers ``max_tokens``: retries are byte-identical otherwise.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

from memoir.compaction.budget import Budget
from memoir.compaction.sequence import Message, content_text
from memoir.compaction.standin import IN_REQUEST, stand_in
from memoir.compaction.tokens import MESSAGE_OVERHEAD, tool_call_text
from memoir.compaction.values import Omission
from memoir.llm.transcript import quote_speaker_lines
from memoir.llm.values import ChatMessage, ModelRequest, Purpose, RequestMeta
from memoir.model import clean_speaker

__all__ = ["SUMMARY_SYSTEM", "SummaryPlan", "build_summary_request", "render_entry"]

SUMMARY_SYSTEM = (
    "You compact the history of a conversation between a user and an AI assistant that "
    "uses tools, so the assistant can continue the work from your summary alone."
)

_INSTRUCTIONS = (
    "Summarize the conversation in the transcript below. Keep what the assistant needs to "
    "continue: the user's goals, requests and preferences in their own terms; decisions "
    "and their reasons; facts learned; files, commands and identifiers touched; errors and "
    "how they were fixed; what is done and what remains. Entries marked [content omitted "
    "…] stand for output that was produced but not shown here: say it exists and that its "
    "source should be re-read; never invent its contents. If a previous summary is given, "
    "write one updated summary that covers both it and the transcript. Answer with the "
    "summary only, in plain prose or short bullet points, ending with a complete sentence."
)


@dataclass(frozen=True, slots=True)
class SummaryPlan:
    """A ready summary request (``max_tokens`` = the budget's first step) and what it
    left out."""

    request: ModelRequest
    input_tokens: int
    omitted: tuple[Omission, ...]


def render_entry(message: Message, tool_name: str | None) -> str:
    """One transcript entry: a role line, then the text (and tool calls), led by the
    speaker's name when the message has one; a line of the text that would read as a
    role line is quoted (:func:`memoir.llm.transcript.quote_speaker_lines`)."""
    role = message.get("role")
    text = quote_speaker_lines(content_text(message), first_line_too=True)
    if role == "tool":
        return f"[tool result: {tool_name or message.get('name') or 'tool'}]\n{text}"
    if role in ("user", "assistant") and (named := clean_speaker(message.get("name"))):
        text = f"{named}: {text}"  # who of several people or agents said it
    if role == "assistant":
        calls = [f"→ {tool_call_text(c)}" for c in message.get("tool_calls") or []]
        body = "\n".join([text, *calls]) if text else "\n".join(calls)
        return f"[assistant]\n{body}"
    return f"[{role}]\n{text}"


def build_summary_request(
    covered: Sequence[tuple[int, Message]],
    *,
    positions: Sequence[int],
    tool_names: Mapping[int, str],
    budget: Budget,
    previous_summary: str | None,
    count: Callable[[str], int],
    message_tokens: Callable[[int], int],
    session: str | None = None,
) -> SummaryPlan | None:
    """The request summarizing ``covered`` ((index, message) pairs), or None when the
    user's own text alone cannot fit the window."""
    entries: list[str] = []
    sizes: list[int] = []
    omitted: dict[int, Omission] = {}
    standins: dict[int, str] = {}
    for k, (i, m) in enumerate(covered):
        name = tool_names.get(i) if m.get("role") == "tool" else None
        tokens = message_tokens(i)
        text = stand_in(m, tokens, tool_name=name, where=IN_REQUEST)
        standins[k] = f"[{m.get('role')}]\n{text}"
        if m.get("role") != "user" and tokens > budget.message_cap:
            omitted[k] = _omission(m, positions[i], name, tokens)
            entry = standins[k]
        else:
            entry = render_entry(m, name)
        size = count(entry)
        entries.append(entry)
        sizes.append(size)
    fixed = _fixed_tokens(previous_summary, count)
    limit = budget.window - budget.output_budget
    total = fixed + sum(sizes) + 2 * len(sizes)
    for k in sorted(range(len(entries)), key=lambda k: (-sizes[k], k)):
        if total <= limit:
            break
        i, m = covered[k]
        if m.get("role") == "user" or k in omitted:
            continue
        name = tool_names.get(i)
        omitted[k] = _omission(m, positions[i], name, message_tokens(i))
        entries[k] = standins[k]
        new = count(entries[k])
        total += new - sizes[k]
        sizes[k] = new
    # many stand-ins: each run of them becomes one line; then, if need be, each run of
    # replies and tool output does (the user's words are the last thing to go)
    not_user = [k for k, (_, m) in enumerate(covered) if m.get("role") != "user"]
    per_message = entries
    for collapsible in (set(omitted), set(not_user)):
        if total <= limit:
            break
        entries = _collapse_runs(per_message, collapsible, message_tokens, covered)
        total = fixed + sum(count(e) for e in entries) + 2 * len(entries)
        for k in collapsible - set(omitted):
            i, m = covered[k]
            omitted[k] = _omission(m, positions[i], tool_names.get(i), message_tokens(i))
    if total > limit:
        return None
    content = _user_content(previous_summary, "\n\n".join(entries))
    request = ModelRequest(
        messages=(ChatMessage(role="user", content=content),),
        max_tokens=budget.output_budget,
        system=SUMMARY_SYSTEM,
        temperature=0.0,
        meta=RequestMeta(session=session, purpose=Purpose.COMPACTION),
    )
    input_tokens = count(SUMMARY_SYSTEM) + count(content) + 2 * MESSAGE_OVERHEAD
    return SummaryPlan(request, input_tokens, tuple(omitted[k] for k in sorted(omitted)))


def _collapse_runs(
    entries: list[str],
    collapsible: set[int],
    message_tokens: Callable[[int], int],
    covered: Sequence[tuple[int, Message]],
) -> list[str]:
    """``entries`` (one per covered message) with each run of consecutive ``collapsible``
    ones as one line (a stand-in costs ~30 tokens; hundreds of them crowd out the words
    they sit between)."""
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
            tokens = sum(message_tokens(covered[j][0]) for j in range(k, run))
            out.append(
                f"[{run - k} messages omitted here: ~{tokens:,} tokens of replies and tool output]"
            )
        k = run
    return out


def _omission(m: Message, position: int, tool: str | None, tokens: int) -> Omission:
    role = str(m.get("role"))
    if role == "assistant":
        calls = m.get("tool_calls") or []
        tool = ",".join(str((c.get("function") or {}).get("name") or "tool") for c in calls) or None
    return Omission(position=position, role=role, tool=tool, tokens=tokens, where="request")


def _fixed_tokens(previous_summary: str | None, count: Callable[[str], int]) -> int:
    frame = _user_content(previous_summary, "")
    return count(SUMMARY_SYSTEM) + count(frame) + 2 * MESSAGE_OVERHEAD + 8


def _user_content(previous_summary: str | None, transcript: str) -> str:
    parts = [_INSTRUCTIONS]
    if previous_summary:
        parts.append(f"<previous_summary>\n{previous_summary.strip()}\n</previous_summary>")
    parts.append(f"<transcript>\n{transcript}\n</transcript>")
    return "\n\n".join(parts)
