"""Asking for the summary: the budget ladder and the validity check around one model.

:func:`ladder_step` is the pure decision; :func:`summarize` the loop that calls the model.
On :class:`OutputBudgetRejected` the same request is sent again with the next lower
budget of the ladder (4096, 2048, 1024, 256 — only budgets below the one rejected),
stopping at the first accepted. Any other failure — a truncated, empty, refused or
invalid summary, reasoning without content, the provider down — ends the attempt: the
caller falls back to the backstop. Nothing rejected ever reaches the context.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from memoir.compaction.budget import ladder_after
from memoir.compaction.validation import strip_reasoning, summary_problem
from memoir.llm.port import Model, ModelError, ModelRequest, OutputBudgetRejected, Truncated

__all__ = ["SummaryOutcome", "ladder_step", "summarize"]


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


def summarize(model: Model, request: ModelRequest) -> SummaryOutcome:
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
