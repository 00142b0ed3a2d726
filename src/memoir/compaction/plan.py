"""Pure planning: where to cut, how the new context is assembled, how it is made to fit.

The compacted context is ``system messages + [head] + tail``:

* the head is one user message holding the summary; when the latest user message lies
  before the cut it is carried verbatim inside the head (the user's own words are never
  lost), and when the tail opens with a user message that message is joined to the head
  (so roles still alternate for APIs that require it — Anthropic joins consecutive user
  turns the same way);
* without a summary (the truncate backstop) the head is absent, and the tail either opens
  with a user message or is preceded by the last user message before it, kept verbatim;
* the tail is whole units (a user message, or an assistant message with all its tool
  results), so a tool call and its results stay together or go together
  (:func:`tail_plan`): the most recent messages, verbatim, up to the tail budget; a
  message larger than the whole budget, and tool output that does not fit what is left
  of it, is kept as its stand-in and the walk goes on past it (its neighbours stay); the
  first user or assistant message that does not fit ends the tail.

The numbers of compaction: threshold, summary output budget, per-message cap, ladder.

All pure. The reasoning behind each number (from the compaction-message-cap seed):

* ``threshold = int(window × ratio)`` (ratio 0.75 by default): compaction starts at or above
  it and always ends strictly below it.
* ``output budget = clamp(threshold // 4, 256, 8192)``: providers cap output far below
  input, hence the ceiling.
* ``per-message cap = max(threshold // 4, MESSAGE_CAP_FLOOR)``: no single message may claim
  more of the summary request than the whole summary may produce. The floor is 2048
  tokens: a message that small (≈ 8 KB of text) never exhausted a window, so it stops a
  tiny threshold from capping everything to nothing, and it stops binding exactly when the
  threshold clears 8192 — i.e. for every realistic model. There is deliberately no
  ceiling: nothing limits one input message except the window it has to fit in.
* Budget ladder: on an output-budget rejection retry with 4096, 2048, 1024, 256 — only
  budgets below the one rejected — and stop at the first accepted.
* ``tail budget = int(threshold × tail ratio)`` (``MEMOIR_COMPACT_TAIL_RATIO``, 0.5 by
  default, below 0.75): the most recent messages kept verbatim after a compaction. With
  the summary's quarter that leaves at least a quarter of the threshold for the turns
  before the next compaction (at 0.5: 6,000 of 24,000 tokens in a 32k window, and usually
  more — a summary seldom takes all of its budget), while the agent keeps the last half
  of what it was working with word for word.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, cast

from memoir.compaction.sequence import Message
from memoir.errors import CompactionError

__all__ = [
    "DEFAULT_RATIO",
    "DEFAULT_TAIL_RATIO",
    "LADDER",
    "MESSAGE_CAP_FLOOR",
    "OUTPUT_BUDGET_MAX",
    "OUTPUT_BUDGET_MIN",
    "SUMMARY_HEADER",
    "Budget",
    "TailPlan",
    "assemble",
    "fit_by_stand_ins",
    "head_text",
    "ladder_after",
    "message_cap",
    "output_budget",
    "pin_index",
    "pin_indices",
    "split_head",
    "summary_cut",
    "tail_plan",
    "threshold_for",
    "truncate_cuts",
]

DEFAULT_RATIO = 0.75
DEFAULT_TAIL_RATIO = 0.5
OUTPUT_BUDGET_MIN = 256
OUTPUT_BUDGET_MAX = 8192
MESSAGE_CAP_FLOOR = 2048
LADDER: tuple[int, ...] = (4096, 2048, 1024, 256)


def threshold_for(window: int, ratio: float) -> int:
    """The token count at which a context of ``window`` tokens is compacted."""
    if isinstance(window, bool) or not isinstance(window, int) or window <= 0:
        raise CompactionError(f"the context window must be a positive token count, not {window!r}")
    if not 0.0 < ratio <= 1.0:
        raise CompactionError(f"the compaction threshold ratio must be in (0, 1], not {ratio}")
    return max(1, int(window * ratio))


def output_budget(threshold: int) -> int:
    """max_tokens of the summary request: clamp(threshold // 4, 256, 8192)."""
    return min(OUTPUT_BUDGET_MAX, max(OUTPUT_BUDGET_MIN, threshold // 4))


def message_cap(threshold: int) -> int:
    """Largest single transcript message sent whole to the summarizer (floor, no ceiling)."""
    return max(MESSAGE_CAP_FLOOR, threshold // 4)


def ladder_after(rejected: int) -> int | None:
    """The next output budget to try after ``rejected`` was refused, or None when spent."""
    for step in LADDER:
        if step < rejected:
            return step
    return None


@dataclass(frozen=True, slots=True)
class Budget:
    """Every number one compaction runs with, and where the threshold came from."""

    window: int
    ratio: float
    ratio_source: str
    threshold: int
    output_budget: int
    message_cap: int
    tail_budget: int

    @classmethod
    def of(
        cls,
        window: int,
        ratio: float = DEFAULT_RATIO,
        ratio_source: str = "default",
        tail_budget: int | None = None,
        tail_ratio: float = DEFAULT_TAIL_RATIO,
    ) -> Budget:
        """``tail_budget`` (tokens) overrides ``tail_ratio`` (a share of the threshold)."""
        threshold = threshold_for(window, ratio)
        if not 0.0 <= tail_ratio < 1.0:
            raise CompactionError(f"the tail ratio must be in [0, 1), not {tail_ratio}")
        tail = int(threshold * tail_ratio) if tail_budget is None else max(0, tail_budget)
        return cls(
            window=window,
            ratio=ratio,
            ratio_source=ratio_source,
            threshold=threshold,
            output_budget=output_budget(threshold),
            message_cap=message_cap(threshold),
            tail_budget=min(tail, threshold - 1),
        )


SUMMARY_HEADER = (
    "[Summary of the earlier conversation, written when the context was compacted. "
    "The messages after this one are verbatim.]"
)


def head_text(summary: str) -> str:
    return f"{SUMMARY_HEADER}\n\n<summary>\n{summary.strip()}\n</summary>"


def split_head(message: Message) -> tuple[str, Any] | None:
    """(summary, the user content joined after it) when ``message`` is a head this module
    assembled — so a caller who keeps ``result.messages`` as its history still rolls
    forward from the summary instead of summarizing a summary; None otherwise. The content
    after it is text, or a part list when the head carries media (an image the user sent
    with the message it was joined to)."""
    content = message.get("content")
    if message.get("role") != "user":
        return None
    rest_parts: list[Any] = []
    if isinstance(content, list) and content and isinstance(content[0], Mapping):
        first = content[0].get("text")
        rest_parts = list(content[1:])
        content = first
    if not isinstance(content, str):
        return None
    opening = f"{SUMMARY_HEADER}\n\n<summary>\n"
    end = content.find("\n</summary>")
    if not content.startswith(opening) or end < 0:
        return None
    summary, after = content[len(opening) : end], content[end + len("\n</summary>") :].lstrip("\n")
    if not rest_parts:
        return summary, after
    lead = [{"type": "text", "text": after}] if after.strip() else []
    return summary, [*lead, *rest_parts]


def _last_user(messages: Sequence[Message], lo: int, hi: int) -> int | None:
    for i in range(hi - 1, lo - 1, -1):
        if messages[i].get("role") == "user":
            return i
    return None


def pin_index(
    messages: Sequence[Message], system_count: int, start: int, has_head: bool
) -> int | None:
    """The user message before ``start`` that must be kept verbatim, if any.

    With a head: the latest user message when none remains at or after ``start``.
    Without one: the last user message before ``start`` when the tail opens with an
    assistant message (the first non-system message must be a user message).
    """
    if start >= len(messages) or messages[start].get("role") != "user":
        tail_has_user = _last_user(messages, start, len(messages)) is not None
        if has_head and tail_has_user:
            return None
        return _last_user(messages, system_count, start)
    return None


def pin_indices(messages: Sequence[Message], system_count: int, has_head: bool) -> list[int | None]:
    """``pin_index`` for every start ``0..len(messages)`` in one pass (O(n))."""
    n = len(messages)
    prev_user: list[int | None] = [None] * (n + 1)
    last: int | None = None
    for i in range(n + 1):
        prev_user[i] = last if last is not None and last >= system_count else None
        if i < n and messages[i].get("role") == "user":
            last = i
    user_from = [False] * (n + 1)
    for i in range(n - 1, -1, -1):
        user_from[i] = user_from[i + 1] or messages[i].get("role") == "user"
    out: list[int | None] = []
    for s in range(n + 1):
        if (s < n and messages[s].get("role") == "user") or (has_head and user_from[s]):
            out.append(None)
        else:
            out.append(prev_user[s])
    return out


def _join(parts: Sequence[Any]) -> Any:
    if all(isinstance(p, str) for p in parts):
        return "\n\n".join(parts)
    out: list[Any] = []
    for p in parts:
        if isinstance(p, str):
            out.append({"type": "text", "text": p})
        else:
            out.extend(p)
    return out


def assemble(
    messages: Sequence[Message],
    system_count: int,
    summary: str | None,
    start: int,
    replacements: Mapping[int, Message] | None = None,
) -> list[dict[str, Any]]:
    """The context: system messages, the head (when ``summary`` is not None), the tail
    ``messages[start:]``; ``replacements`` swaps messages for their stand-in copies."""
    rep = replacements or {}

    def pick(i: int) -> dict[str, Any]:
        # the caller's own objects, not copies: their cached token counts stay valid
        return cast(dict[str, Any], rep.get(i, messages[i]))

    out = [cast(dict[str, Any], m) for m in messages[:system_count]]
    tail = [pick(i) for i in range(start, len(messages))]
    pin = pin_index(messages, system_count, start, summary is not None)
    if summary is None:
        if pin is not None:
            out.append(pick(pin))
        out.extend(tail)
        return out
    parts: list[Any] = [head_text(summary)]
    if pin is not None:
        pinned = pick(pin)
        earlier = split_head(pinned)  # an earlier head kept in-band: only its user text
        text = earlier[1] if earlier is not None else pinned.get("content") or ""
        if text:
            parts.append(text)
    if tail and tail[0].get("role") == "user":
        parts.append(tail[0].get("content") or "")
        tail = tail[1:]
    out.append({"role": "user", "content": _join(parts)})
    out.extend(tail)
    return out


def summary_cut(unit_tokens: Sequence[int], first: int, tail_budget: int) -> int:
    """Index of the first unit kept verbatim: the most recent units that fit
    ``tail_budget``, covering at least unit ``first`` (so a compaction always removes
    something). May equal ``len(unit_tokens)``: everything covered by the summary."""
    n = len(unit_tokens)
    cut = n
    used = 0
    while cut - 1 > first and used + unit_tokens[cut - 1] <= tail_budget:
        cut -= 1
        used += unit_tokens[cut]
    return max(cut, min(first + 1, n))


@dataclass(frozen=True, slots=True)
class TailPlan:
    """The verbatim tail: messages ``[start, n)``, those in ``stand_ins`` kept as their
    stand-ins; ``tokens`` is what it costs (stand-ins at their own size)."""

    start: int
    stand_ins: frozenset[int]
    tokens: int


def tail_plan(
    roles: Sequence[str],
    counts: Sequence[int],
    lo: int,
    budget: int,
    stand_in_cost: Callable[[int], int],
    stood_in: Collection[int] = (),
    latest_user: int | None = None,
    tool_output: Collection[int] = (),
) -> TailPlan:
    """The tail kept after ``lo`` (a unit start): a walk from the newest message back.

    * a message that fits what is left of ``budget`` is kept verbatim;
    * a message larger than the whole budget (it could never be kept verbatim), one in
      ``stood_in`` (stood in by the checkpoint replayed), and tool output — a tool result
      or a tool call, ``tool_output`` — that does not fit what is left, is kept as its
      stand-in when that fits: the walk goes on past it, so the messages around it stay
      and the tail fills its budget (the calls an agent made, and how they ended, stay in
      view while their bulk goes);
    * the latest user message (``latest_user``) is never stood in here: when it does not
      fit, the walk ends before it and the head carries it verbatim (:func:`pin_index`);
    * the first other message (user or assistant prose) that does not fit ends the walk:
      it is summarized, read whole. Should the tail then open inside a unit (on a tool
      result), the unit's earlier messages are kept too, each verbatim when it fits, else
      as its stand-in when that is smaller — a tool call and its results are never split.
    """
    n = len(roles)
    used = 0
    stand: set[int] = set()
    i = n - 1
    while i >= lo:
        verbatim = counts[i] <= budget or i == latest_user
        if i in stood_in or not verbatim or (i in tool_output and used + counts[i] > budget):
            cost = stand_in_cost(i)
            if used + cost > budget:
                break
            stand.add(i)
        else:
            cost = counts[i]
            if used + cost > budget:
                break
        used += cost
        i -= 1
    start = i + 1
    if lo < start < n and roles[start] == "tool":
        first = start - 1
        while first > lo and roles[first] == "tool":
            first -= 1
        for j in range(start - 1, first - 1, -1):
            cost = stand_in_cost(j)
            if j in stood_in or (used + counts[j] > budget and cost < counts[j]):
                stand.add(j)
                used += cost
            else:
                used += counts[j]
        start = first
    return TailPlan(start, frozenset(stand), used)


def truncate_cuts(n_units: int, first: int) -> list[int]:
    """Unit indices the truncate backstop may cut at, fewest dropped first.

    Every cut drops at least unit ``first`` when there is more than one unit; the newest
    unit is kept when possible (the most recent activity, stand-in'd if it must be), and
    dropping everything but the pinned user message (``n_units``) is the last resort.
    Any cut is valid: a tail opening with an assistant message is preceded by the last
    user message before it (see :func:`pin_index`).
    """
    if n_units == 0:
        return [0]
    return list(range(min(first + 1, n_units - 1), n_units + 1))


def fit_by_stand_ins(
    candidates: Sequence[int],
    sizes: Mapping[int, int],
    build: Callable[[Mapping[int, Message]], list[dict[str, Any]]],
    measure: Callable[[Sequence[Message]], int],
    stand_in_for: Callable[[int], Message],
    target: int,
    initial: Mapping[int, Message] | None = None,
) -> tuple[list[dict[str, Any]], dict[int, Message], int]:
    """Replace the largest candidates with their stand-ins until ``measure(build(…))``
    is below ``target``, starting from the ``initial`` replacements; returns (context,
    replacements, tokens). Deterministic: ties go to the older message."""
    replacements: dict[int, Message] = dict(initial or {})
    context = build(replacements)
    tokens = measure(context)
    order = sorted(candidates, key=lambda i: (-sizes[i], i))
    for i in order:
        if tokens < target:
            break
        if i in replacements:
            continue
        replacement = stand_in_for(i)
        if measure([replacement]) >= sizes[i]:
            continue  # already smaller than its stand-in
        replacements[i] = replacement
        context = build(replacements)
        tokens = measure(context)
    return context, replacements, tokens
