"""The values compaction hands back: the result and what was omitted. Pure."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

__all__ = ["CompactionResult", "Omission", "Strategy", "Where"]

# summary: older messages summarized, the tail kept; stand_in: nothing needed summarizing,
# messages too large for the context were replaced by stand-ins; truncate: the backstop
# (no usable summary) dropped the oldest messages; none: under the threshold
Strategy = Literal["summary", "stand_in", "truncate", "none"]
Where = Literal["request", "context", "dropped"]


@dataclass(frozen=True, slots=True)
class Omission:
    """A message whose content is not in the new context: where it went, and how big —
    never its content. ``request``: summarized, but the summary request held its stand-in
    (the summary knows of it, not what it said); ``context``: kept as its stand-in;
    ``dropped``: removed by the backstop without a summary."""

    position: int  # 1-based position in the caller's list, or the event ordinal
    role: str
    tool: str | None
    tokens: int
    where: Where

    def as_dict(self) -> dict[str, Any]:
        return {
            "position": self.position,
            "role": self.role,
            "tool": self.tool,
            "tokens": self.tokens,
            "where": self.where,
        }


@dataclass(frozen=True, slots=True)
class CompactionResult:
    """What one compaction did.

    ``messages`` is the new context (under the threshold: the input list's contents, or
    the replayed checkpoint context). ``output_budget`` is the summary budget of the last
    request sent (the accepted ladder step for a summary), None when no request was sent.
    ``threshold_source`` says where the ratio came from (``default``, ``env
    MEMOIR_COMPACT_THRESHOLD_RATIO``, ``argument``). ``reason`` says why the backstop ran.

    The accounts agree on every path: of the non-system messages the compaction started
    from (after a replayed checkpoint, those after its watermark), ``kept_verbatim`` are
    in the new context word for word, ``removed_count`` are gone from it (summarized, or
    dropped by the backstop — each dropped one, and each summarized one the summary saw
    only as a stand-in, is in ``omitted``), and the rest are kept as stand-ins (in
    ``omitted`` with ``where="context"``). A note standing for earlier messages of a run
    of user messages lists each of them in ``omitted`` as well.
    """

    messages: list[dict[str, Any]]
    strategy: Strategy
    tokens_before: int
    tokens_after: int
    removed_count: int
    omitted: tuple[Omission, ...]
    window: int
    threshold: int
    ratio: float
    threshold_source: str
    cap: int
    output_budget: int | None
    checkpoint_id: str | None = None
    replayed_from: str | None = None
    summary: str | None = None
    reason: str | None = None
    model_calls: int = 0
    budgets_tried: tuple[int, ...] = field(default_factory=tuple)
    kept_verbatim: int = 0
    tail_budget: int = 0

    @property
    def compacted(self) -> bool:
        return self.strategy != "none"

    def to_json(self) -> dict[str, Any]:
        """The CLI's ``--json`` document (the fixed keys first)."""
        return {
            "messages": self.messages,
            "strategy": self.strategy,
            "tokens_before": self.tokens_before,
            "tokens_after": self.tokens_after,
            "removed_count": self.removed_count,
            "omitted": [o.as_dict() for o in self.omitted],
            "kept_verbatim": self.kept_verbatim,
            **{k: v for k, v in self.trace_data().items() if k not in _JSON_FIXED},
        }

    def trace_data(self) -> dict[str, Any]:
        """The trace event: counts and sizes only, never message content."""
        return {
            "strategy": self.strategy,
            "tokens_before": self.tokens_before,
            "tokens_after": self.tokens_after,
            "removed_count": self.removed_count,
            "omitted": [o.as_dict() for o in self.omitted],
            "kept_verbatim": self.kept_verbatim,
            "cap": self.cap,
            "tail_budget": self.tail_budget,
            "output_budget": self.output_budget,
            "budgets_tried": list(self.budgets_tried),
            "window": self.window,
            "threshold": self.threshold,
            "ratio": self.ratio,
            "threshold_source": self.threshold_source,
            "checkpoint_id": self.checkpoint_id,
            "replayed_from": self.replayed_from,
            "reason": self.reason,
            "model_calls": self.model_calls,
        }


_JSON_FIXED = frozenset(
    {
        "strategy",
        "tokens_before",
        "tokens_after",
        "removed_count",
        "omitted",
        "kept_verbatim",
        "messages",
    }
)
