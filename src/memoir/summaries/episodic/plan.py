"""Pure decisions of a run: how to cut a history into episodes, how much of it one run
takes on, and what to do after a failed call."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, replace
from enum import StrEnum

from memoir.llm import port as llm_errors
from memoir.llm.port import TokenCounter
from memoir.summaries.episodic.history import Item, cut_allowed
from memoir.summaries.episodic.shape import UnusableAnswer
from memoir.summaries.episodic.text import safe_cut

__all__ = [
    "SEPARATOR",
    "Action",
    "Episode",
    "build_episodes",
    "full_run_refusal",
    "next_action",
    "pack",
    "retry_delay",
    "run_scope",
]

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


def _fit(item: Item, tokens: int, budget: int) -> Item:
    if tokens <= budget:
        return item
    keep = safe_cut(item.text, max(1, len(item.text) * budget // tokens))
    omitted = len(item.text) - keep
    text = f"{item.text[:keep]} […{omitted} characters omitted…]"
    return replace(item, text=text)


def build_episodes(items: Sequence[Item], counter: TokenCounter, budget: int) -> list[Episode]:
    """Episodes of at most ``budget`` tokens each, cut at message boundaries and never
    inside a tool call/result pair; a single message longer than the budget is clipped."""
    fitted: list[Item] = []
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


class Action(StrEnum):
    SPLIT = "split"  # an episode truncated with partial output: cut it in two, once
    FALLBACK = "fallback"  # refused: the same request once on the fallback model
    RETRY = "retry"  # transient: the same request again on the same model
    FAIL = "fail"  # nothing more to try


def next_action(exc: BaseException, *, can_split: bool) -> Action:
    """The decision table after a failed call (``can_split``: an episode, not a half or
    the merge). Authentication, permission and credit errors never switch model."""
    if isinstance(exc, llm_errors.Truncated):
        return Action.SPLIT if can_split and exc.partial.strip() else Action.FAIL
    if isinstance(exc, llm_errors.Refused):
        return Action.FALLBACK
    if isinstance(exc, llm_errors.AuthError):
        return Action.FAIL
    retryable = (
        llm_errors.RateLimited,
        llm_errors.Transient,
        llm_errors.EmptyResponse,
        llm_errors.BadResponse,
        UnusableAnswer,
    )
    if isinstance(exc, retryable):
        return Action.RETRY
    return Action.FAIL


MAX_RETRY_AFTER_S = 60.0  # a provider asking for a longer wait ends the retries at once


def retry_delay(
    retry: int, *, base: float, cap: float = 8.0, retry_after: float | None
) -> float | None:
    """Seconds to wait before retry number ``retry`` (1-based): the provider's
    ``retry_after`` when given — never less than it asked, and None (do not retry) when it
    asks for more than :data:`MAX_RETRY_AFTER_S` — else exponential from ``base`` up to
    ``cap``."""
    if retry_after is not None and retry_after >= 0:
        return retry_after if retry_after <= MAX_RETRY_AFTER_S else None
    return min(cap, base * (2 ** (retry - 1)))
