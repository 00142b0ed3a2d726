"""Compaction retention (issue 26) behind ``memoir bench compaction``.

Each run plays one generated agent history (:mod:`memoir.bench.compaction_data`) through
an agent loop: messages are appended one by one, and before every assistant message —
when the agent would call its model — ``Compactor.should_compact`` is asked; when it says
so, ``compact`` runs and its ``messages`` become the context the loop goes on from (the
caller keeps the result as its history, no store). Measured:

* **tokens used** — at each compaction, ``tokens_after / threshold`` (the target is at
  least 0.4 every time: a compaction that keeps too little throws work away);
* **recent retention** — at each compaction, the share of the messages in the last
  tail-budget tokens of the context compacted that are in the result word for word
  (a tool result as the same message, a user message possibly inside the head);
* **fact retention** — at the run's last compaction, the share of the planted facts
  before it whose key is in the compacted context (summary + tail, tool-call arguments
  included), per position band: ``early`` / ``middle`` / ``late`` thirds of the history
  so far, and ``tail`` for facts in its last tail-budget tokens.

Runs whose history never reaches the threshold compact nothing and are left out of the
averages (their count is reported). Figures are averages over the runs; ``by_band``
pools the facts of all runs.
"""

from __future__ import annotations

import json
import statistics
import time
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from memoir.bench.compaction_data import AgentHistory, agent_history
from memoir.compaction import CompactionResult, Compactor
from memoir.compaction.sequence import MessageCounter
from memoir.llm import OfflineModel
from memoir.llm.port import Model

__all__ = [
    "BANDS",
    "TARGETS",
    "CompactionBenchReport",
    "RunScore",
    "run_compaction_bench",
    "score_run",
]

BANDS = ("early", "middle", "late", "tail")
TARGETS = {"recent_retention": 1.0, "fact_retention": 0.6, "tokens_used_share": 0.4}
DEFAULT_TURNS = (50, 100, 200, 400)
DEFAULT_WINDOWS = (8_000, 32_000, 128_000)


@dataclass
class RunScore:
    turns: int
    window: int
    seed: int
    history_tokens: int
    threshold: int = 0
    tail_budget: int = 0
    compactions: int = 0
    tokens_used: list[float] = field(default_factory=list)
    recent: list[float] = field(default_factory=list)
    found: dict[str, int] = field(default_factory=lambda: dict.fromkeys(BANDS, 0))
    planted: dict[str, int] = field(default_factory=lambda: dict.fromkeys(BANDS, 0))
    lost: list[str] = field(default_factory=list)  # "kind@band" of facts not found
    strategies: Counter[str] = field(default_factory=Counter)
    model_calls: int = 0
    seconds: float = 0.0

    @property
    def fact_retention(self) -> float | None:
        total = sum(self.planted.values())
        return sum(self.found.values()) / total if total else None

    def to_json(self) -> dict[str, Any]:
        return {
            "turns": self.turns,
            "window": self.window,
            "seed": self.seed,
            "history_tokens": self.history_tokens,
            "threshold": self.threshold,
            "tail_budget": self.tail_budget,
            "compactions": self.compactions,
            "strategies": dict(sorted(self.strategies.items())),
            "model_calls": self.model_calls,
            "tokens_used_share": _mean(self.tokens_used),
            "min_tokens_used_share": round(min(self.tokens_used), 3) if self.tokens_used else None,
            "recent_retention": _mean(self.recent),
            "fact_retention": _round(self.fact_retention),
            "facts": {b: [self.found[b], self.planted[b]] for b in BANDS},
            "lost": self.lost,
            "seconds": round(self.seconds, 2),
        }


def _round(value: float | None) -> float | None:
    return None if value is None else round(value, 3)


def _mean(values: Sequence[float]) -> float | None:
    return round(statistics.fmean(values), 3) if values else None


def _blob(messages: Sequence[dict[str, Any]]) -> str:
    return json.dumps(messages, ensure_ascii=False)


