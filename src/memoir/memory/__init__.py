"""Long-term memory: the names of its pure core, and the memory pass ``memoir sync`` runs.

Durable facts, preferences, decisions, plans and constraints taken from what the *user*
said, each item carrying the exact quotes that support it. The core modules hold values
and pure functions only — no store, no threads, no clock; the pipeline that reads events,
calls a model and settles receipts (``memories``, ``runner``, ``rows``) builds on it.

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
- ``cues`` / ``offline_extractor`` — the offline default extractor (and the task a memory
  request carries for the offline model).

The memory pass (defined here): what the user said in the transcripts ``memoir sync``
syncs becomes memory once a conversation has gone quiet, after the summary pass.

1. Look at every synced session (one read of the sessions, one of the cursors) and decide
   each with the pure table :func:`verdict`:

   ==============================================  ===========  =============================
   session                                         verdict      what the pass does
   ==============================================  ===========  =============================
   fed through the API (not from a transcript)     ``api``      nothing: not the sync's
   of a project ``MEMOIR_EXCLUDE_PROJECTS`` names  ``excluded`` nothing: never read
   no event past its memory cursor                 ``current``  nothing: nothing new
   memory denied (incognito, off, archived,        ``denied``   its lane settles the denial
   subagent; its project switched off)                          (a durable barrier, a
                                                                ``policy_denied`` receipt, no
                                                                model call), idle or not
   still active (the quiescence rule)              ``active``   nothing yet: mined once quiet
   quiet, events past the cursor                   ``due``      extracted, up to the limit
   ==============================================  ===========  =============================

2. Order the due ones newest first (what was said a minute ago before a backlog), then run
   at most ``limit`` of them through the session's lane
   (:meth:`memoir.memory.memories.Memories.after_sync`): the same cursor, policy checks,
   receipts and pending failures as ``remember`` and compaction. The rest are deferred to
   the next sync.

Each operation is durable before it runs, and covers the events stored when the pass
looked; a sync killed half-way leaves it queued, and the next sync (its recovery, or this
pass finding the same range again: the same operation) runs it once.
"""

from __future__ import annotations

import importlib
import logging
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime
from enum import StrEnum
from typing import TYPE_CHECKING, Any

from memoir.errors import MemoirError
from memoir.model import Harness, SessionFlags

if TYPE_CHECKING:  # the names below are imported on first use (``__getattr__``)
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
        policy_decision,
        precheck,
        receipt_of,
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
    from memoir.memory.memories import Memories
    from memoir.memory.offline_extractor import ExtractionTask, offline_proposal
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
    from memoir.memory.rows import MemoryParts, Outcome
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
    from memoir.model.event import SessionInfo
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
    "MemoryPassProgress",
    "MemoryPassReport",
    "MemoryPassRow",
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
    "Verdict",
    "Work",
    "after_failure",
    "build_request",
    "build_slice",
    "choose_boundary",
    "coverage_hash",
    "due_order",
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
    "offline_proposal",
    "on_denied",
    "operation_id",
    "parse_proposal",
    "policy_decision",
    "precheck",
    "preflight",
    "proposal_json",
    "receipt_of",
    "remember_precheck",
    "run_memory_pass",
    "safe_summary",
    "skip_denied",
    "split_anchor",
    "split_range",
    "turn_text",
    "validate_proposal",
    "verdict",
]


# the pure core's names, imported on first use: a search that reads memory items
# (``memoir.memory.item_store``) loads none of the engine
_SOURCES = (
    "values", "decisions", "evidence", "prompt", "request", "validate",
    "offline_extractor", "memories", "rows",
)  # fmt: skip


def __getattr__(name: str) -> Any:
    if name in __all__:
        for source in _SOURCES:
            module = importlib.import_module(f"memoir.memory.{source}")
            if name in vars(module):
                globals()[name] = value = vars(module)[name]
                return value
        value = globals()[name] = getattr(importlib.import_module("memoir.secrets"), name)
        return value
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


