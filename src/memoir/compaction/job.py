"""One compaction run: the summary path and the truncate backstop over a fixed history.

:class:`Job` holds what a run works on (messages, cached counts, the budget, the replayed
checkpoint); :func:`summary_outcome` tries a summary, :func:`truncate_outcome` is the
backstop that always makes progress. Only ``summary_outcome`` performs I/O (the model).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from memoir.compaction.budget import Budget
from memoir.compaction.checkpoints import Replay
from memoir.compaction.plan import (
    assemble,
    fit_by_stand_ins,
    head_text,
    pin_index,
    pin_indices,
    split_head,
    summary_cut,
    truncate_cuts,
)
from memoir.compaction.request import build_summary_request
from memoir.compaction.sequence import Message, units
from memoir.compaction.standin import replaced
from memoir.compaction.summarize import SummaryOutcome, summarize
from memoir.compaction.tokens import MESSAGE_OVERHEAD, MessageCounter, content_tokens
from memoir.compaction.values import CompactionResult, Omission, Strategy
from memoir.errors import CompactionError
from memoir.llm.port import Model

__all__ = ["Job", "Outcome", "summary_outcome", "truncate_outcome"]


@dataclass
class Outcome:
    strategy: Strategy
    summary: str | None  # the new summary (summary strategy only)
    start: int  # first message kept verbatim in the tail; watermark = start - 1
    context: list[dict[str, Any]] = field(default_factory=list)
    tokens: int = 0
    replacements: dict[int, Message] = field(default_factory=dict)
    pin: int | None = None
    request_omitted: tuple[Omission, ...] = ()
    reason: str | None = None
    budgets: tuple[int, ...] = ()
    head: str | None = None  # the summary heading the context (what a replay restores)

    @property
    def kept(self) -> list[int]:
        return [self.pin] if self.pin is not None else []


@dataclass
class Job:
    messages: list[Message]
    positions: Sequence[int]
    counts: list[int]
    tool_names: dict[int, str]  # tool result index -> tool name
    system_count: int
    budget: Budget
    replay: Replay | None
    start0: int
    prev_summary: str | None
    rep0: dict[int, Message]
    tokens: MessageCounter
    session_id: str | None

    def assemble(
        self, summary: str | None, start: int, rep: Mapping[int, Message] | None = None
    ) -> list[dict[str, Any]]:
        return assemble(self.messages, self.system_count, summary, start, rep)

    def stand_in_for(self, i: int) -> Message:
        m = self.messages[i]
        name = self.tool_names.get(i)
        return replaced(m, content_tokens(self.counts[i]), tool_name=name)

    def fit(self, summary: str | None, start: int) -> Outcome:
        """The context for ``start``, made to fit below the threshold with stand-ins."""
        pin = pin_index(self.messages, self.system_count, start, summary is not None)
        cands = list(range(start, len(self.messages))) + ([pin] if pin is not None else [])
        context, reps, tokens = fit_by_stand_ins(
            cands,
            {i: self.counts[i] for i in cands},
            lambda rep: self.assemble(summary, start, rep),
            self.tokens.total,
            self.stand_in_for,
            self.budget.threshold,
        )
        return Outcome("truncate", None, start, context, tokens, reps, pin, head=summary)

    def result(
        self,
        strategy: Strategy,
        context: list[dict[str, Any]],
        before: int,
        after: int,
        *,
        removed: int,
        omitted: tuple[Omission, ...] = (),
        outcome: Outcome | None = None,
    ) -> CompactionResult:
        b = self.budget
        return CompactionResult(
            messages=context,
            strategy=strategy,
            tokens_before=before,
            tokens_after=after,
            removed_count=removed,
            omitted=omitted,
            window=b.window,
            threshold=b.threshold,
            ratio=b.ratio,
            threshold_source=b.ratio_source,
            cap=b.message_cap,
            output_budget=outcome.budgets[-1] if outcome and outcome.budgets else None,
            replayed_from=self.replay.checkpoint_id if self.replay else None,
            summary=outcome.summary if outcome else None,
            reason=outcome.reason if outcome else None,
            model_calls=len(outcome.budgets) if outcome else 0,
            budgets_tried=outcome.budgets if outcome else (),
        )

    def finish(self, outcome: Outcome, before: int) -> CompactionResult:
        n = len(self.messages)
        pin0 = pin_index(
            self.messages, self.system_count, self.start0, self.prev_summary is not None
        )
        was = set(range(self.start0, n)) | ({pin0} if pin0 is not None else set())
        now = set(range(outcome.start, n)) | set(outcome.kept)
        in_context = tuple(
            Omission(
                position=self.positions[i],
                role=str(self.messages[i].get("role")),
                tool=_tool_of(self, i),
                tokens=content_tokens(self.counts[i]),
                where="context",
            )
            for i in sorted(outcome.replacements)
        )
        return self.result(
            outcome.strategy,
            outcome.context,
            before,
            outcome.tokens,
            removed=len(was - now),
            omitted=outcome.request_omitted + in_context,
            outcome=outcome,
        )


def _tool_of(job: Job, i: int) -> str | None:
    m = job.messages[i]
    if m.get("role") == "tool":
        return job.tool_names.get(i) or "tool"
    calls = m.get("tool_calls") or []
    return ",".join(str((c.get("function") or {}).get("name") or "tool") for c in calls) or None


def summary_outcome(job: Job, model: Model | None) -> Outcome:
    """Cut, ask for the summary (with the ladder), assemble and fit. ``summary`` is None
    on any failure, with the reason and the budgets tried."""
    us = units(job.messages, job.start0)
    if not us:
        return Outcome("truncate", None, job.start0, reason="nothing new to summarize")
    unit_tokens = [sum(job.counts[u.start : u.stop]) for u in us]
    cut = summary_cut(unit_tokens, 0, job.budget.tail_budget)
    start = us[cut].start if cut < len(us) else len(job.messages)
    covered: list[tuple[int, Message]] = [(i, job.messages[i]) for i in range(job.start0, start)]
    previous = job.prev_summary
    head = split_head(covered[0][1]) if previous is None and covered else None
    if head is not None:  # the caller kept an earlier result as its history
        previous, rest = head
        kept = rest.strip() if isinstance(rest, str) else rest
        first = [(covered[0][0], {"role": "user", "content": rest})] if kept else []
        covered = first + covered[1:]
    plan = build_summary_request(
        covered,
        positions=job.positions,
        tool_names=job.tool_names,
        budget=job.budget,
        previous_summary=previous,
        count=job.tokens.text,
        message_tokens=lambda i: content_tokens(job.counts[i]),
        session=job.session_id,
    )
    if plan is None:
        reason = "the user's own messages alone do not fit a summary request"
        return Outcome("truncate", None, start, reason=reason)
    if model is None:
        got = SummaryOutcome(None, "no summarizer model", ())
    else:
        got = summarize(model, plan.request)
    if got.summary is None:
        return Outcome(
            "truncate",
            None,
            start,
            request_omitted=plan.omitted,
            reason=got.reason,
            budgets=got.budgets,
        )
    out = job.fit(got.summary, start)
    out.strategy, out.summary = "summary", got.summary
    out.request_omitted, out.budgets = plan.omitted, got.budgets
    if out.tokens >= job.budget.threshold:
        out.summary, out.reason = None, "summarized context still over the threshold"
    return out


def truncate_outcome(job: Job, failed: Outcome) -> Outcome:
    """Drop the oldest units until the context is below half the threshold (headroom
    against compacting again next turn); the newest unit stays, replaced by stand-ins if
    that is what it takes; as the last resort only the pinned user message remains. The
    previous summary stays — from the replayed checkpoint, or from an earlier result the
    caller kept as its history (its head message, which is then always dropped)."""
    head = job.prev_summary
    us = units(job.messages, job.start0)
    n = len(job.messages)
    cuts = truncate_cuts(len(us), 0)
    starts = [us[c].start if c < len(us) else n for c in cuts]
    earlier = split_head(job.messages[job.start0]) if head is None and job.start0 < n else None
    if earlier is not None:  # the caller kept an earlier result: carry its summary along
        head = earlier[0]
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
            context = job.assemble(head, s)
            tokens = job.tokens.total(context)
            chosen = Outcome("truncate", None, s, context, tokens, {}, pin, head=head)
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
    chosen.reason = failed.reason
    chosen.request_omitted, chosen.budgets = failed.request_omitted, failed.budgets
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
