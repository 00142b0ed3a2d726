"""Benchmarks the CLI runs (``memoir bench``), and the LoCoMo data and retrieval benchmark.

An adapter-level package: it drives the engines (ingest into a throwaway store, search,
memory extraction, summaries, compaction) and scores what they return; no engine imports
it. :func:`run_locomo` runs the retrieval benchmark over a folder of LoCoMo conversations;
:mod:`memoir.bench.quality` scores the memory extractor's evidence against their
observations and the offline summaries against references; :mod:`memoir.bench.compaction`
measures compaction retention over :mod:`memoir.bench.compaction_data`'s histories.

LoCoMo conversations as Memoir sessions (pure: parsing and mapping, no store).

One LoCoMo file is one conversation between two people over dated sessions. Each LoCoMo
session becomes one Memoir session; speaker_a's turns are the user's, speaker_b's the
assistant's; each turn is a message named after its speaker, as an OpenAI-style group chat
carries them (``payload["speaker"]``, so exchanges read ``"Name: text"``), and a shared
photo adds ``[photo: caption]`` to its text; turns are stamped with the session's date, one
second apart. Evidence ids map to the exchange holding that turn.

The LoCoMo retrieval benchmark behind ``memoir bench locomo``.

Each conversation is ingested into a throwaway SQLite store (one Memoir session per LoCoMo
session, written through ``Store.apply_ingest``), embedded when an embedder is given, and
every question of categories 1–4 is searched in each available mode. Metrics per mode:
``recall@k`` (the share of a question's evidence turns whose exchange is in the top k,
averaged over questions) for k in 1, 5, 10, 25, and ``all@10`` (the share of questions with
every evidence turn in the top 10); recall@10 is also broken down by question category
(LoCoMo's 1 multi-hop, 2 temporal, 3 open-domain, 4 single-hop).
"""

from __future__ import annotations

import json
import re
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from memoir.config import Settings
from memoir.errors import ConfigError
from memoir.memory.item_store import memory_parts
from memoir.model import (
    Author,
    Event,
    EventKind,
    Exchange,
    Harness,
    Session,
    build_exchanges,
    spoken_text,
)
from memoir.model.exchange import exchange_id
from memoir.search import embed_backlog
from memoir.search.embedders import Embedder
from memoir.search.engine import search
from memoir.search.hits import SearchMode
from memoir.store import IngestBatch, SearchFilters, Store, open_store