# the memory pass sync runs ------------------------------------------------------------


log = logging.getLogger(__name__)


class Verdict(StrEnum):
    API = "api"
    EXCLUDED = "excluded"
    CURRENT = "current"
    DENIED = "denied"
    ACTIVE = "active"
    DUE = "due"


def verdict(
    *,
    harness: Harness,
    excluded: bool,
    last_ordinal: int,
    cursor: int,
    flags: SessionFlags,
    quiet: bool,
) -> Verdict:
    """What the pass does with one session (the module's table, top row first). A denied
    session is settled whether or not it is quiet: its denial is a barrier written before
    the flag can be lifted, so what was said while it was set is never extracted. Pure."""
    if harness is Harness.API:
        return Verdict.API
    if excluded:
        return Verdict.EXCLUDED
    if last_ordinal <= cursor:
        return Verdict.CURRENT
    if flags.memory_denied:
        return Verdict.DENIED
    if not quiet:
        return Verdict.ACTIVE
    return Verdict.DUE


def due_order(last_at: datetime | None, session_id: str) -> tuple[int, float, str]:
    """Sort key of the due sessions: the most recently active first (one with no time of
    its own last), then by id. Pure."""
    if last_at is None:
        return (1, 0.0, session_id)
    return (0, -last_at.timestamp(), session_id)


@dataclass(frozen=True, slots=True)
class MemoryPassRow:
    session_id: str
    project: str
    outcome: str  # a receipt's outcome, or failed | waiting | busy
    items: int = 0
    detail: str = ""


@dataclass(frozen=True, slots=True)
class MemoryPassProgress:
    """``done`` of ``total`` due sessions run, and the one running now (empty at the end)."""

    done: int
    total: int
    session_id: str = ""
    project: str = ""


@dataclass(slots=True)
class MemoryPassReport:
    mined: int = 0  # sessions whose new range was read and settled (items or not)
    items: int = 0  # items these runs saved
    failed: int = 0  # a failure recorded pending: retried by the next sync
    waiting: int = 0  # behind an earlier pending failure, or policy unreadable now
    denied: int = 0  # memory denied: the range settled as a durable denial
    active: int = 0  # events past the cursor, still active (mined once quiet)
    deferred: int = 0  # quiet and due, left for the next sync by the limit
    busy: int = 0  # another process is running the session's memory lane
    excluded: int = 0  # of a project MEMOIR_EXCLUDE_PROJECTS names: never read
    model_calls: int = 0
    stopped: str = ""  # the model cannot be used (a key or credit problem): pass stopped
    off: str = ""  # memory from sync is switched off: why (nothing was read)
    rows: list[MemoryPassRow] = field(default_factory=list)

    def as_dict(self) -> dict[str, Any]:
        data: dict[str, Any] = {k: getattr(self, k) for k in self.__slots__ if k != "rows"}
        data["rows"] = [
            {
                "session": r.session_id,
                "project": r.project,
                "outcome": r.outcome,
                "items": r.items,
                "detail": r.detail,
            }
            for r in self.rows
        ]
        return data


@dataclass(frozen=True, slots=True)
class _Look:
    info: SessionInfo
    cursor: int
    last: int