def _verbatim(message: dict[str, Any], out: Sequence[dict[str, Any]], head: str) -> bool:
    if any(message == m for m in out):
        return True
    content = message.get("content")
    return message.get("role") == "user" and isinstance(content, str) and content in head


def _recent(
    context: Sequence[dict[str, Any]], result: CompactionResult, counter: MessageCounter
) -> float:
    """The share of the last tail-budget tokens' messages kept verbatim."""
    out = result.messages
    head = next((m for m in out if m.get("role") == "user"), {}).get("content")
    head_text = head if isinstance(head, str) else _blob([head]) if head else ""
    used, checked, kept = 0, 0, 0
    for m in reversed(context):
        if m.get("role") == "system":
            break
        used += counter.count(m)
        if used > result.tail_budget:
            break
        checked += 1
        kept += _verbatim(m, out, head_text)
    return kept / checked if checked else 1.0


def _score_facts(
    run: RunScore,
    history: AgentHistory,
    fed: int,
    result: CompactionResult,
    counter: MessageCounter,
) -> None:
    """Facts planted in the first ``fed`` messages, looked for in ``result``."""
    blob = _blob(result.messages)
    suffix, tail_from = 0, fed
    for i in range(fed - 1, 0, -1):
        suffix += counter.count(history.messages[i])
        if suffix > result.tail_budget:
            break
        tail_from = i
    run.found = dict.fromkeys(BANDS, 0)
    run.planted = dict.fromkeys(BANDS, 0)
    run.lost = []
    for fact in history.facts:
        if fact.index >= fed:
            continue
        share = fact.index / fed
        band = (
            "tail"
            if fact.index >= tail_from
            else "early"
            if share < 1 / 3
            else "middle"
            if share < 2 / 3
            else "late"
        )
        run.planted[band] += 1
        if fact.key in blob:
            run.found[band] += 1
        else:
            run.lost.append(f"{fact.kind}@{band}")


def score_run(
    history: AgentHistory,
    window: int,
    model: Model,
    *,
    tail_ratio: float | None = None,
    ratio: float | None = None,
    counter: MessageCounter | None = None,
) -> RunScore:
    """Play ``history`` through an agent loop at ``window`` and score what compaction kept
    (at the threshold ``ratio`` and ``tail_ratio`` given, else the defaults)."""
    counter = counter or MessageCounter()
    kw: dict[str, Any] = {} if tail_ratio is None else {"tail_ratio": tail_ratio}
    if ratio is not None:
        kw["ratio"] = ratio
    compactor = Compactor(model, **kw)
    compactor.tokens = counter
    run = RunScore(history.turns, window, history.seed, counter.total(history.messages))
    started = time.perf_counter()
    messages = history.messages
    context: list[dict[str, Any]] = [messages[0]]  # the system prompt
    last: tuple[int, CompactionResult] | None = None
    for fed in range(2, len(messages) + 1):  # ``fed`` messages of the history so far
        context.append(messages[fed - 1])
        at_call = fed == len(messages) or messages[fed]["role"] == "assistant"
        if not at_call or not compactor.should_compact(context, window=window):
            continue
        result = compactor.compact(context, window=window)
        run.threshold, run.tail_budget = result.threshold, result.tail_budget
        run.compactions += 1
        run.strategies[result.strategy] += 1
        run.model_calls += result.model_calls
        run.tokens_used.append(result.tokens_after / result.threshold)
        run.recent.append(_recent(context, result, counter))
        context = list(result.messages)
        last = (fed, result)
    if last is not None:
        _score_facts(run, history, last[0], last[1], counter)
    run.seconds = time.perf_counter() - started
    return run


