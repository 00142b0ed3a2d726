"""The summary engine's offline strategy: the prose summary of a transcript.

:class:`SummaryTask` is what a one-call summary request carries beside its prompt
(``ModelRequest.task``). The offline model answers it with
:func:`memoir.llm.offline_prose.prose_summary`: the goal the user stated and how it ended,
then the most central sentences in order — the conversation's own sentences within
``max_tokens``; central by the task's ``scorer`` when it has one (the embedder's centrality,
wired by the composition root), lexically otherwise.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from memoir.llm.offline_prose import prose_summary
from memoir.llm.transcript import SentenceScorer

__all__ = ["SummaryTask"]


@dataclass(frozen=True, slots=True)
class SummaryTask:
    """A conversation to summarize: its rendered transcript (and an earlier summary to
    carry forward, when there is one)."""

    transcript: str
    previous: str = ""
    scorer: SentenceScorer | None = field(default=None, compare=False, repr=False)

    def answer(self, max_tokens: int, count: Callable[[str], int]) -> str:
        return prose_summary(self.transcript, max_tokens, count, self.previous, self.scorer)
