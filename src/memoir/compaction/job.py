"""One compaction run: the summary path and the truncate backstop over a fixed history.

:class:`CompactionRun` holds what a run works on (messages, cached counts, the budget, the
replayed checkpoint, the stand-ins); :func:`summary_outcome` plans the verbatim tail and
summarizes what comes before it (or, when nothing before it needs summarizing, keeps
everything with the oversized messages stood in); :func:`truncate_outcome` (the backstop below) is
what runs when that fails. Only ``summary_outcome`` performs I/O (the model).

The truncate backstop: no usable summary, and the context must still end below the
threshold. Pure (it never calls the model); it always makes progress or says, in one
line, why even the least context compaction can keep does not fit.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from memoir.compaction.plan import (
    Budget,
    TailPlan,
    assemble,
    fit_by_stand_ins,
    head_text,
    pin_index,
    pin_indices,
    split_head,
    tail_plan,
    truncate_cuts,
)
from memoir.compaction.request import SummaryOutcome, ask_for_summary, build_summary_request
from memoir.compaction.sequence import (
    MESSAGE_FRAME_TOKENS,
    Message,
    MessageCounter,
    content_tokens,
    units,
)
from memoir.compaction.standin import StandIns
from memoir.compaction.values import CompactionResult, Omission, Replay, Strategy, Where
from memoir.errors import CompactionError
from memoir.llm.port import Model

__all__ = [
    "CompactionRun",
    "RunNote",
    "RunOutcome",
    "summary_outcome",
    "truncate_outcome",
]


@dataclass
class RunOutcome:
    strategy: Strategy
    summary: str | None  # the new summary (summary strategy only)
    start: int  # first message kept verbatim in the tail; watermark = start - 1
    context: list[dict[str, Any]] = field(default_factory=list)
    tokens: int = 0
    replacements: dict[int, Message] = field(default_factory=dict)
    pin: int | None = None
    request_omitted: tuple[Omission, ...] = ()
    request_indices: frozenset[int] = frozenset()
    reason: str | None = None
    budgets: tuple[int, ...] = ()
    head: str | None = None  # the summary heading the context (what a replay restores)
    failed: bool = False  # no context: the backstop runs next (``start`` and
    # ``replacements`` are then the tail the summary path planned, if it planned one)

    @property
    def kept(self) -> list[int]:
        return [self.pin] if self.pin is not None else []


@dataclass(frozen=True, slots=True)
class RunNote:
    """Messages of a run of user messages that one note stands for (``sequence.
    shorten_runs``): the note sits in the job's message ``index``."""

    index: int
    position: int
    tokens: int


