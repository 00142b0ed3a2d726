"""Context compaction for agent loops: never stuck, never corrupting the context.

The front door is :class:`Compactor` (``should_compact`` / ``compact``): a summary of the
work so far and the most recent messages verbatim (the tail budget), oversized messages
kept as stand-ins that say what they were. The pure parts are usable on their own:
:func:`validate_sequence` (what the OpenAI and Anthropic APIs accept), :class:`Budget`
(threshold, output budget, per-message cap, tail budget), the stand-ins, the summary
validation and the event converter.
"""

from memoir.compaction.compactor import Compactor
from memoir.compaction.plan import (
    LADDER,
    MESSAGE_CAP_FLOOR,
    Budget,
    ladder_after,
    message_cap,
    output_budget,
    threshold_for,
)
from memoir.compaction.request import summary_problem
from memoir.compaction.sequence import validate_sequence
from memoir.compaction.standin import stand_in
from memoir.compaction.values import (
    ELIGIBLE,
    POLICY_DENIED,
    CompactionResult,
    History,
    Omission,
    Strategy,
    disposition,
    messages_from_events,
)

__all__ = [
    "ELIGIBLE",
    "LADDER",
    "MESSAGE_CAP_FLOOR",
    "POLICY_DENIED",
    "Budget",
    "CompactionResult",
    "Compactor",
    "History",
    "Omission",
    "Strategy",
    "disposition",
    "ladder_after",
    "message_cap",
    "messages_from_events",
    "output_budget",
    "stand_in",
    "summary_problem",
    "threshold_for",
    "validate_sequence",
]
