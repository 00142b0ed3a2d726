"""Offline session summaries against references no one here wrote: ``memoir bench summaries``.

Each LoCoMo session with a reference ``session_N_summary`` is summarized the way the
summary pass does it (:func:`memoir.summaries.summarizer.summarize_conversation` with the
offline model; speaker_a as the user), and scored with ROUGE-1/2/L F1 (the ``rouge-score``
package, Porter stemming) against the reference. Baselines come from the same run, each
cut to the same number of words as the session's summary:

- **lead** — the conversation's first words (as the transcript reads, speakers' names
  included);
- **random** — sentences of the conversation drawn at random (fixed seed), in order;
- **keyword** — the summary of format 1 (the keyword-led extractive summary,
  :func:`memoir.llm.offline_summary.text_summary` over the same transcript); also
  reported at its own full length (``keyword (full)``).

With a sentence scorer (``memoir bench summaries`` passes the embedder's centrality when
the ``embeddings`` extra is installed) the same sessions are summarized once more with it:
**prose (embedder)**, at its own length, beside the lexical **prose**.

Figures are means over sessions; ``length`` is the mean of summary words / reference words.
"""

from __future__ import annotations

import json
import random
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from memoir.bench.locomo_data import load_conversation, to_memoir
from memoir.errors import ConfigError
from memoir.llm.offline import OfflineModel, TiktokenCounter
from memoir.llm.offline_summary import text_summary
from memoir.llm.transcript import SentenceScorer, split_sentences
from memoir.model import Event, build_exchanges, spoken_text
from memoir.summaries.summarizer import (
    SUMMARY_MAX_TOKENS,
    render_transcript,
    summarize_conversation,
)

__all__ = [
    "EMBEDDER_METHOD",
    "METHODS",
    "SEED",
    "SessionScore",
    "SummariesReport",
    "cut_words",
    "run_summaries",
]

SEED = 38
METHODS = ("prose", "lead", "random", "keyword", "keyword (full)")
EMBEDDER_METHOD = "prose (embedder)"
METRICS = ("rouge1", "rouge2", "rougeL")


def cut_words(text: str, words: int) -> str:
    """The first ``words`` words of ``text``."""
    return " ".join(text.split()[:words])


@dataclass(frozen=True, slots=True)
class SessionScore:
    conversation: str
    session: int
    reference_words: int
    summary_words: int
    keyword_words: int  # the format-1 summary at its own length
    scores: dict[str, dict[str, float]]  # method → metric → F1


@dataclass
class SummariesReport:
    sessions: list[SessionScore] = field(default_factory=list)

    def mean(self, method: str, metric: str) -> float:
        values = [s.scores[method][metric] for s in self.sessions]
        return sum(values) / len(values) if values else 0.0

    @property
    def methods(self) -> tuple[str, ...]:
        """The methods scored: :data:`METHODS`, and the embedder's prose when it ran."""
        extra = (
            (EMBEDDER_METHOD,)
            if self.sessions and EMBEDDER_METHOD in self.sessions[0].scores
            else ()
        )
        return METHODS + extra

    @property
    def length_ratio(self) -> float:
        ratios = [s.summary_words / max(1, s.reference_words) for s in self.sessions]
        return sum(ratios) / len(ratios) if ratios else 0.0

    @property
    def keyword_length_ratio(self) -> float:
        ratios = [s.keyword_words / max(1, s.reference_words) for s in self.sessions]
        return sum(ratios) / len(ratios) if ratios else 0.0

    def to_json(self) -> dict[str, Any]:
        lead = self.mean("lead", "rougeL")
        return {
            "sessions": len(self.sessions),
            "length_ratio": round(self.length_ratio, 3),
            "keyword_length_ratio": round(self.keyword_length_ratio, 3),
            "methods": {m: {k: round(self.mean(m, k), 4) for k in METRICS} for m in self.methods},
            "rougeL_vs_lead": round(self.mean("prose", "rougeL") / lead, 3) if lead else None,
            "keyword_rougeL_vs_lead": (
                round(self.mean("keyword", "rougeL") / lead, 3) if lead else None
            ),
        }


def _scorer() -> Any:
    try:
        from rouge_score import rouge_scorer
    except ImportError as exc:  # pragma: no cover - the dev extra installs it
        raise ConfigError(
            "memoir bench summaries needs the rouge-score package (pip install rouge-score)"
        ) from exc
    return rouge_scorer.RougeScorer(list(METRICS), use_stemmer=True)


def _random_sentences(text: str, words: int, rng: random.Random) -> str:
    sentences = [s.strip() for line in text.splitlines() for s in split_sentences(line)]
    sentences = [s for s in sentences if s]
    chosen: list[int] = []
    total = 0
    for i in rng.sample(range(len(sentences)), len(sentences)):
        if total >= words:
            break
        chosen.append(i)
        total += len(sentences[i].split())
    return cut_words(" ".join(sentences[i] for i in sorted(chosen)), words)


def _prose(events: Sequence[Event], scorer: SentenceScorer | None = None) -> str:
    made = summarize_conversation(events, OfflineModel(), scorer=scorer)
    return made.body if made is not None else ""


def _session_texts(events: Sequence[Event]) -> tuple[str, str, str]:
    """(prose summary, keyword summary, the conversation as it reads)."""
    prose = _prose(events)
    transcript = render_transcript(build_exchanges(events), events)
    raw = TiktokenCounter("cl100k_base")
    keyword = text_summary(transcript, SUMMARY_MAX_TOKENS, raw.count)
    conversation = "\n".join(spoken_text(e) for e in events)
    return prose, keyword, conversation


def run_summaries(
    directory: Path,
    *,
    progress: Callable[[str], None] | None = None,
    scorer: SentenceScorer | None = None,
) -> SummariesReport:
    """Every session with a reference, scored (see the module doc); ``scorer`` adds the
    prose summary ranked by it (:data:`EMBEDDER_METHOD`)."""
    files = sorted(directory.glob("*.json"))
    if not files:
        raise ConfigError(f"no LoCoMo *.json conversations in {directory}")
    rouge = _scorer()
    rng = random.Random(SEED)
    report = SummariesReport()
    for path in files:
        data = json.loads(path.read_text(encoding="utf-8"))
        conv = load_conversation(path)
        sessions, _ = to_memoir(conv)
        for (_session, events, _exchanges), number in zip(
            sessions, [s.number for s in conv.sessions], strict=True
        ):
            reference = str(data.get(f"session_{number}_summary") or "").strip()
            if not reference:
                continue
            prose, keyword, conversation = _session_texts(events)
            n = len(prose.split())
            candidates = {
                "prose": prose,
                "lead": cut_words(conversation, n),
                "random": _random_sentences(conversation, n, rng),
                "keyword": cut_words(keyword, n),
                "keyword (full)": keyword,
            }
            if scorer is not None:
                candidates[EMBEDDER_METHOD] = _prose(events, scorer)
            scores = {
                method: {k: v.fmeasure for k, v in rouge.score(reference, text).items()}
                for method, text in candidates.items()
            }
            report.sessions.append(
                SessionScore(
                    conv.name, number, len(reference.split()), n, len(keyword.split()), scores
                )
            )
        if progress is not None:
            progress(f"{conv.name}: {len(report.sessions)} sessions scored so far")
    return report
