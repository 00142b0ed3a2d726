"""The LoCoMo retrieval benchmark behind ``memoir bench locomo``.

Each conversation is ingested into a throwaway SQLite store (one Memoir session per LoCoMo
session, written through ``Store.apply_ingest``), embedded when an embedder is given, and
every question of categories 1–4 is searched in each available mode. Metrics per mode:
``recall@k`` (the share of a question's evidence turns whose exchange is in the top k,
averaged over questions) for k in 1, 5, 10, 25, and ``all@10`` (the share of questions with
every evidence turn in the top 10); recall@10 is also broken down by question category
(LoCoMo's 1 multi-hop, 2 temporal, 3 open-domain, 4 single-hop).
"""

from __future__ import annotations

import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from memoir.bench.locomo_data import Conversation, load_conversation, to_memoir
from memoir.config import Settings
from memoir.errors import ConfigError
from memoir.search.backfill import embed_backlog
from memoir.search.embedder import Embedder
from memoir.search.engine import search
from memoir.search.hits import SearchMode
from memoir.store import IngestBatch, SearchFilters, Store, open_store

__all__ = ["KS", "LocomoReport", "ModeScores", "question_scores", "run_locomo"]

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


def _ingest(store: Store, conv: Conversation) -> dict[str, str]:
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
    conv: Conversation,
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
    from memoir.llm.offline import OfflineModel, counter_for
    from memoir.memory.decisions import Work
    from memoir.memory.runner import MemoryConfig, MemoryParts, Runner, Task
    from memoir.memory.values import Trigger

    parts = MemoryParts(
        store.sessions, store.events, store.checkpoints, store.memory, store.memory_items
    )
    runner = Runner(
        parts,
        OfflineModel(),
        counter_for("cl100k_base"),
        MemoryConfig(window=128_000, output_reserve=16_000),
        embedder=(lambda: embedder) if embedder is not None else None,
    )
    for session_id in store.sessions.ids(SearchFilters(include_subagents=True)):
        runner.run(Task(Work(session_id, Trigger.COMPACTION, "locomo")))