__all__ = [
    "KS",
    "LocomoConversation",
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

_DATE = re.compile(r"(\d{1,2}):(\d{2})\s*([ap]m)\s+on\s+(\d{1,2})\s+(\w+),?\s+(\d{4})", re.I)
_DIA = re.compile(r"^D(\d+):(\d+)$")
RETRIEVAL_CATEGORIES = (1, 2, 3, 4)


@dataclass(frozen=True, slots=True)
class Question:
    text: str
    evidence: tuple[str, ...]
    category: int


@dataclass(frozen=True, slots=True)
class SessionData:
    number: int
    when: datetime
    turns: tuple[dict[str, Any], ...]


@dataclass(frozen=True, slots=True)
class LocomoConversation:
    name: str
    speaker_a: str
    speaker_b: str
    sessions: tuple[SessionData, ...]
    questions: tuple[Question, ...]


def parse_locomo_date(text: str) -> datetime:
    """``"1:56 pm on 8 May, 2023"`` → 2023-05-08T13:56Z."""
    match = _DATE.search(text)
    if match is None:
        raise ValueError(f"unrecognised LoCoMo date {text!r}")
    hour, minute, half, day, month, year = match.groups()
    parsed = datetime.strptime(f"{day} {month[:3]} {year}", "%d %b %Y")
    hour_24 = int(hour) % 12 + (12 if half.lower() == "pm" else 0)
    return parsed.replace(hour=hour_24, minute=int(minute), tzinfo=UTC)


def load_conversation(path: Path) -> LocomoConversation:
    data = json.loads(path.read_text(encoding="utf-8"))
    sessions = []
    number = 1
    while f"session_{number}" in data:
        turns = data[f"session_{number}"]
        if turns:
            when = parse_locomo_date(data[f"session_{number}_date_time"])
            sessions.append(SessionData(number, when, tuple(turns)))
        number += 1
    known = {t["dia_id"] for s in sessions for t in s.turns}
    questions = []
    for qa in data.get("qa", []):
        if qa.get("category") not in RETRIEVAL_CATEGORIES:
            continue
        evidence = tuple(e for e in qa.get("evidence", []) if _DIA.match(e) and e in known)
        if evidence:
            questions.append(Question(str(qa["question"]), evidence, int(qa["category"])))
    return LocomoConversation(
        path.stem, data["speaker_a"], data["speaker_b"], tuple(sessions), tuple(questions)
    )


def _turn_text(turn: dict[str, Any]) -> str:
    text = str(turn.get("text", "")).strip()
    if turn.get("blip_caption"):
        text = f"{text} [photo: {turn['blip_caption']}]".strip()
    return text


def _session_events(conv: LocomoConversation, data: SessionData, session_id: str) -> list[Event]:
    events = []
    for ordinal, turn in enumerate(data.turns, start=1):
        is_user = turn["speaker"] == conv.speaker_a
        events.append(
            Event(
                session_id=session_id,
                ordinal=ordinal,
                kind=EventKind.USER_TEXT if is_user else EventKind.ASSISTANT_TEXT,
                author=Author.USER if is_user else Author.ASSISTANT,
                text=_turn_text(turn),
                timestamp=data.when + timedelta(seconds=ordinal),
                payload={"dia_id": turn["dia_id"], "speaker": turn["speaker"]},
            )
        )
    return events


def _lead_exchange(events: list[Event]) -> Exchange | None:
    """Turns before speaker_a's first one (the other person opened the session) form an
    exchange of their own instead of being dropped."""
    lead = []
    for event in events:
        if event.author is Author.USER:
            break
        lead.append(event)
    if not lead:
        return None
    first = lead[0]
    return Exchange(
        id=exchange_id(first.session_id, first.ordinal),
        session_id=first.session_id,
        first_ordinal=first.ordinal,
        last_ordinal=lead[-1].ordinal,
        user_text="",
        assistant_text="\n\n".join(spoken_text(e) for e in lead),
        tool_names=(),
        started_at=first.timestamp,
        ended_at=lead[-1].timestamp,
    )


def to_memoir(
    conv: LocomoConversation,
) -> tuple[list[tuple[Session, list[Event], list[Exchange]]], dict[str, str]]:
    """Sessions with their events and exchanges, and evidence id → exchange id."""
    out = []
    where: dict[str, str] = {}
    for data in conv.sessions:
        session_id = f"locomo-{conv.name}-s{data.number}"
        session = Session(
            id=session_id,
            project=f"locomo-{conv.name}",
            harness=Harness.GENERIC,
            created_at=data.when,
            updated_at=data.when + timedelta(seconds=len(data.turns)),
        )
        events = _session_events(conv, data, session_id)
        exchanges = build_exchanges(events)
        lead = _lead_exchange(events)
        if lead is not None:
            exchanges.insert(0, lead)
        for event in events:
            holder = next(
                x for x in exchanges if x.first_ordinal <= event.ordinal <= x.last_ordinal
            )
            where[str(event.payload["dia_id"])] = holder.id
        out.append((session, events, exchanges))
    return out, where


KS = (1, 5, 10, 25)


def question_scores(ranked: Sequence[str], wanted: Sequence[str]) -> dict[str, float]:
    """recall@k for each k and all@10 for one question (``wanted`` may repeat an exchange
    when two evidence turns share one; each evidence turn counts)."""
    out: dict[str, float] = {}
    for k in KS:
        top = set(ranked[:k])
        out[f"recall@{k}"] = sum(1 for w in wanted if w in top) / len(wanted)
    out["all@10"] = 1.0 if all(w in set(ranked[:10]) for w in wanted) else 0.0
    return out


@dataclass
class ModeScores:
    sums: dict[str, float] = field(default_factory=dict)
    questions: int = 0
    seconds: float = 0.0

    def add(self, scores: dict[str, float], seconds: float) -> None:
        for key, value in scores.items():
            self.sums[key] = self.sums.get(key, 0.0) + value
        self.questions += 1
        self.seconds += seconds

    def summary(self) -> dict[str, Any]:
        n = max(self.questions, 1)
        out: dict[str, Any] = {key: round(value / n, 4) for key, value in self.sums.items()}
        out["questions"] = self.questions
        out["ms_per_query"] = round(1000 * self.seconds / n, 2)
        return out


@dataclass
class LocomoReport:
    modes: dict[str, ModeScores]
    conversations: list[str]
    embedder: str | None
    embed_seconds: float = 0.0
    per_conversation: dict[str, dict[str, float]] = field(default_factory=dict)
    # mode → question category → recall@10 sums
    by_category: dict[str, dict[int, ModeScores]] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        out = {}
        for mode, scores in self.modes.items():
            summary = scores.summary()
            cats = self.by_category.get(mode, {})
            summary["recall@10_by_category"] = {
                str(c): cats[c].summary().get("recall@10", 0.0) for c in sorted(cats)
            }
            out[mode] = summary
        return out


def _ingest(store: Store, conv: LocomoConversation) -> dict[str, str]:
    sessions, where = to_memoir(conv)
    for session, events, exchanges in sessions:
        store.ingest.apply(
            IngestBatch(session=session, events=tuple(events), exchanges=tuple(exchanges))
        )
    return where


def run_locomo(
    directory: Path,
    *,
    embedder: Embedder | None = None,
    modes: Sequence[SearchMode] | None = None,
    progress: Callable[[str], None] | None = None,
    memories: bool = False,
) -> LocomoReport:
    """With ``memories``, each conversation's memory items are extracted (the offline
    extractor, every session a range) and each text or hybrid mode is scored twice in the
    same run: as is, and as ``MODE+memories`` with the memory-keys list fused in."""
    files = sorted(directory.glob("*.json"))
    if not files:
        raise ConfigError(f"no LoCoMo *.json files in {directory}")
    chosen: Sequence[SearchMode] = modes or (
        ("text", "vector", "hybrid") if embedder is not None else ("text",)
    )
    names = [*chosen, *(f"{m}+memories" for m in chosen if memories and m != "vector")]
    report = LocomoReport({m: ModeScores() for m in names}, [], embedder.name if embedder else None)
    for path in files:
        conv = load_conversation(path)
        report.conversations.append(conv.name)
        if progress is not None:
            progress(f"{conv.name}: {len(conv.sessions)} sessions, {len(conv.questions)} q")
        with tempfile.TemporaryDirectory(prefix="memoir-locomo-") as tmp:
            store = open_store(Settings.from_env({"MEMOIR_HOME": tmp}, sources=()))
            try:
                _run_one(store, conv, embedder, chosen, report, memories=memories)
            finally:
                store.close()
    return report


def _run_one(
    store: Store,
    conv: LocomoConversation,
    embedder: Embedder | None,
    modes: Sequence[SearchMode],
    report: LocomoReport,
    *,
    memories: bool = False,
) -> None:
    where = _ingest(store, conv)
    if embedder is not None:
        started = time.perf_counter()
        embed_backlog(store, embedder)
        report.embed_seconds += time.perf_counter() - started
    runs: list[tuple[str, SearchMode, bool]] = [(m, m, False) for m in modes]
    if memories:
        _extract_memories(store, embedder)
        runs += [(f"{m}+memories", m, True) for m in modes if m != "vector"]
    local = {name: ModeScores() for name, _, _ in runs}
    items = memory_parts(store).items  # what Memoir.search reads memory keys from
    for question in conv.questions:
        wanted = [where[e] for e in question.evidence]
        for name, mode, keys in runs:
            started = time.perf_counter()
            hits = search(
                store,
                question.text,
                mode=mode,
                limit=max(KS),
                embedder=embedder,
                memory_keys=keys,
                items=items,
            )
            elapsed = time.perf_counter() - started
            scores = question_scores([h.exchange_id for h in hits], wanted)
            report.modes[name].add(scores, elapsed)
            local[name].add(scores, elapsed)
            category = report.by_category.setdefault(name, {})
            category.setdefault(question.category, ModeScores()).add(scores, elapsed)
    report.per_conversation[conv.name] = {
        name: float(local[name].summary().get("recall@10", 0.0)) for name in local
    }


def _extract_memories(store: Store, embedder: Embedder | None) -> None:
    """Every session of the conversation extracted as one range by the offline extractor
    (item vectors stored when an embedder is given)."""
    from memoir.llm import OfflineModel, counter_for
    from memoir.memory.decisions import Work
    from memoir.memory.runner import MemoryConfig, Runner, Task
    from memoir.memory.values import Trigger

    parts = memory_parts(store)
    runner = Runner(
        parts,
        OfflineModel(),
        counter_for("cl100k_base"),
        MemoryConfig(window=128_000, output_reserve=16_000),
        embedder=(lambda: embedder) if embedder is not None else None,
    )
    for session_id in store.sessions.ids(SearchFilters(include_subagents=True)):
        runner.run(Task(Work(session_id, Trigger.COMPACTION, "locomo")))