@dataclass
class CompactionRun:
    messages: list[Message]
    positions: Sequence[int]
    counts: list[int]
    stand_ins: StandIns
    system_count: int
    budget: Budget
    replay: Replay | None
    start0: int
    prev_summary: str | None
    rep0: dict[int, Message]
    tokens: MessageCounter
    session_id: str | None
    run_notes: tuple[RunNote, ...] = ()
    _costs: dict[int, int] = field(default_factory=dict)

    @property
    def tool_names(self) -> dict[int, str]:
        return self.stand_ins.tool_names

    def assemble(
        self, summary: str | None, start: int, rep: Mapping[int, Message] | None = None
    ) -> list[dict[str, Any]]:
        return assemble(self.messages, self.system_count, summary, start, rep)

    def stand_in_for(self, i: int) -> Message:
        return self.stand_ins.context(i)

    def stand_in_cost(self, i: int) -> int:
        if i not in self._costs:
            self._costs[i] = self.tokens.count(self.stand_in_for(i))
        return self._costs[i]

    def tail(self, lo: int, budget: int | None = None) -> TailPlan:
        roles = [str(m.get("role")) for m in self.messages]
        latest = next((i for i in range(len(roles) - 1, -1, -1) if roles[i] == "user"), None)
        tool_output = {
            i for i, m in enumerate(self.messages) if roles[i] == "tool" or m.get("tool_calls")
        }
        return tail_plan(
            roles,
            self.counts,
            lo,
            self.budget.tail_budget if budget is None else budget,
            self.stand_in_cost,
            self.rep0,
            latest,
            tool_output,
        )

    def replacements(self, plan: TailPlan) -> dict[int, Message]:
        return {i: self.stand_in_for(i) for i in sorted(plan.stand_ins)}

    def at(
        self, strategy: Strategy, summary: str | None, start: int, reps: dict[int, Message]
    ) -> RunOutcome:
        """The context for ``start`` as planned, without fitting."""
        pin = pin_index(self.messages, self.system_count, start, summary is not None)
        context = self.assemble(summary, start, reps)
        tokens = self.tokens.total(context)
        return RunOutcome(strategy, summary, start, context, tokens, dict(reps), pin, head=summary)

    def fit(
        self, summary: str | None, start: int, initial: Mapping[int, Message] | None = None
    ) -> RunOutcome:
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
            initial,
        )
        return RunOutcome("truncate", None, start, context, tokens, reps, pin, head=summary)

    def result(
        self,
        strategy: Strategy,
        context: list[dict[str, Any]],
        before: int,
        after: int,
        *,
        removed: int,
        omitted: tuple[Omission, ...] = (),
        outcome: RunOutcome | None = None,
        kept_verbatim: int = 0,
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
            kept_verbatim=kept_verbatim,
            tail_budget=b.tail_budget,
        )

    def unchanged(self, context: list[dict[str, Any]], tokens: int) -> CompactionResult:
        """The result under the threshold: the history as it stands (replayed)."""
        out = RunOutcome("none", None, self.start0, context, tokens, dict(self.rep0))
        out.pin = pin_index(
            self.messages, self.system_count, self.start0, self.prev_summary is not None
        )
        kept, removed, omitted = self._accounts(out)
        return self.result(
            "none", context, tokens, tokens, removed=removed, omitted=omitted, kept_verbatim=kept
        )

    def finish(self, outcome: RunOutcome, before: int) -> CompactionResult:
        kept, removed, omitted = self._accounts(outcome)
        return self.result(
            outcome.strategy,
            outcome.context,
            before,
            outcome.tokens,
            removed=removed,
            omitted=omitted,
            outcome=outcome,
            kept_verbatim=kept,
        )

    def _accounts(self, outcome: RunOutcome) -> tuple[int, int, tuple[Omission, ...]]:
        """(kept verbatim, removed, omitted) of the messages this run started from."""
        n = len(self.messages)
        pin0 = pin_index(
            self.messages, self.system_count, self.start0, self.prev_summary is not None
        )
        was = set(range(self.start0, n)) | ({pin0} if pin0 is not None else set())
        now = set(range(outcome.start, n)) | set(outcome.kept)
        stood = {i for i in outcome.replacements if i in now}
        removed = was - now
        lost: list[tuple[int, Where]] = []
        for i in removed:
            if outcome.strategy != "summary":
                lost.append((i, "dropped"))
            elif i in outcome.request_indices:
                lost.append((i, "request"))
        lost.extend((i, "context") for i in stood)
        omitted = [self._omission(i, where) for i, where in sorted(lost)]
        for note in self.run_notes:
            where: Where = "context" if note.index in now else "dropped"
            if where == "dropped" and outcome.strategy == "summary":
                where = "request"
            role = "user"
            omitted.append(Omission(note.position, role, None, note.tokens, where))
        omitted.sort(key=lambda o: o.position)
        return len((now - stood) & was), len(removed), tuple(omitted)

    def _omission(self, i: int, where: Where) -> Omission:
        return Omission(
            position=self.positions[i],
            role=str(self.messages[i].get("role")),
            tool=_tool_of(self, i),
            tokens=content_tokens(self.counts[i]),
            where=where,
        )


def _tool_of(job: CompactionRun, i: int) -> str | None:
    m = job.messages[i]
    if m.get("role") == "tool":
        return job.tool_names.get(i) or "tool"
    calls = m.get("tool_calls") or []
    return ",".join(str((c.get("function") or {}).get("name") or "tool") for c in calls) or None


def _failed(reason: str, start: int, **more: Any) -> RunOutcome:
    return RunOutcome("truncate", None, start, reason=reason, failed=True, **more)


