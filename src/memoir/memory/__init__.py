"""Long-term memory extraction: the pure core.

Durable facts, preferences, decisions, plans and constraints taken from what the *user*
said, each item carrying the exact quotes that support it. This package holds values and
pure functions only — no store, no threads, no clock; the pipeline that reads events,
calls a model and settles receipts builds on it.

Modules, in the order data flows:

- ``values`` — triggers, ranges, proposals, items, receipts, pending failures, operation ids;
- ``evidence`` — the evidence slice of a range: user text citable, assistant text context,
  everything else excluded;
- ``secrets`` — the one secret detector (:mod:`memoir.secrets`: detect-secrets' plugins and
  gitleaks' rules) returning spans and kinds;
- ``prompt`` — the versioned memory prompt, the request, the strict proposal parser;
- ``request`` — the portable envelope, whole-request preflight, the one split, the
  localization window and the three-call budget;
- ``validate`` — deterministic checks of every proposed item;
- ``decisions`` — retry/discard, policy, lane order, failure classes, outcomes;
- ``cues`` / ``own_words`` / ``offline_extractor`` — the offline default extractor (and
  the task a memory request carries for the offline model).

Layering: imports ``memoir.model``, ``memoir.errors`` and ``memoir.llm`` only.
"""

from memoir.memory.decisions import (
    DenialPlan,
    FailureAction,
    FailureDecision,
    LaneOp,
    PolicyAction,
    PolicyStage,
    PolicyVerdict,
    Work,
    after_failure,
    failure_class,
    lane_order,
    next_work,
    on_denied,
    outcome_of,
    policy_decision,
    precheck,
    skip_denied,
)
from memoir.memory.evidence import (
    EvidenceSlice,
    SliceTurn,
    build_slice,
    coverage_hash,
    has_user_text,
    turn_text,
)
from memoir.memory.offline_extractor import ExtractionTask, extract
from memoir.memory.prompt import (
    PROMPT_HASH,
    PROMPT_ID,
    PROMPT_VERSION,
    build_request,
    parse_proposal,
    proposal_json,
)
from memoir.memory.request import (
    MAX_MODEL_CALLS,
    Boundary,
    CallStep,
    Envelope,
    Preflight,
    PriorSummary,
    Split,
    choose_boundary,
    localization_window,
    may_call,
    next_call,
    preflight,
    safe_summary,
    split_range,
)
from memoir.memory.validate import (
    Rejection,
    Validation,
    normalize,
    remember_precheck,
    validate_proposal,
)
from memoir.memory.values import (
    ExtractionError,
    ItemKind,
    MalformedProposal,
    MemoryItem,
    PendingFailure,
    Proposal,
    ProposalStatus,
    ProposedItem,
    Quote,
    Range,
    Receipt,
    ReceiptOutcome,
    Scope,
    Temporal,
    TemporalType,
    Trigger,
    operation_id,
    split_anchor,
)
from memoir.secrets import Finding, find_secrets, has_secret

__all__ = [
    "MAX_MODEL_CALLS",
    "PROMPT_HASH",
    "PROMPT_ID",
    "PROMPT_VERSION",
    "Boundary",
    "CallStep",
    "DenialPlan",
    "Envelope",
    "EvidenceSlice",
    "ExtractionError",
    "ExtractionTask",
    "FailureAction",
    "FailureDecision",
    "Finding",
    "ItemKind",
    "LaneOp",
    "MalformedProposal",
    "MemoryItem",
    "PendingFailure",
    "PolicyAction",
    "PolicyStage",
    "PolicyVerdict",
    "Preflight",
    "PriorSummary",
    "Proposal",
    "ProposalStatus",
    "ProposedItem",
    "Quote",
    "Range",
    "Receipt",
    "ReceiptOutcome",
    "Rejection",
    "Scope",
    "SliceTurn",
    "Split",
    "Temporal",
    "TemporalType",
    "Trigger",
    "Validation",
    "Work",
    "after_failure",
    "build_request",
    "build_slice",
    "choose_boundary",
    "coverage_hash",
    "extract",
    "failure_class",
    "find_secrets",
    "has_secret",
    "has_user_text",
    "lane_order",
    "localization_window",
    "may_call",
    "next_call",
    "next_work",
    "normalize",
    "on_denied",
    "operation_id",
    "outcome_of",
    "parse_proposal",
    "policy_decision",
    "precheck",
    "preflight",
    "proposal_json",
    "remember_precheck",
    "safe_summary",
    "skip_denied",
    "split_anchor",
    "split_range",
    "turn_text",
    "validate_proposal",
]
