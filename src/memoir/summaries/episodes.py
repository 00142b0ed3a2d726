"""A history as the summarizer sees it: one rendered line per message, tool pairs known.

:func:`normalise` accepts memoir :class:`~memoir.model.Event` values or OpenAI-style message
dicts (``role``/``content``, ``tool_calls``, ``tool_call_id``; content may also be a list of
parts, including Anthropic ``tool_use``/``tool_result`` blocks). Thinking, meta and system
messages are left out: they are the agent's scaffolding, not the conversation. Tool inputs
and outputs are clipped (head and tail kept) so that one huge tool result cannot fill an
episode on its own.

:func:`cut_allowed` says where an episode boundary may fall: never between a tool call and
the result that answers it.

Pure decisions of a run: how to cut a history into episodes, and how much of it one run
takes on.

Unicode-safe text cuts (pure): never inside a code point or a grapheme cluster.

Python strings index code points, so any slice is code-point safe; grapheme clusters (an
emoji with skin tone, a ZWJ family, a letter with combining marks, a Hangul syllable in
jamo) come from the ``regex`` package's ``\\X``.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

import regex

from memoir.llm.port import TokenCounter
from memoir.llm.transcript import quote_speaker_lines
from memoir.model import Event, EventKind, clean_speaker, speaker_of

__all__ = [
    "HISTORY_TOOL_CHARS",
    "SEPARATOR",
    "Episode",
    "HistoryItem",
    "build_episodes",
    "clip_middle",
    "cut_allowed",
    "full_run_refusal",
    "grapheme_boundaries",
    "normalise",
    "pack",
    "run_scope",
    "safe_cut",
    "split_point",
]

_GRAPHEME = regex.compile(r"\X")
_SENTENCE_END = frozenset(".!?。！？；;…")
_LOCAL = 64  # grapheme segmentation resynchronises well within this many code points


def grapheme_boundaries(text: str) -> list[int]:
    """Every offset where a cut keeps grapheme clusters whole, 0 and len(text) included."""
    out = [0]
    out.extend(m.end() for m in _GRAPHEME.finditer(text))
    return out


def safe_cut(text: str, at: int) -> int:
    """The grapheme boundary at or before ``at`` (looked up in a local window, so it is
    cheap on huge texts)."""
    if at <= 0:
        return 0
    if at >= len(text):
        return len(text)
    start = max(0, at - _LOCAL)
    best = start
    for m in _GRAPHEME.finditer(text, start, min(len(text), at + _LOCAL)):
        if m.end() > at:
            break
        best = m.end()
    return best


def clip_middle(text: str, limit: int) -> str:
    """``text`` when it is at most ``limit`` characters, else its head and tail with a
    marker saying how much was left out (cuts on grapheme boundaries)."""
    if len(text) <= limit:
        return text
    head_end = safe_cut(text, int(limit * 0.7))
    tail_start = safe_cut(text, len(text) - int(limit * 0.25))
    if tail_start <= head_end:
        return text[:head_end]
    omitted = tail_start - head_end
    return f"{text[:head_end]} […{omitted} characters omitted…] {text[tail_start:]}"


def _text_rank(text: str, at: int) -> int:
    before = text[at - 1]
    if before == "\n" and at >= 2 and text[at - 2] == "\n":
        return 2
    if before == "\n":
        return 3
    if before in _SENTENCE_END:
        return 4
    if before.isspace():
        return 5
    return 6


def split_point(
    text: str,
    preferred: Sequence[int] = (),
    acceptable: Sequence[int] = (),
    *,
    window: float = 1 / 6,
) -> int | None:
    """Where to cut ``text`` into two halves, or None when it cannot be cut (fewer than
    two grapheme clusters).

    Candidates within ``window × len`` of the middle are ranked: a ``preferred`` offset (a
    message boundary outside any tool pair), an ``acceptable`` one (any other message
    boundary), then grapheme boundaries after a blank line, a line break, a sentence end,
    whitespace, anything; ties go to the one nearest the middle. With no candidate in the
    window, the grapheme boundary nearest the middle wins.
    """
    bounds = grapheme_boundaries(text)
    inner = bounds[1:-1]
    if not inner:
        return None
    n = len(text)
    mid = n / 2
    reach = max(1.0, n * window)
    bound_set = set(inner)
    ranked: list[tuple[int, float, int]] = []
    for rank, offsets in ((0, preferred), (1, acceptable)):
        for at in offsets:
            if at in bound_set and abs(at - mid) <= reach:
                ranked.append((rank, abs(at - mid), at))
    if not ranked:
        for at in inner:
            if abs(at - mid) <= reach:
                ranked.append((_text_rank(text, at), abs(at - mid), at))
    if not ranked:
        return min(inner, key=lambda at: (abs(at - mid), at))
    return min(ranked)[2]


HISTORY_TOOL_CHARS = 2_000


@dataclass(frozen=True, slots=True)
class HistoryItem:
    """One message of the history, rendered for a transcript.

    ``opens`` are the tool-call ids this message issues, ``answers`` the ids it answers.
    ``ordinal`` is the event ordinal (None for message dicts), ``index`` the position in
    the history given to :func:`normalise`.
    """

    role: str
    text: str
    opens: tuple[str, ...] = ()
    answers: tuple[str, ...] = ()
    ordinal: int | None = None
    index: int = -1  # position in the history given to :func:`normalise`


def normalise(history: Iterable[Event | Mapping[str, Any]]) -> list[HistoryItem]:
    out: list[HistoryItem] = []
    for index, entry in enumerate(history):
        item = _from_event(entry) if isinstance(entry, Event) else _from_dict(entry, index)
        if item is not None and item.text.strip():
            out.append(replace(item, index=index))
    return out


def _speaker_label(ev: Event, role: str) -> str:
    """``User`` / ``Assistant``, or ``Alice (user)`` when the source named the speaker (as
    ``_from_dict`` labels a message with a ``name``)."""
    speaker = speaker_of(ev)
    return f"{speaker} ({role.lower()})" if speaker else role


def _from_event(ev: Event) -> HistoryItem | None:
    kind, text = ev.kind, ev.text or ""
    if kind is EventKind.USER_TEXT:
        body = quote_speaker_lines(text.strip())
        return HistoryItem("user", f"{_speaker_label(ev, 'User')}: {body}", ordinal=ev.ordinal)
    if kind is EventKind.ASSISTANT_TEXT:
        label = _speaker_label(ev, "Assistant")
        body = quote_speaker_lines(text.strip())
        return HistoryItem("assistant", f"{label}: {body}", ordinal=ev.ordinal)
    if kind is EventKind.TOOL_CALL:
        name = ev.tool_name or "tool"
        body = quote_speaker_lines(clip_middle(text.strip(), HISTORY_TOOL_CHARS))
        opens = (ev.call_id,) if ev.call_id else ()
        return HistoryItem(
            "assistant", f"Assistant called {name}: {body}", opens=opens, ordinal=ev.ordinal
        )
    if kind is EventKind.TOOL_RESULT:
        label = f"Tool result ({ev.tool_name})" if ev.tool_name else "Tool result"
        if ev.payload.get("is_error"):
            label += " [error]"
        body = quote_speaker_lines(clip_middle(text.strip(), HISTORY_TOOL_CHARS))
        answers = (ev.call_id,) if ev.call_id else ()
        return HistoryItem("tool", f"{label}: {body}", answers=answers, ordinal=ev.ordinal)
    if kind is EventKind.COMPACTION:
        body = quote_speaker_lines(clip_middle(text.strip(), HISTORY_TOOL_CHARS))
        return HistoryItem("system", f"[Earlier context was compacted: {body}]", ordinal=ev.ordinal)
    if kind is EventKind.ATTACHMENT:
        body = quote_speaker_lines(clip_middle(text.strip(), HISTORY_TOOL_CHARS))
        return HistoryItem("user", f"Attachment: {body}", ordinal=ev.ordinal)
    return None  # THINKING, META


def _from_dict(msg: Mapping[str, Any], index: int) -> HistoryItem | None:
    role = str(msg.get("role") or "")
    if role in ("system", "developer"):
        return None
    lines: list[str] = []
    opens: list[str] = []
    answers: list[str] = []
    speaker = {"user": "User", "assistant": "Assistant"}.get(role, "Tool result")
    if role in ("user", "assistant") and (named := clean_speaker(msg.get("name"))):
        speaker = f"{named} ({role})"
    content = msg.get("content")
    if isinstance(content, str):
        text = content.strip()
        if text:
            lines.append(text)
    elif isinstance(content, list):
        _parts(content, lines, opens, answers)
    for call in msg.get("tool_calls") or ():
        if isinstance(call, Mapping):
            fn = call.get("function") or {}
            name = fn.get("name", "tool") if isinstance(fn, Mapping) else "tool"
            args = fn.get("arguments", "") if isinstance(fn, Mapping) else ""
            lines.append(f"[called {name}: {clip_middle(str(args), HISTORY_TOOL_CHARS)}]")
            if call.get("id"):
                opens.append(str(call["id"]))
    if role == "tool":
        if msg.get("tool_call_id"):
            answers.append(str(msg["tool_call_id"]))
        name = msg.get("name")
        speaker = f"Tool result ({name})" if name else "Tool result"
        lines = [clip_middle("\n".join(lines), HISTORY_TOOL_CHARS)] if lines else []
    if not lines:
        return None
    body = quote_speaker_lines("\n".join(lines))
    return HistoryItem(role or "user", f"{speaker}: {body}", tuple(opens), tuple(answers))


def _parts(parts: Sequence[Any], lines: list[str], opens: list[str], answers: list[str]) -> None:
    for part in parts:
        if isinstance(part, str):
            lines.append(part.strip())
            continue
        if not isinstance(part, Mapping):
            continue
        kind = part.get("type")
        if kind == "text" and isinstance(part.get("text"), str):
            lines.append(part["text"].strip())
        elif kind == "tool_use":
            lines.append(
                f"[called {part.get('name', 'tool')}: "
                f"{clip_middle(str(part.get('input', '')), HISTORY_TOOL_CHARS)}]"
            )
            if part.get("id"):
                opens.append(str(part["id"]))
        elif kind == "tool_result":
            inner = part.get("content")
            if isinstance(inner, list):
                inner = " ".join(str(p.get("text", "")) for p in inner if isinstance(p, Mapping))
            lines.append(f"[tool result: {clip_middle(str(inner or ''), HISTORY_TOOL_CHARS)}]")
            if part.get("tool_use_id"):
                answers.append(str(part["tool_use_id"]))
    lines[:] = [line for line in lines if line]


def cut_allowed(items: Sequence[HistoryItem]) -> list[bool]:
    """``allowed[i]`` is True when an episode may start at item ``i`` (``allowed[0]`` is
    always True): no tool call issued before ``i`` is answered at or after ``i``.
    A call that is never answered constrains nothing. Each answer pairs with the nearest
    open call of its id before it: some servers and copied histories reuse ids, and
    pairing the first opening with the last answer glued everything between into one
    episode far over its budget."""
    n = len(items)
    open_at: dict[str, int] = {}
    blocked = [0] * (n + 1)  # difference array over cut positions
    for i, item in enumerate(items):
        for cid in item.answers:
            start = open_at.pop(cid, None)
            if start is not None and i > start:
                blocked[start + 1] += 1
                blocked[i + 1] -= 1
        for cid in item.opens:
            open_at[cid] = i
    allowed: list[bool] = []
    depth = 0
    for i in range(n):
        depth += blocked[i]
        allowed.append(i == 0 or depth == 0)
    return allowed


SEPARATOR = "\n\n"


@dataclass(frozen=True, slots=True)
class Episode:
    """A contiguous run of items, rendered. ``preferred`` are the character offsets of
    message boundaries outside any tool pair, ``acceptable`` the other message boundaries
    (both used to cut the episode in half after a truncation)."""

    index: int
    text: str
    tokens: int
    start: int  # first item (index into the normalised history)
    end: int  # one past the last item
    preferred: tuple[int, ...] = ()
    acceptable: tuple[int, ...] = ()
    last_ordinal: int | None = None
    last_index: int = -1  # history position of the last item


def pack(sizes: Sequence[int], allowed: Sequence[bool], budget: int) -> list[tuple[int, int]]:
    """Cut items of the given token ``sizes`` into ``[start, end)`` ranges, only where
    ``allowed`` (a cut before item i needs ``allowed[i]``). Each range stays within
    ``budget`` unless one indivisible group alone exceeds it; ranges aim at equal size
    (``total / ceil(total / budget)``) so the last one is not a sliver."""
    n = len(sizes)
    if n == 0:
        return []
    groups: list[tuple[int, int, int]] = []  # (start, end, tokens) of indivisible groups
    for i in range(n):
        if i == 0 or allowed[i]:
            groups.append((i, i + 1, sizes[i]))
        else:
            s, _, t = groups[-1]
            groups[-1] = (s, i + 1, t + sizes[i])
    total = sum(sizes)
    target = total / max(1, math.ceil(total / max(1, budget)))
    out: list[tuple[int, int]] = []
    cur_start, cur_tokens = 0, 0
    for start, end, tokens in groups:
        if cur_tokens > 0:
            over = cur_tokens + tokens > budget
            farther = abs(cur_tokens + tokens - target) > abs(cur_tokens - target)
            if over or (farther and cur_tokens >= target / 2):
                out.append((cur_start, start))
                cur_start, cur_tokens = start, 0
        cur_tokens += tokens
        _ = end
    out.append((cur_start, n))
    return out


def _fit(item: HistoryItem, tokens: int, budget: int) -> HistoryItem:
    if tokens <= budget:
        return item
    keep = safe_cut(item.text, max(1, len(item.text) * budget // tokens))
    omitted = len(item.text) - keep
    text = f"{item.text[:keep]} […{omitted} characters omitted…]"
    return replace(item, text=text)


def build_episodes(
    items: Sequence[HistoryItem], counter: TokenCounter, budget: int
) -> list[Episode]:
    """Episodes of at most ``budget`` tokens each, cut at message boundaries and never
    inside a tool call/result pair; a single message longer than the budget is clipped."""
    fitted: list[HistoryItem] = []
    sizes: list[int] = []
    for item in items:
        tokens = counter.count(item.text)
        if tokens > budget:
            item = _fit(item, tokens, budget)
            tokens = counter.count(item.text)
        fitted.append(item)
        sizes.append(tokens + 1)  # + the separator
    allowed = cut_allowed(fitted)
    episodes: list[Episode] = []
    for index, (start, end) in enumerate(pack(sizes, allowed, budget)):
        offsets: list[tuple[int, bool]] = []
        pos = 0
        for i in range(start, end):
            if i > start:
                offsets.append((pos, allowed[i]))
            pos += len(fitted[i].text) + len(SEPARATOR)
        ordinals = [it.ordinal for it in fitted[start:end] if it.ordinal is not None]
        episodes.append(
            Episode(
                index=index,
                text=SEPARATOR.join(it.text for it in fitted[start:end]),
                tokens=sum(sizes[start:end]),
                start=start,
                end=end,
                preferred=tuple(o for o, ok in offsets if ok),
                acceptable=tuple(o for o, ok in offsets if not ok),
                last_ordinal=ordinals[-1] if ordinals else None,
                last_index=fitted[end - 1].index,
            )
        )
    return episodes


def run_scope(
    sizes: Sequence[int], *, incremental: bool, max_tokens: int, max_episodes: int
) -> int | None:
    """How many leading episodes one run summarizes. A full run takes all of them or,
    beyond ``max_tokens`` / ``max_episodes``, none (None: refuse, point to incremental
    mode; :func:`full_run_refusal` says which limit). An incremental run takes the longest
    prefix within both limits (at least one episode), and the caller runs again for the
    rest."""
    if not incremental:
        if sum(sizes) > max_tokens or len(sizes) > max_episodes:
            return None
        return len(sizes)
    taken, total = 0, 0
    for size in sizes:
        if taken and (taken >= max_episodes or total + size > max_tokens):
            break
        taken += 1
        total += size
    return taken


def full_run_refusal(
    tokens: int,
    episodes: int,
    *,
    max_tokens: int,
    max_episodes: int,
    episode_tokens: int,
    incremental: str,
) -> str | None:
    """Why a full run over ``episodes`` episodes of ``tokens`` in all is refused (as
    :func:`run_scope` refuses it) — the limit it passes, and what to do — or None when it
    passes neither; ``incremental`` names the way to ask for an incremental run. The
    episode cap is fixed (it keeps a full run's calls within the attempt budget); past it
    alone, fewer and larger episodes (``MEMOIR_EPISODE_TOKENS``) would do too: the size
    suggested leaves a tenth to spare, since episodes are cut only between messages."""
    over_tokens, over_episodes = tokens > max_tokens, episodes > max_episodes
    if not (over_tokens or over_episodes):
        return None
    guard = "MEMOIR_EPISODE_MAX_FULL_TOKENS"
    cap = f"more than the {max_episodes} episodes a full regeneration takes at most"
    if over_tokens:
        reason = f"beyond the full-regeneration guard of {max_tokens:,} tokens ({guard})" + (
            f" and {cap}" if over_episodes else ""
        )
    else:
        reason = f"{cap} (a fixed cap; the tokens are within {guard}={max_tokens:,})"
    advice = (
        f"use incremental compression instead ({incremental}), which summarizes the "
        "history part by part and merges each part in"
    )
    if not over_tokens:
        enough = math.ceil(tokens * 1.1 / max(1, max_episodes) / 1000) * 1000
        enough = max(enough, episode_tokens + 1000)
        advice += (
            f", or make episodes larger and fewer: MEMOIR_EPISODE_TOKENS={enough:,} "
            f"(now {episode_tokens:,})"
        )
    return f"{tokens:,} tokens in {episodes} episodes, {reason}; {advice}"