def run_memory_pass(
    parts: MemoryParts,
    memories: Callable[[], Memories],
    *,
    limit: int,
    quiet: Callable[[datetime | None], bool],
    excluded: Callable[[str], bool],
    progress: Callable[[MemoryPassProgress], None] | None = None,
) -> MemoryPassReport:
    """Decide every stored session (:func:`verdict`), settle the denied ones, extract the
    due ones newest first, at most ``limit``. ``memories`` gives the engine (asked for only
    when a session needs its lane: building it may need the model's key; a ``limit`` of 0
    runs no lane at all, denials included); ``quiet`` says
    whether a session whose last exchange was at that time has gone quiet; ``excluded``
    whether a project is excluded from the archive."""
    from memoir.llm.port import AuthError

    report = MemoryPassReport()
    cursors = parts.memory.cursors()
    disabled = set(parts.items.disabled_projects())
    denied: list[_Look] = []
    due: list[_Look] = []
    for info in parts.sessions.recent():
        session = info.session
        if session.harness is Harness.API:
            continue
        if excluded(session.project):
            report.excluded += 1
            continue
        cursor = cursors.get(session.id, 0)
        last = parts.events.last_ordinal(session.id) if info.events else 0
        flags = session.flags
        if session.project in disabled:
            flags = SessionFlags(flags.incognito, flags.archived, flags.subagent, True)
        found = verdict(
            harness=session.harness,
            excluded=False,
            last_ordinal=last,
            cursor=cursor,
            flags=flags,
            quiet=quiet(info.last_at),
        )
        if found is Verdict.DENIED:
            denied.append(_Look(info, cursor, last))
        elif found is Verdict.ACTIVE:
            report.active += 1
        elif found is Verdict.DUE:
            due.append(_Look(info, cursor, last))
    if limit <= 0:  # none wanted this run: nothing is read, and no model is built
        report.deferred = len(due)
        return report
    if not denied and not due:
        return report
    engine = memories()
    for look in denied:
        _run(engine, look, report, counts=False)
    due.sort(key=lambda lk: due_order(lk.info.last_at, lk.info.session.id))
    budget = min(max(0, limit), len(due))
    used = 0
    for index, look in enumerate(due):
        if used >= budget:
            report.deferred = len(due) - index
            break
        session = look.info.session
        if progress is not None:
            progress(MemoryPassProgress(used, budget, session.id, session.project))
        try:
            worked = _run(engine, look, report, counts=True)
        except AuthError as exc:  # the account's problem, not the session's: stop here
            report.stopped = f"{type(exc).__name__}: {exc}".splitlines()[0][:500]
            report.deferred = len(due) - index
            break
        used += worked
    if progress is not None and due:
        progress(MemoryPassProgress(used, used))
    return report


def _run(engine: Memories, look: _Look, report: MemoryPassReport, *, counts: bool) -> bool:
    """Run one session's lane over its new range; whether that was extraction work (what
    the limit counts: a settled read or a recorded failure, not a denial nor a busy lane)."""
    from memoir.llm.port import AuthError

    session = look.info.session
    try:
        out = engine.after_sync(session.id, look.cursor, look.last)
    except AuthError:
        raise
    except MemoirError as exc:  # a store error on one session: said, and the pass goes on
        log.warning("memory from sync of %s stopped: %s", session.id, exc)
        report.failed += 1
        report.rows.append(MemoryPassRow(session.id, session.project, "failed", 0, str(exc)))
        return counts
    row, worked = _row(session.id, session.project, out)
    report.rows.append(row)
    if row.outcome == "busy":
        report.busy += 1
    elif row.outcome == "policy_denied":
        report.denied += 1
    elif row.outcome == "failed":
        report.failed += 1
    elif row.outcome == "waiting":
        report.waiting += 1
    else:
        report.mined += 1
        report.items += row.items
    if out is not None and out.receipt is not None:
        report.model_calls += out.receipt.model_calls
    return counts and worked


def _row(session_id: str, project: str, out: Outcome | None) -> tuple[MemoryPassRow, bool]:
    """How one session's run is reported, and whether it was extraction work. Pure."""
    if out is None:
        return MemoryPassRow(session_id, project, "busy", 0, "another process"), False
    if out.receipt is not None:
        receipt = out.receipt
        denied = receipt.outcome == "policy_denied"
        return MemoryPassRow(
            session_id, project, receipt.outcome, len(out.items), receipt.reason
        ), not denied
    if out.pending is not None:
        return MemoryPassRow(session_id, project, "failed", 0, out.error or ""), True
    return MemoryPassRow(session_id, project, "waiting", 0, out.waiting or ""), False