def summary_outcome(job: CompactionRun, model: Model | None) -> RunOutcome:
    """Plan the tail, ask for the summary of what comes before it (with the ladder),
    assemble and fit. When nothing before the tail needs summarizing — the oversized
    messages stood in are enough — no model is asked (strategy ``stand_in``). ``failed``
    on any failure, with the reason, the budgets tried and the tail planned."""
    us = units(job.messages, job.start0)
    if not us:
        return _failed("nothing new to summarize", job.start0)
    plan = job.tail(job.start0)
    if plan.start <= job.start0:  # the whole history fits the tail
        reps = job.replacements(_restored(job, plan))
        if reps:
            kept = job.at("stand_in", job.prev_summary, job.start0, reps)
            if kept.tokens < job.budget.threshold:
                kept.summary = None
                return kept
        plan = job.tail(us[0].stop)  # a compaction covers at least the oldest unit
    start = plan.start
    reps = job.replacements(plan)
    covered: list[tuple[int, Message]] = [(i, job.messages[i]) for i in range(job.start0, start)]
    previous = job.prev_summary
    head = split_head(covered[0][1]) if previous is None and covered else None
    if head is not None:  # the caller kept an earlier result as its history
        previous, rest = head
        kept_text = rest.strip() if isinstance(rest, str) else rest
        first = [(covered[0][0], {"role": "user", "content": rest})] if kept_text else []
        covered = first + covered[1:]
    request = build_summary_request(
        covered,
        positions=job.positions,
        stand_ins=job.stand_ins,
        budget=job.budget,
        previous_summary=previous,
        count=job.tokens.text,
        message_tokens=lambda i: content_tokens(job.counts[i]),
        session=job.session_id,
    )
    if request is None:
        reason = "not even one line per run of messages fits a summary request"
        return _failed(reason, start, replacements=reps)
    if model is None:
        got = SummaryOutcome(None, "no summarizer model", ())
    else:
        got = ask_for_summary(model, request.request)
    if got.summary is None:
        return _failed(got.reason or "no summary", start, replacements=reps, budgets=got.budgets)
    out = job.fit(got.summary, start, reps)
    out.strategy, out.summary = "summary", got.summary
    out.request_omitted, out.budgets = request.omitted, got.budgets
    out.request_indices = request.omitted_indices
    if out.tokens >= job.budget.threshold:
        out.summary, out.reason = None, "summarized context still over the threshold"
        out.failed, out.strategy = True, "truncate"
    return out


def _restored(job: CompactionRun, plan: TailPlan) -> TailPlan:
    """``plan`` (the whole history, some of it stood in) with stand-ins put back to the
    messages they replace, newest first, while the tail stays within its budget plus the
    summary's — no summary is written, so its share of the context is free."""
    room = job.budget.tail_budget + job.budget.output_budget
    tokens, stand = plan.tokens, set(plan.stand_ins)
    for i in sorted(plan.stand_ins - set(job.rep0), reverse=True):
        grown = tokens + job.counts[i] - job.stand_in_cost(i)
        if grown <= room:
            tokens = grown
            stand.discard(i)
    return TailPlan(plan.start, frozenset(stand), tokens)


def truncate_outcome(job: CompactionRun, failed: RunOutcome) -> RunOutcome:
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
    chosen: RunOutcome | None = None
    if failed.start > job.start0:
        planned = job.fit(head, failed.start, failed.replacements)
        if planned.tokens < job.budget.threshold:
            chosen = planned
    if chosen is None:
        chosen = _drop_oldest(job, head, earlier is not None)
    chosen.strategy, chosen.summary, chosen.failed = "truncate", None, False
    chosen.reason, chosen.budgets = failed.reason, failed.budgets
    return chosen


def _drop_oldest(job: CompactionRun, head: str | None, drop_first: bool) -> RunOutcome:
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
        fixed += job.tokens.text(head_text(head)) + MESSAGE_FRAME_TOKENS
    goal = job.budget.threshold // 2
    keep_newest = [s for c, s in zip(cuts, starts, strict=True) if c < len(us)] or starts
    chosen: RunOutcome | None = None
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


def _no_room(job: CompactionRun, least: RunOutcome) -> str:
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
