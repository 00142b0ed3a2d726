"""Summaries that stay true: written once a conversation is idle, refreshed when it grows,
failures backed off and bounded.

Pure core: :class:`SummaryState` (state.py), the file format (fileformat.py) and the
decision table with the quiescence gate and failure policy (policy.py). Two adapters share
them: archive files beside the transcripts (files.py, episodic-memory compatible) and the
store's summary rows (database.py). ``run_summary_pass`` (summary_pass.py) is what
``memoir sync`` runs; a conversation beyond one request takes the episodic path
(episodic/, through session.py's ``summarize_session``, which ``memoir summarize`` runs
too); persist.py serves ``summarize``, search, ``stats`` and ``verify``, and its
``SummaryUpkeep`` is what a sync calls when it rewrites or removes a conversation.

Every entry point takes what it uses — the store, the summary store, the models
(:class:`ModelSource`), the settings values — never the ``Memoir`` facade.
"""

from memoir.summaries.episodic import EpisodicSummarizer
from memoir.summaries.fileformat import format_summary_file, parse_summary_file
from memoir.summaries.model_source import ModelSource
from memoir.summaries.persist import (
    SummaryFinding,
    SummaryUpkeep,
    forget_summary,
    mark_summary_stale,
    read_summary_body,
    read_summary_state,
    save_summary,
    summary_counts,
    summary_findings,
    summary_problems,
)
from memoir.summaries.policy import Action, SummaryPolicy, decide, is_quiescent
from memoir.summaries.port import Conversation, SummaryStore
from memoir.summaries.session import EpisodeSettings, SessionRun, summarize_session
from memoir.summaries.state import Coverage, Failure, SummaryKind, SummaryState
from memoir.summaries.stores import open_summary_store
from memoir.summaries.summary_pass import (
    PassProgress,
    PassSettings,
    SummaryPassReport,
    run_summary_pass,
)

__all__ = [
    "Action",
    "Conversation",
    "Coverage",
    "EpisodeSettings",
    "EpisodicSummarizer",
    "Failure",
    "ModelSource",
    "PassProgress",
    "PassSettings",
    "SessionRun",
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
