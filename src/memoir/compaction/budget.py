"""The numbers of compaction: threshold, summary output budget, per-message cap, ladder.

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

from dataclasses import dataclass

from memoir.errors import CompactionError

__all__ = [
    "DEFAULT_RATIO",
    "DEFAULT_TAIL_RATIO",
    "LADDER",
    "MESSAGE_CAP_FLOOR",
    "OUTPUT_BUDGET_MAX",
    "OUTPUT_BUDGET_MIN",
    "Budget",
    "ladder_after",
    "message_cap",
    "output_budget",
    "threshold_for",
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
