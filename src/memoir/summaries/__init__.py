"""Summaries that stay true: written once a conversation is idle, refreshed when it grows,
failures backed off and bounded.

Pure core (state.py): :class:`SummaryState`, the file format and the decision table with
the quiescence gate and failure policy. Two adapters share them: archive files beside the
transcripts (files.py, episodic-memory compatible) and the store's summary rows (port.py,
beside the port and the episode cache). ``run_summary_pass`` (summary_pass.py) is what
``memoir sync`` runs; summarizer.py picks the cheapest honest path for one conversation; a
conversation beyond one request takes the episodic path (episodic.py over episodes.py and
calls.py, offline.py its offline strategy, through session.py's ``summarize_session``,
which ``memoir summarize`` runs too); persist.py serves ``summarize``, search, ``stats``
and ``verify``, and its ``SummaryUpkeep`` is what a sync calls when it rewrites or removes
a conversation.

Every entry point takes what it uses — the store, the summary store, the models
(:class:`ModelSource`), the settings values — never the ``Memoir`` facade.

Its names are imported from their modules when first used: importing one module of the
package costs no more than that module.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from memoir.summaries.episodic import EpisodicSummarizer
    from memoir.summaries.persist import (
        SummaryFinding,
        SummaryUpkeep,
        forget_summary,
        mark_summary_stale,
        open_summary_store,
        read_summary_body,
        read_summary_state,
        save_summary,
        summary_counts,
        summary_findings,
        summary_problems,
    )
    from memoir.summaries.port import Conversation, SummaryStore
    from memoir.summaries.session import EpisodeSettings, ModelSource, SessionRun, summarize_session
    from memoir.summaries.state import (
        Coverage,
        Failure,
        SummaryAction,
        SummaryKind,
        SummaryPolicy,
        SummaryState,
        decide,
        format_summary_file,
        is_quiescent,
        parse_summary_file,
    )
    from memoir.summaries.summary_pass import (
        PassProgress,
        PassSettings,
        SummaryPassReport,
        run_summary_pass,
    )

__all__ = [
    "Conversation",
    "Coverage",
    "EpisodeSettings",
    "EpisodicSummarizer",
    "Failure",
    "ModelSource",
    "PassProgress",
    "PassSettings",
    "SessionRun",
    "SummaryAction",
    "SummaryFinding",
    "SummaryKind",
    "SummaryPassReport",
    "SummaryPolicy",
    "SummaryState",
    "SummaryStore",
    "SummaryUpkeep",
    "decide",
    "forget_summary",
    "format_summary_file",
    "is_quiescent",
    "mark_summary_stale",
    "open_summary_store",
    "parse_summary_file",
    "read_summary_body",
    "read_summary_state",
    "run_summary_pass",
    "save_summary",
    "summarize_session",
    "summary_counts",
    "summary_findings",
    "summary_problems",
]

# each public name: the module it is imported from when first used
_HOME = {
    "EpisodicSummarizer": "memoir.summaries.episodic",
    "format_summary_file": "memoir.summaries.state",
    "parse_summary_file": "memoir.summaries.state",
    "ModelSource": "memoir.summaries.session",
    "SummaryFinding": "memoir.summaries.persist",
    "SummaryUpkeep": "memoir.summaries.persist",
    "forget_summary": "memoir.summaries.persist",
    "mark_summary_stale": "memoir.summaries.persist",
    "read_summary_body": "memoir.summaries.persist",
    "read_summary_state": "memoir.summaries.persist",
    "save_summary": "memoir.summaries.persist",
    "summary_counts": "memoir.summaries.persist",
    "summary_findings": "memoir.summaries.persist",
    "summary_problems": "memoir.summaries.persist",
    "SummaryAction": "memoir.summaries.state",
    "SummaryPolicy": "memoir.summaries.state",
    "decide": "memoir.summaries.state",
    "is_quiescent": "memoir.summaries.state",
    "Conversation": "memoir.summaries.port",
    "SummaryStore": "memoir.summaries.port",
    "EpisodeSettings": "memoir.summaries.session",
    "SessionRun": "memoir.summaries.session",
    "summarize_session": "memoir.summaries.session",
    "Coverage": "memoir.summaries.state",
    "Failure": "memoir.summaries.state",
    "SummaryKind": "memoir.summaries.state",
    "SummaryState": "memoir.summaries.state",
    "open_summary_store": "memoir.summaries.persist",
    "PassProgress": "memoir.summaries.summary_pass",
    "PassSettings": "memoir.summaries.summary_pass",
    "SummaryPassReport": "memoir.summaries.summary_pass",
    "run_summary_pass": "memoir.summaries.summary_pass",
}


def __getattr__(name: str) -> Any:
    home = _HOME.get(name)
    if home is None:
        raise AttributeError(f"module 'memoir.summaries' has no attribute {name!r}")
    value = getattr(importlib.import_module(home), name)
    globals()[name] = value
    return value
