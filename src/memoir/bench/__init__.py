"""Benchmarks the CLI runs (``memoir bench``): LoCoMo retrieval and long-term memory.

An adapter-level package: it drives the engines (ingest into a throwaway store, search,
memory extraction) and scores what they return; no engine imports it. :func:`run_locomo`
runs the retrieval benchmark over a folder of LoCoMo conversations;
:func:`memoir.bench.memories.run_memories` scores the memory extractor's evidence against
their observations; :mod:`memoir.bench.locomo_data` (pure) reads them and maps them to
Memoir sessions.
"""

from memoir.bench.locomo import KS, LocomoReport, ModeScores, question_scores, run_locomo
from memoir.bench.locomo_data import (
    Conversation,
    Question,
    SessionData,
    load_conversation,
    parse_locomo_date,
    to_memoir,
)

__all__ = [
    "KS",
    "Conversation",
    "LocomoReport",
    "ModeScores",
    "Question",
    "SessionData",
    "load_conversation",
    "parse_locomo_date",
    "question_scores",
    "run_locomo",
    "to_memoir",
]