@dataclass
class CompactionBenchReport:
    runs: list[RunScore]
    model: str

    @property
    def scored(self) -> list[RunScore]:
        return [r for r in self.runs if r.compactions]

    def to_json(self) -> dict[str, Any]:
        scored = self.scored
        facts = [r.fact_retention for r in scored if r.fact_retention is not None]
        used = [u for r in scored for u in r.tokens_used]
        found = {b: sum(r.found[b] for r in scored) for b in BANDS}
        planted = {b: sum(r.planted[b] for r in scored) for b in BANDS}
        summary: dict[str, Any] = {
            "fact_retention": _mean(facts),
            "recent_retention": _mean([x for r in scored for x in r.recent]),
            "tokens_used_share": _mean([statistics.fmean(r.tokens_used) for r in scored]),
            "min_tokens_used_share": round(min(used), 3) if used else None,
            "compactions_below_tokens_target": sum(
                1 for u in used if u < TARGETS["tokens_used_share"]
            ),
            "fact_retention_by_band": {
                b: round(found[b] / planted[b], 3) if planted[b] else None for b in BANDS
            },
            "facts_found": found,
            "facts_planted": planted,
            "runs": len(self.runs),
            "runs_compacted": len(scored),
            "compactions": sum(r.compactions for r in scored),
            "model": self.model,
        }
        summary["targets"] = dict(TARGETS)
        summary["met"] = _met(summary)
        summary["by_window"] = {
            str(w): _window_summary([r for r in scored if r.window == w])
            for w in sorted({r.window for r in self.runs})
        }
        summary["per_run"] = [r.to_json() for r in self.runs]
        return summary


def _window_summary(runs: list[RunScore]) -> dict[str, Any]:
    facts = [r.fact_retention for r in runs if r.fact_retention is not None]
    used = [u for r in runs for u in r.tokens_used]
    return {
        "runs_compacted": len(runs),
        "compactions": sum(r.compactions for r in runs),
        "fact_retention": _mean(facts),
        "recent_retention": _mean([x for r in runs for x in r.recent]),
        "tokens_used_share": _mean([statistics.fmean(r.tokens_used) for r in runs]),
        "min_tokens_used_share": round(min(used), 3) if used else None,
        "model_calls": sum(r.model_calls for r in runs),
        "seconds": round(sum(r.seconds for r in runs), 1),
    }


def _met(summary: dict[str, Any]) -> dict[str, bool]:
    tail = summary["fact_retention_by_band"]["tail"]
    recent = summary["recent_retention"]
    return {
        "recent_retention": recent == 1.0 and tail in (None, 1.0),
        "fact_retention": (summary["fact_retention"] or 0.0) >= TARGETS["fact_retention"],
        "tokens_used_share": (summary["min_tokens_used_share"] or 0.0)
        >= TARGETS["tokens_used_share"],
    }


def run_compaction_bench(
    *,
    turns: Iterable[int] = DEFAULT_TURNS,
    windows: Iterable[int] = DEFAULT_WINDOWS,
    seeds: Iterable[int] = (0, 1, 2),
    model: Model | None = None,
    tail_ratio: float | None = None,
    ratio: float | None = None,
    progress: Callable[[str], None] | None = None,
) -> CompactionBenchReport:
    """Every (turns, seed) history at every window; the offline model unless ``model``."""
    model = model or OfflineModel()
    runs: list[RunScore] = []
    windows = tuple(windows)
    for n in turns:
        for seed in seeds:
            history = agent_history(n, seed)
            counter = MessageCounter()  # one history, counted once for every window
            for window in windows:
                run = score_run(
                    history, window, model, tail_ratio=tail_ratio, ratio=ratio, counter=counter
                )
                runs.append(run)
                if progress is not None:
                    fact = run.fact_retention
                    progress(
                        f"{n} turns, seed {seed}, window {window:,}: {run.compactions} "
                        f"compaction(s), facts {'-' if fact is None else f'{fact:.2f}'}, "
                        f"{run.seconds:.1f} s"
                    )
    return CompactionBenchReport(runs, getattr(model, "name", type(model).__name__))
