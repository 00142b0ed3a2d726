"""How good what Memoir writes from a conversation is, on LoCoMo: memory items
(``memoir bench memories``) and offline session summaries (``memoir bench summaries``).

Long-term memory quality on LoCoMo behind ``memoir bench memories``.

Each conversation is ingested into a throwaway home the way ``memoir bench locomo`` does
(one Memoir session per LoCoMo session; the speaker scored is ingested as the user, the
other as the assistant). Then, per session, a compaction checkpoint covering the whole
session is persisted (built by :func:`memoir.compaction.values.new_checkpoint`, the
row a ``Compactor`` writes, with a window large enough that no range is split) and
handed to :meth:`memoir.memory.memories.Memories.on_checkpoint` — the fire-and-forget
dispatch a compaction makes. The session's lane runs it through the real pipeline
(claim → evidence slice → envelope and preflight → the offline memory model behind the
metered model wrapper → validation → settlement), and the bench waits for the lane to go
idle. The items are then read back from the store.

Scoring against ``session_N_observation`` (facts per speaker, each with the dialogue turns
``dia_id`` that support it), for the speaker ingested as the user:

- **evidence recall** — the share of that speaker's observation turns cited by some item;
- **evidence precision** — the share of cited turns that support some observation of that
  speaker.

An item's quotes name event ordinals; each event carries its turn's ``dia_id``. Figures
over several conversations (and, with ``both``, both speakers) are pooled: summed hits
over summed turns. Observation turns spoken by the *other* speaker (a few observations
cite them) can never be cited — only the user's own words are evidence — and stay in the
recall's denominator; ``own_observation_turns`` says how many are reachable.
``base_precision`` is the precision of citing every turn of the user — the share of their
turns that support an observation — which the extractor's precision is to be read against.

Offline session summaries against references no one here wrote: ``memoir bench summaries``.

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
import re
import tempfile
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any, Literal

from memoir import service
from memoir.app import Memoir
from memoir.bench import LocomoConversation, load_conversation, to_memoir
from memoir.compaction.values import new_checkpoint
from memoir.config import Settings
from memoir.errors import ConfigError, MemoirError
from memoir.llm import OfflineModel, TiktokenCounter
from memoir.llm.offline_summary import text_summary
from memoir.llm.transcript import SentenceScorer, split_sentences
from memoir.model import Event, Session, build_exchanges, spoken_text
from memoir.store import IngestBatch
from memoir.summaries.summarizer import (
    SUMMARY_MAX_TOKENS,
    render_transcript,
    summarize_conversation,
)

__all__ = [
    "EMBEDDER_METHOD",
    "METHODS",
    "SEED",
    "SPEAKERS",
    "WINDOW",
    "ConversationScore",
    "MemoriesReport",
    "SessionScore",
    "Speaker",
    "SummariesReport",
    "as_user",
    "cut_words",
    "evidence_scores",
    "observation_turns",
    "run_memories",
    "run_summaries",
]

Speaker = Literal["a", "b", "both"]
SPEAKERS: tuple[Speaker, ...] = ("a", "b", "both")
WINDOW = 200_000  # the frozen window of each checkpoint: a LoCoMo session never needs a split
IDLE_TIMEOUT_S = 600.0

_DIA = re.compile(r"^D\d+:\d+$")
_SEPARATORS = re.compile(r"[;,\s]+")


# pure parts -------------------------------------------------------------------------------
def _dia_ids(raw: object) -> list[str]:
    """The turn ids of one observation: a string (``"D1:3"``, or malformed ones joined
    with ``;``) or a list of them."""
    pieces = raw if isinstance(raw, list) else [raw]
    out = []
    for piece in pieces:
        for part in _SEPARATORS.split(str(piece)):
            if _DIA.match(part):
                out.append(part)
    return out


def observation_turns(data: Mapping[str, Any], speaker: str) -> frozenset[str]:
    """The turns supporting ``speaker``'s observations, over every non-empty session of
    the raw LoCoMo ``data``; ids naming no turn of the conversation are dropped."""
    known: set[str] = set()
    number = 1
    while f"session_{number}" in data:
        known.update(str(t["dia_id"]) for t in data[f"session_{number}"] or ())
        number += 1
    wanted = speaker.strip().casefold()
    turns: set[str] = set()
    for key, value in data.items():
        if not (key.startswith("session_") and key.endswith("_observation")):
            continue
        if not isinstance(value, Mapping):
            continue
        for name, facts in value.items():
            if str(name).strip().casefold() != wanted:
                continue
            for fact in facts or ():
                if isinstance(fact, (list, tuple)) and len(fact) >= 2:
                    turns.update(d for d in _dia_ids(fact[1]) if d in known)
    return frozenset(turns)


def evidence_scores(observed: Iterable[str], cited: Iterable[str]) -> tuple[float, float]:
    """(recall, precision) of ``cited`` turns against ``observed`` turns; 0.0 where the
    denominator is empty."""
    obs, cit = set(observed), set(cited)
    hits = len(obs & cit)
    return (hits / len(obs) if obs else 0.0, hits / len(cit) if cit else 0.0)


def as_user(conv: LocomoConversation, speaker: Literal["a", "b"]) -> LocomoConversation:
    """The conversation with ``speaker`` in speaker_a's place (speaker_a is ingested as
    the user)."""
    if speaker == "a":
        return conv
    return replace(conv, speaker_a=conv.speaker_b, speaker_b=conv.speaker_a)


# the report -------------------------------------------------------------------------------
@dataclass
class ConversationScore:
    """One conversation with one of its speakers ingested as the user."""

    conversation: str
    speaker: str
    observed: frozenset[str]
    cited: frozenset[str]
    own_observed: frozenset[str]  # observation turns this speaker said (citable at all)
    user_turns: int = 0  # turns this speaker said
    items: int = 0
    model_calls: int = 0
    input_tokens: int = 0
    sessions: int = 0
    unsettled: int = 0  # sessions whose checkpoint left no settled receipt (should be 0)
    outcomes: dict[str, int] = field(default_factory=dict)

    @property
    def hits(self) -> int:
        return len(self.observed & self.cited)

    def to_json(self) -> dict[str, Any]:
        recall, precision = evidence_scores(self.observed, self.cited)
        return {
            "conversation": self.conversation,
            "speaker": self.speaker,
            "evidence_recall": round(recall, 4),
            "evidence_precision": round(precision, 4),
            "observation_turns": len(self.observed),
            "own_observation_turns": len(self.own_observed),
            "cited_turns": len(self.cited),
            "cited_observation_turns": self.hits,
            "user_turns": self.user_turns,
            "base_precision": round(len(self.own_observed) / self.user_turns, 4)
            if self.user_turns
            else 0.0,
            "items": self.items,
            "model_calls": self.model_calls,
            "input_tokens": self.input_tokens,
            "sessions": self.sessions,
            "unsettled": self.unsettled,
            "outcomes": dict(sorted(self.outcomes.items())),
        }


@dataclass
class MemoriesReport:
    scores: list[ConversationScore] = field(default_factory=list)
    speaker: Speaker = "a"

    def to_json(self) -> dict[str, Any]:
        observed = sum(len(s.observed) for s in self.scores)
        cited = sum(len(s.cited) for s in self.scores)
        hits = sum(s.hits for s in self.scores)
        own = sum(len(s.own_observed) for s in self.scores)
        users = sum(s.user_turns for s in self.scores)
        return {
            "evidence_recall": round(hits / observed, 4) if observed else 0.0,
            "evidence_precision": round(hits / cited, 4) if cited else 0.0,
            "items": sum(s.items for s in self.scores),
            "model_calls": sum(s.model_calls for s in self.scores),
            "speaker": self.speaker,
            "observation_turns": observed,
            "own_observation_turns": own,
            "cited_turns": cited,
            "cited_observation_turns": hits,
            "user_turns": users,
            # precision of citing every turn of the user: what precision is measured against
            "base_precision": round(own / users, 4) if users else 0.0,
            "input_tokens": sum(s.input_tokens for s in self.scores),
            "unsettled": sum(s.unsettled for s in self.scores),
            "conversations": [s.to_json() for s in self.scores],
        }


# the run ----------------------------------------------------------------------------------
def run_memories(
    directory: Path,
    *,
    speaker: Speaker = "a",
    progress: Callable[[str], None] | None = None,
) -> MemoriesReport:
    """Extract long-term memory from every LoCoMo conversation in ``directory`` with the
    offline extractor and score its evidence against the observations."""
    if speaker not in SPEAKERS:
        raise ConfigError(f"speaker must be one of {', '.join(SPEAKERS)}, not {speaker!r}")
    files = sorted(directory.glob("*.json"))
    if not files:
        raise ConfigError(f"no LoCoMo *.json files in {directory}")
    report = MemoriesReport(speaker=speaker)
    sides: Sequence[Literal["a", "b"]] = ("a", "b") if speaker == "both" else (speaker,)
    for path in files:
        data = json.loads(path.read_text(encoding="utf-8"))
        base = load_conversation(path)
        for side in sides:
            conv = as_user(base, side)
            score = _run_one(conv, observation_turns(data, conv.speaker_a))
            report.scores.append(score)
            if progress is not None:
                recall, precision = evidence_scores(score.observed, score.cited)
                progress(
                    f"{conv.name} as {conv.speaker_a}: {score.items} items, "
                    f"recall {recall:.3f}, precision {precision:.3f}"
                )
    return report


def _run_one(conv: LocomoConversation, observed: frozenset[str]) -> ConversationScore:
    from memoir.memory.item_store import memory_parts

    sessions, _ = to_memoir(conv)
    dia: dict[tuple[str, int], str] = {}
    own: set[str] = set()
    for session, events, _exchanges in sessions:
        for e in events:
            dia[(session.id, e.ordinal)] = str(e.payload["dia_id"])
            if e.payload.get("speaker") == conv.speaker_a:
                own.add(str(e.payload["dia_id"]))
    score = ConversationScore(
        conv.name, conv.speaker_a, observed, frozenset(), frozenset(observed & own), len(own)
    )
    with tempfile.TemporaryDirectory(prefix="memoir-bench-memories-") as tmp:
        settings = Settings.from_env({"MEMOIR_HOME": tmp}, sources=(), llm="offline")
        with Memoir.open(settings) as memoir:
            _extract_all(memoir, sessions)
            parts = memory_parts(memoir.store)
            items, receipts = parts.items.find(), parts.memory.receipts()
    cited = {dia[(s.session_id, s.ordinal)] for i in items for s in i.sources}
    score.cited = frozenset(cited)
    score.items = len(items)
    score.model_calls = sum(r.model_calls for r in receipts)
    score.input_tokens = sum(r.input_tokens for r in receipts)
    score.sessions = len(sessions)
    for r in receipts:
        score.outcomes[r.outcome] = score.outcomes.get(r.outcome, 0) + 1
    settled = {r.session_id for r in receipts if r.trigger == "compaction"}
    score.unsettled = sum(1 for session, _, _ in sessions if session.id not in settled)
    return score


def _extract_all(memoir: Memoir, sessions: Sequence[tuple[Session, list[Event], Any]]) -> None:
    """Ingest the sessions, persist one whole-session checkpoint each, dispatch them as a
    compaction does, and wait for the memory lane to finish."""
    store = memoir.store
    for session, events, exchanges in sessions:
        store.ingest.apply(
            IngestBatch(session=session, events=tuple(events), exchanges=tuple(exchanges))
        )
    memories = service.memory_engine(memoir)
    for session, events, _exchanges in sessions:
        last = max(events, key=lambda e: e.ordinal)
        row = new_checkpoint(
            session.id,
            at=(last.timestamp or datetime.now(UTC)) + timedelta(seconds=1),
            strategy="summary",
            summary=None,
            watermark=last.ordinal,
            watermark_fingerprint="",
            previous_id=None,
            flags=session.flags,
            kept=(),
            tail_from=None,
            replaced=(),
            omitted=(),
            replaced_fingerprints=(),
            context_through=last.ordinal,
            window=WINDOW,
        )
        store.checkpoints.put(row)
        memories.on_checkpoint(row)
    if not memories.lane.wait_idle(IDLE_TIMEOUT_S):
        raise MemoirError(f"memory extraction did not finish within {IDLE_TIMEOUT_S:.0f} s")


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
