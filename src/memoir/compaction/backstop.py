"""The truncate backstop: no usable summary, and the context must still end below the
threshold. Pure (it never calls the model); it always makes progress or says, in one
line, why even the least context compaction can keep does not fit."""

from __future__ import annotations

from memoir.compaction.job import Job, Outcome
from memoir.compaction.plan import head_text, pin_indices, split_head, truncate_cuts
from memoir.compaction.sequence import units
from memoir.compaction.tokens import MESSAGE_OVERHEAD
from memoir.errors import CompactionError

__all__ = ["truncate_outcome"]


def truncate_outcome(job: Job, failed: Outcome) -> Outcome:
    """No usable summary: keep the tail the summary path planned (stand-ins and all) when
    that fits, else drop the oldest units until the context is below half the threshold
    (headroom against compacting again next turn); the newest unit stays, replaced by
    stand-ins if that is what it takes; as the last resort only the pinned user message
    remains. The previous summary stays — from the replayed checkpoint, or from an earlier
    result the caller kept as its history (its head message, which is then always
    dropped)."""
    head = job.prev_summary
    n = len(job.messages)
    earlier = split_head(job.messages[job.start0]) if head is None and job.start0 < n else None
    if earlier is not None:  # the caller kept an earlier result: carry its summary along
        head = earlier[0]
    chosen: Outcome | None = None
    if failed.start > job.start0:
        planned = job.fit(head, failed.start, failed.replacements)
        if planned.tokens < job.budget.threshold:
            chosen = planned
    if chosen is None:
        chosen = _drop_oldest(job, head, earlier is not None)
    chosen.strategy, chosen.summary, chosen.failed = "truncate", None, False
    chosen.reason, chosen.budgets = failed.reason, failed.budgets
    return chosen


def _drop_oldest(job: Job, head: str | None, drop_first: bool) -> Outcome:
    us = units(job.messages, job.start0)
    n = len(job.messages)
    cuts = truncate_cuts(len(us), 0)
    starts = [us[c].start if c < len(us) else n for c in cuts]
    if drop_first:
        starts = [s if s > job.start0 else min(job.start0 + 1, n) for s in starts]
    pins = pin_indices(job.messages, job.system_count, head is not None)
    suffix = [0] * (n + 1)
    for i in range(n - 1, -1, -1):
        suffix[i] = suffix[i + 1] + job.counts[i]
    fixed = suffix[0] - suffix[job.system_count]
    if head is not None:
        fixed += job.tokens.text(head_text(head)) + MESSAGE_OVERHEAD
    goal = job.budget.threshold // 2
    keep_newest = [s for c, s in zip(cuts, starts, strict=True) if c < len(us)] or starts
    chosen: Outcome | None = None
    for s in keep_newest:
        pin = pins[s]
        estimate = fixed + suffix[s] + (job.counts[pin] if pin is not None else 0)
        if estimate < goal:
            chosen = job.at("truncate", head, s, {})
            if chosen.tokens < job.budget.threshold:
                break
            chosen = None
    if chosen is None:
        chosen = job.fit(head, keep_newest[-1])
    if chosen.tokens >= job.budget.threshold:
        chosen = job.fit(head, n)
    if chosen.tokens >= job.budget.threshold and head is not None:
        chosen = job.fit(None, n)  # a smaller window than the previous summary was written for
    if chosen.tokens >= job.budget.threshold:
        raise CompactionError(_no_room(job, chosen))
    return chosen


def _no_room(job: Job, least: Outcome) -> str:
    """Why even the least context compaction can keep does not fit, naming what is left."""
    threshold = job.budget.threshold
    system = [m for m in least.context if m.get("role") == "system"]
    system_tokens = job.tokens.total(system) if system else 0
    if system_tokens >= threshold:
        return (
            f"the system prompt alone is {system_tokens} tokens against a threshold of "
            f"{threshold}; raise the window or shorten the system prompt"
        )
    parts = f"the system prompt of {system_tokens} tokens, " if system else ""
    return (
        f"even at the least compaction keeps ({parts}the newest message and any note of what "
        f"was left out) the context is {least.tokens} tokens, over the threshold of "
        f"{threshold} (the window × MEMOIR_COMPACT_THRESHOLD_RATIO); raise the window"
    )
