"""Summarize one conversation, choosing the cheapest path that is still honest.

* zero exchanges → ``None`` (the caller writes the empty file: skip forever);
* one tiny exchange → a short deterministic summary from its own text, no model call;
* fits one request (``SHORT_TOKEN_BUDGET`` transcript tokens) → one call, Purpose.SUMMARY,
  the material inside ``<transcript>…</transcript>``;
* longer → the episodic summarizer (:mod:`memoir.summaries.episodic`), episode by episode
  and merged (the pass hands in its own ``long`` path: incremental, see summary_pass.py).

Summaries say what the conversation was about, the decisions made and where it ended.
Failures raise (a ModelError or SummaryError); the caller records them.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from memoir.errors import SummaryError
from memoir.llm import default_counter
from memoir.llm.port import (
    ChatMessage,
    EmptyResponse,
    Model,
    ModelRequest,
    Purpose,
    Refused,
    RequestMeta,
    TokenCounter,
)
from memoir.llm.transcript import SentenceScorer, quote_speaker_lines
from memoir.model import Event, EventKind, Exchange, build_exchanges
from memoir.summaries.episodic import EpisodicSummarizer
from memoir.summaries.offline import SummaryTask
from memoir.summaries.port import EpisodeCache

__all__ = [
    "SHORT_TOKEN_BUDGET",
    "SUMMARY_SYSTEM",
    "LongPath",
    "SummaryText",
    "render_transcript",
    "summarize_conversation",
    "tidy_summary",
    "tiny_summary",
]

SHORT_TOKEN_BUDGET = 12_000
TINY_CHARS = 600
SUMMARY_MAX_TOKENS = 600

SUMMARY_SYSTEM = (
    "You write the summary shown next to a past conversation in a search result. "
    "In two to five plain sentences say what the conversation was about, the decisions "
    "that were made, and where it ended (finished, left open, or what was next). "
    "Write in the conversation's language. No preamble, no lists, no headings."
)


LongPath = Callable[[Sequence[Event]], "SummaryText"]


@dataclass(frozen=True, slots=True)
class SummaryText:
    """A produced summary: the body, the model that wrote it ("none" when no call)."""

    body: str
    model: str
    calls: int = 0


def _clip(text: str, limit: int) -> str:
    text = re.sub(r"\s+", " ", text).strip()
    if len(text) <= limit:
        return text
    cut = text[:limit].rsplit(" ", 1)[0] or text[:limit]
    return cut.rstrip(" ,.;:") + "…"


def tiny_summary(exchange: Exchange, events: Sequence[Event] = ()) -> str:
    """A deterministic one-exchange summary (no model call); the tools it used name the
    file or command they touched when ``events`` are given."""
    asked = _clip(exchange.user_text, 200) or "(no text)"
    parts = [f"A single exchange: the user asked “{asked}”."]
    if exchange.assistant_text.strip():
        parts.append(f"The assistant replied “{_clip(exchange.assistant_text, 200)}”.")
    else:
        parts.append("It ended without a reply.")
    if exchange.tool_names:
        used = _tools_line(exchange, events)[len("[tools: ") : -1]
        parts.append(f"Tools used: {used}.")
    return " ".join(parts)


_TARGET_KEYS = ("command", "file_path", "path", "notebook_path")
_PATCHED = re.compile(r"\*\*\* (?:Update|Add|Delete) File: ([^\n]+)")
_NO_BRACKETS = str.maketrans("()[]", "    ")  # the marker's own delimiters


def _tool_target(event: Event) -> str | None:
    """The file or command a tool call touched (its input's first such argument)."""
    payload = event.payload if isinstance(event.payload, dict) else {}
    args = payload.get("input")
    raw = payload.get("arguments")  # Codex: a JSON string, or the command line itself
    if args is None and isinstance(raw, str):
        try:
            args = json.loads(raw)
        except ValueError:
            args = {"command": raw}
    if isinstance(args, dict) and isinstance(args.get("input"), str):  # apply_patch
        patched = _PATCHED.search(args["input"])
        if patched:
            return patched.group(1).strip().translate(_NO_BRACKETS).strip() or None
    if not isinstance(args, dict):
        return None
    for key in _TARGET_KEYS:
        value = args.get(key)
        if isinstance(value, list):
            value = " ".join(str(v) for v in value)
        if isinstance(value, str) and value.strip():
            line = " ".join(value.strip().splitlines()[0].split())
            return line[:120].translate(_NO_BRACKETS).strip() or None
    return None


def _tools_line(ex: Exchange, events: Sequence[Event]) -> str:
    """``[tools: Read (tests/x.py), Grep, Bash (pytest -q)]``: each tool called in the
    exchange, with the file or command it touched when it named one."""
    named: list[str] = []
    for ev in events:
        if ev.kind is EventKind.TOOL_CALL and ex.first_ordinal <= ev.ordinal <= ex.last_ordinal:
            target = _tool_target(ev)
            item = f"{ev.tool_name or 'tool'} ({target})" if target else (ev.tool_name or "tool")
            if item not in named:
                named.append(item)
    return f"[tools: {', '.join(named or ex.tool_names)}]"


def render_transcript(exchanges: Sequence[Exchange], events: Sequence[Event] = ()) -> str:
    blocks = []
    for ex in exchanges:
        block = [f"User: {quote_speaker_lines(ex.user_text.strip())}"]
        if ex.tool_names:
            block.append(_tools_line(ex, events))
        if ex.assistant_text.strip():
            block.append(f"Assistant: {quote_speaker_lines(ex.assistant_text.strip())}")
        blocks.append("\n".join(block))
    return "\n\n".join(blocks)


def _is_tiny(exchanges: Sequence[Exchange]) -> bool:
    if len(exchanges) != 1:
        return False
    ex = exchanges[0]
    return len(ex.user_text) + len(ex.assistant_text) <= TINY_CHARS


def _clean(text: str) -> str:
    body = text.strip()
    # never let a model reply pose as a header or an error sentinel
    while body.startswith(("__COVERAGE__", "__ERRORED__")):
        body = body.partition("\n")[2].strip()
    return body


def summarize_conversation(
    events: Sequence[Event],
    model: Model,
    *,
    session: str | None = None,
    user: str | None = None,
    counter: TokenCounter | None = None,
    fallback: Model | None = None,
    cache: EpisodeCache | None = None,
    long: LongPath | None = None,
    scorer: SentenceScorer | None = None,
) -> SummaryText | None:
    """The summary of ``events`` (None: the conversation has no exchange). ``long`` replaces
    the episodic path for conversations beyond one request (the pass supplies one that
    merges incrementally into the previous summary). ``scorer`` ranks the offline
    summary's sentences by centrality (the embedder's); lexical without one."""
    exchanges = build_exchanges(events)
    if not exchanges:
        return None
    if _is_tiny(exchanges):
        return SummaryText(tiny_summary(exchanges[0], events), "none")
    transcript = render_transcript(exchanges, events)
    counter = counter or default_counter()
    if counter.count(transcript) <= SHORT_TOKEN_BUDGET:
        try:
            return _one_call(transcript, model, session=session, user=user, scorer=scorer)
        except Refused:
            if fallback is None:
                raise
            return _one_call(
                transcript, fallback, session=session, user=user, scorer=scorer
            )  # once
    if long is not None:
        return long(events)
    return _episodic(events, model, session=session, user=user, fallback=fallback, cache=cache)


def _one_call(
    transcript: str,
    model: Model,
    *,
    session: str | None,
    user: str | None,
    scorer: SentenceScorer | None = None,
) -> SummaryText:
    request = ModelRequest(
        messages=(
            ChatMessage(
                "user",
                "Summarize this conversation.\n\n<transcript>\n" + transcript + "\n</transcript>",
            ),
        ),
        system=SUMMARY_SYSTEM,
        max_tokens=SUMMARY_MAX_TOKENS,
        meta=RequestMeta(user=user, session=session, purpose=Purpose.SUMMARY),
        task=SummaryTask(transcript, scorer=scorer),
    )
    completion = model.complete(request)
    body = _clean(completion.text)
    if not body:
        raise EmptyResponse("the model returned an empty summary")
    if completion.offline or not completion.provider:
        name = model.name if not completion.offline else "offline"
    else:
        name = f"{completion.provider}:{completion.model}"
    return SummaryText(body, name, 1)


def tidy_summary(text: str) -> str:
    return _clean(text)


def _episodic(
    events: Sequence[Event],
    model: Model,
    *,
    session: str | None,
    user: str | None,
    fallback: Model | None,
    cache: EpisodeCache | None,
) -> SummaryText:
    summary = EpisodicSummarizer(model, fallback=fallback, cache=cache).summarize(
        list(events), session=session, user=user
    )
    body = _clean(summary.text)
    if not body:
        raise SummaryError("the episodic summarizer produced an empty summary")
    return SummaryText(body, summary.model, summary.calls)
