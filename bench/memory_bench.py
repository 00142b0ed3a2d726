"""Long-term memory benchmark (issue 18): compaction never waits for memory, the offline
extractor's throughput, and tokens per extraction flat in session length.

    .venv/bin/python bench/memory_bench.py [--runs 15] [--delay 5] [--json]
        [--events 10000] [--steps 100] [--ranges 10,50,200]

Everything runs against a throwaway SQLite home (``MEMOIR_LLM=offline``), through the
library's own parts:

(a) **Compaction wall time** — ``Compactor.compact_events`` (the configured offline
    summarizer, the store for checkpoints) over a session of ``--compact-events`` events in
    an 8,000-token window (just past its threshold, as an agent loop compacts), with
    ``on_checkpoint`` = the ``on_checkpoint`` of a ``Memories`` wired as
    ``service.memory_engine`` does but whose model is a ``ScriptedModel`` sleeping ``--delay`` s
    per call (answering a valid not_applicable proposal); against the same compaction with
    ``on_checkpoint=None``, and that again (``control``: the noise floor of the machine).
    Each run compacts three fresh sessions holding the same events, one per arm, the
    arms' order rotating, a fresh ``Compactor`` each; after the memory arm the bench waits
    for that extraction to settle, so every memory run starts on an idle lane — its worst
    case: the lane thread starts working while the compaction finishes. Medians over
    ``--runs``, their ratio (target ≤ 1.05), the median of the per-run paired ratios, and
    the CPU time of the compacting thread.
(b) **Throughput** — one session of ``--events`` events with a compaction checkpoint every
    R events, settled by ``Memories.recover`` with the offline memory model (metered, as
    ``service.memory_model`` wires it): events/s, and the share of the time spent inside
    the model.
(c) **Tokens per extraction** — a session growing by R events per step for ``--steps``
    steps, a checkpoint (with a constant-size prior summary) after each, recovered at once;
    each receipt's ``input_tokens`` (the whole request as sent: system prompt, summary,
    slice) at step 1, 10, 50, 100, and the spread over all steps.

Prints a table and, with ``--json``, one JSON document; figures go to docs/benchmarks.md.
"""

from __future__ import annotations

import argparse
import json
import platform
import random
import statistics
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta
from typing import Any

from memoir import service
from memoir.app import Memoir
from memoir.compaction import Compactor
from memoir.compaction.values import new_checkpoint
from memoir.config import Settings
from memoir.llm import ScriptedModel, counter_for, encoding_for_model
from memoir.llm.port import Completion, Model, ModelRequest
from memoir.llm.wiring import wrap
from memoir.memory.item_store import memory_parts
from memoir.memory.memories import Memories
from memoir.memory.runner import Runner
from memoir.model import Author, Event, EventKind, Harness, Session, build_exchanges
from memoir.store import IngestBatch
from memoir.store.values import CheckpointRow

__all__: list[str] = []

T0 = datetime(2026, 3, 1, 9, 0, tzinfo=UTC)
NOT_APPLICABLE = json.dumps({"status": "not_applicable", "items": [], "incidental": []})
COMPACT_WINDOW = 8_000  # 230 events (~6.4k tokens) cross its 6,000-token threshold once
CHECKPOINT_WINDOW = 32_000

# user turns: a quarter state something durable (the offline extractor's cues), the rest
# is the work at hand; assistant turns are plain replies
_DURABLE = [
    "I prefer {a} over {b} for anything that touches the {c} layer.",
    "We decided to use {a} for the {c} service from now on.",
    "Never push directly to the {c} branch without a review.",
    "My team lead is based in {d} and works mornings.",
    "I'm planning to move the {c} jobs to {a} next month.",
    "I always run the {c} tests before I open a pull request.",
]
_WORK = [
    "Can you look at why the {c} step takes so long on {a}?",
    "The {c} output looks odd after the last change to {b}.",
    "Let me paste the {c} log and you tell me what {a} is doing.",
    "Try the {b} variant of the {c} handler and compare it with {a}.",
    "Now rename the {c} helper and update its callers.",
    "Show me the diff for the {c} module before we go on.",
]
_REPLY = [
    "I looked at the {c} code: {a} is called twice per request, once from the {b} hook.",
    "Done. The {c} handler now uses {a}; the tests for {b} still pass.",
    "The {c} step spends most of its time in {a}, waiting on {b}.",
    "Here is the plan for {c}: first {a}, then {b}, then the cleanup.",
]
_WORDS = {
    "a": ["PostgreSQL", "Redis", "SQLite", "Kafka", "uvloop", "httpx", "orjson", "ruff"],
    "b": ["MySQL", "Memcached", "requests", "pickle", "black", "the old client", "asyncio"],
    "c": ["billing", "search", "ingest", "auth", "export", "cache", "release", "parser"],
    "d": ["Lisbon", "Porto", "Berlin", "Montreal", "Osaka", "Nairobi"],
}
_SUMMARY = " ".join(
    f"Step {n}: the user and the assistant worked on the billing, search and cache services, "
    "compared storage back-ends and settled the review rules."
    for n in range(8)
)


def _fill(rng: random.Random, template: str) -> str:
    return template.format(**{k: rng.choice(v) for k, v in _WORDS.items()})


def conversation(n: int, *, seed: int, start: int = 1, sid: str = "bench") -> list[Event]:
    """``n`` events alternating user and assistant text, deterministic for a seed."""
    rng = random.Random(seed * 1_000_003 + start)
    out = []
    for ordinal in range(start, start + n):
        if ordinal % 2:
            bank = _DURABLE if rng.random() < 0.25 else _WORK
            kind, author, text = EventKind.USER_TEXT, Author.USER, _fill(rng, rng.choice(bank))
        else:
            kind, author = EventKind.ASSISTANT_TEXT, Author.ASSISTANT
            text = " ".join(_fill(rng, rng.choice(_REPLY)) for _ in range(2))
        out.append(Event(sid, ordinal, kind, author, text, T0 + timedelta(seconds=ordinal)))
    return out


# wiring -----------------------------------------------------------------------------------
@contextmanager
def home() -> Iterator[Memoir]:
    with tempfile.TemporaryDirectory(prefix="memoir-memory-bench-") as tmp:
        settings = Settings.from_env({"MEMOIR_HOME": tmp}, sources=(), llm="offline")
        with Memoir.open(settings) as memoir:
            yield memoir


def put(memoir: Memoir, sid: str, events: list[Event]) -> None:
    """Append ``events`` to session ``sid`` (exchanges rebuilt over the whole history)."""
    store = memoir.store
    prior = store.events.of(sid)
    first = events[0].ordinal
    exchanges = [x for x in build_exchanges([*prior, *events]) if x.last_ordinal >= first]
    session = Session(sid, "bench", Harness.API, created_at=T0, updated_at=events[-1].timestamp)
    store.ingest.apply(IngestBatch(session, tuple(events), tuple(exchanges)))


def memories_with(memoir: Memoir, model: Model) -> Memories:
    """A ``Memories`` over this home's store with ``model``, wired as ``service.memory_engine``."""
    store = memoir.store
    parts = memory_parts(store)
    counter = counter_for(encoding_for_model(model.name))
    return Memories(parts, store.claims, Runner(parts, model, counter))


def checkpoint(memoir: Memoir, sid: str, n: int, boundary: int, summary: str = "") -> None:
    memoir.store.checkpoints.put(
        new_checkpoint(
            sid,
            at=T0 + timedelta(hours=1, seconds=n),
            strategy="summary",
            summary=summary,
            watermark=boundary,
            watermark_fingerprint="",
            previous_id=None,
            flags=None,
            kept=(),
            tail_from=None,
            replaced=(),
            omitted=(),
            replaced_fingerprints=(),
            context_through=boundary,
            window=CHECKPOINT_WINDOW,
        )
    )


class Timed:
    """A model whose calls are timed (the share of extraction time spent in the model)."""

    def __init__(self, inner: Model) -> None:
        self.inner = inner
        self.name = inner.name
        self.seconds = 0.0
        self.calls = 0

    def complete(self, request: ModelRequest) -> Completion:
        started = time.perf_counter()
        try:
            return self.inner.complete(request)
        finally:
            self.seconds += time.perf_counter() - started
            self.calls += 1


# (a) compaction with a slow memory model vs extraction off ----------------------------------
ARMS = ("off", "on", "control")  # control: extraction off again, the noise floor


def compaction(runs: int, delay: float, n_events: int) -> dict[str, Any]:
    with home() as memoir:
        slow = ScriptedModel(default=NOT_APPLICABLE, delay_s=delay, name="scripted:slow-memory")
        memories = memories_with(memoir, wrap(slow, memoir.store.usage, memoir.settings))
        summarizer = service.model(memoir)
        wall: dict[str, list[float]] = {arm: [] for arm in ARMS}
        cpu: dict[str, list[float]] = {arm: [] for arm in ARMS}
        settle: list[float] = []
        dispatch: list[float] = []
        strategies: set[str] = set()

        def on_checkpoint(row: CheckpointRow) -> None:  # the dispatch, timed on its own
            started = time.perf_counter()
            memories.on_checkpoint(row)
            dispatch.append(time.perf_counter() - started)

        for run in range(runs + 1):  # run 0 warms every arm up, not counted
            k = run % len(ARMS)
            for arm in ARMS[k:] + ARMS[:k]:  # each arm first, middle and last in turn
                sid = f"r{run}-{arm}"
                events = conversation(n_events, seed=run, sid=sid)
                put(memoir, sid, events)
                compactor = Compactor.from_settings(
                    memoir.settings,
                    summarizer,
                    store=memoir.store,
                    on_checkpoint=on_checkpoint if arm == "on" else None,
                )
                started, started_cpu = time.perf_counter(), time.thread_time()
                result = compactor.compact_events(events, window=COMPACT_WINDOW, session_id=sid)
                elapsed, used = time.perf_counter() - started, time.thread_time() - started_cpu
                strategies.add(result.strategy)
                if arm == "on":  # the extraction runs after: wait for it (not timed above)
                    settle.append(_settled(memoir, memories, sid, started, 10 * delay + 60))
                if run:
                    wall[arm].append(elapsed)
                    cpu[arm].append(used)
        memories.close()
        receipts = [
            r for r in memory_parts(memoir.store).memory.receipts() if r.session_id.endswith("-on")
        ]
    med = {arm: statistics.median(wall[arm]) for arm in ARMS}
    med_cpu = {arm: statistics.median(cpu[arm]) for arm in ARMS}
    paired = [a / b for a, b in zip(wall["on"], wall["off"], strict=True)]
    paired_control = [a / b for a, b in zip(wall["control"], wall["off"], strict=True)]
    return {
        "runs": runs,
        "delay_s": delay,
        "events": n_events,
        "window": COMPACT_WINDOW,
        "strategies": sorted(strategies),
        "compact_ms_extraction_on": round(med["on"] * 1000, 2),
        "compact_ms_extraction_off": round(med["off"] * 1000, 2),
        "compact_ms_control": round(med["control"] * 1000, 2),
        "ratio": round(med["on"] / med["off"], 3),
        "ratio_control": round(med["control"] / med["off"], 3),
        "paired_ratio_median": round(statistics.median(paired), 3),
        "paired_ratio_control_median": round(statistics.median(paired_control), 3),
        "cpu_ms_extraction_on": round(med_cpu["on"] * 1000, 2),
        "cpu_ms_extraction_off": round(med_cpu["off"] * 1000, 2),
        "cpu_ratio": round(med_cpu["on"] / med_cpu["off"], 3),
        "compact_ms_all": {arm: [round(t * 1000, 1) for t in wall[arm]] for arm in ARMS},
        "dispatch_us_median": round(statistics.median(dispatch[1:]) * 1e6, 1),
        "dispatch_us_max": round(max(dispatch[1:]) * 1e6, 1),
        "memory_settled_after_s": round(statistics.median(settle), 2),
        "memory_receipts": sorted({f"{r.trigger}:{r.outcome}" for r in receipts}),
        "memory_model_calls": slow.calls,
    }


def _settled(memoir: Memoir, memories: Memories, sid: str, started: float, limit: float) -> float:
    """Seconds from ``started`` until the session's checkpoint settled in memory."""
    deadline = time.perf_counter() + limit
    while not any(
        r.trigger == "compaction" for r in memory_parts(memoir.store).memory.receipts(sid)
    ):
        if memory_parts(memoir.store).memory.pending(sid) is not None:
            failed = memory_parts(memoir.store).memory.pending(sid)
            raise SystemExit(f"memory extraction of {sid} failed: {failed}")
        if time.perf_counter() > deadline:
            raise SystemExit(f"memory extraction of {sid} did not settle within {limit:.0f} s")
        time.sleep(0.01)
    elapsed = time.perf_counter() - started
    memories.lane.wait_idle(limit)
    return elapsed


# (b) offline extraction throughput ----------------------------------------------------------
def throughput(n_events: int, range_size: int) -> dict[str, Any]:
    with home() as memoir:
        put(memoir, "long", conversation(n_events, seed=7, sid="long"))
        for n, boundary in enumerate(range(range_size, n_events + 1, range_size), start=1):
            checkpoint(memoir, "long", n, boundary, _SUMMARY)
        model = Timed(service.memory_model(memoir))
        memories = memories_with(memoir, model)
        started = time.perf_counter()
        report = memories.recover()
        elapsed = time.perf_counter() - started
        memories.close()
        receipts = memory_parts(memoir.store).memory.receipts("long")
        items = memory_parts(memoir.store).items.count()
        cursor = memory_parts(memoir.store).memory.cursor("long")
    return {
        "events": n_events,
        "range_events": range_size,
        "extractions": report.settled,
        "cursor": cursor,
        "seconds": round(elapsed, 3),
        "events_per_s": round(cursor / elapsed, 1),
        "ms_per_extraction": round(1000 * elapsed / max(report.settled, 1), 2),
        "model_share": round(model.seconds / elapsed, 3),
        "model_calls": sum(r.model_calls for r in receipts),
        "items": items,
    }


# (c) tokens per extraction against session length ---------------------------------------------
def tokens(steps: int, range_size: int) -> dict[str, Any]:
    with home() as memoir:
        model = service.memory_model(memoir)
        memories = memories_with(memoir, model)
        put(memoir, "grow", conversation(2, seed=3, sid="grow"))  # a session exists
        checkpoint(memoir, "grow", 0, 2, _SUMMARY)  # every range has a prior summary
        memories.recover()
        sent: list[int] = []
        ms: list[float] = []
        for step in range(1, steps + 1):
            start = memoir.store.events.last_ordinal("grow") + 1
            put(memoir, "grow", conversation(range_size, seed=step, start=start, sid="grow"))
            boundary = start + range_size - 1
            checkpoint(memoir, "grow", step, boundary, _SUMMARY)
            started = time.perf_counter()
            memories.recover()
            ms.append((time.perf_counter() - started) * 1000)
            last = [
                r
                for r in memory_parts(memoir.store).memory.receipts("grow")
                if r.range_through == boundary
            ]
            sent.append(last[0].input_tokens if last else -1)
        memories.close()
    at = {str(k): sent[k - 1] for k in (1, 10, 50, 100) if k <= steps}
    return {
        "range_events": range_size,
        "steps": steps,
        "session_events": 2 + steps * range_size,
        "input_tokens_at_step": at,
        "input_tokens_median": statistics.median(sent),
        "input_tokens_min": min(sent),
        "input_tokens_max": max(sent),
        "last_over_first": round(sent[-1] / sent[0], 3),
        "ms_first_10": round(statistics.median(ms[:10]), 2),
        "ms_last_10": round(statistics.median(ms[-10:]), 2),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=15, help="compaction runs per arm")
    parser.add_argument("--delay", type=float, default=5.0, help="memory model delay, s")
    parser.add_argument("--compact-events", type=int, default=230)
    parser.add_argument("--events", type=int, default=10_000, help="throughput session")
    parser.add_argument("--throughput-ranges", default="20,100,400")
    parser.add_argument("--steps", type=int, default=100, help="compactions of (c)")
    parser.add_argument("--ranges", default="10,50,200", help="events per range in (c)")
    parser.add_argument("--skip", default="", help="comma list of parts to skip: a,b,c")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    skip = set(args.skip.split(",")) - {""}
    out: dict[str, Any] = {
        "machine": f"{platform.machine()} {platform.system()}, Python {platform.python_version()}",
        "date": datetime.now(UTC).date().isoformat(),
    }
    if "a" not in skip:
        out["compaction"] = compaction(args.runs, args.delay, args.compact_events)
    if "b" not in skip:
        sizes = [int(s) for s in args.throughput_ranges.split(",")]
        out["throughput"] = [throughput(args.events, r) for r in sizes]
    if "c" not in skip:
        out["tokens"] = [tokens(args.steps, int(r)) for r in args.ranges.split(",")]
    if args.json:
        print(json.dumps(out, indent=2))
        return
    _print(out)


def _print(out: dict[str, Any]) -> None:
    print(f"{out['machine']}, {out['date']}")
    if "compaction" in out:
        c = out["compaction"]
        print(
            f"(a) compaction ({c['events']} events, window {c['window']}, {c['runs']} runs, "
            f"strategy {'/'.join(c['strategies'])}): extraction on ({c['delay_s']} s per "
            f"memory call) {c['compact_ms_extraction_on']} ms, off "
            f"{c['compact_ms_extraction_off']} ms, off again {c['compact_ms_control']} ms; "
            f"ratio {c['ratio']} (target <= 1.05; off again / off {c['ratio_control']}); "
            f"paired {c['paired_ratio_median']} (control {c['paired_ratio_control_median']}); "
            f"CPU of the compacting thread {c['cpu_ms_extraction_on']} / "
            f"{c['cpu_ms_extraction_off']} ms, ratio {c['cpu_ratio']}; on_checkpoint itself "
            f"{c['dispatch_us_median']} us (max {c['dispatch_us_max']}); memory settled "
            f"{c['memory_settled_after_s']} s after the compaction began "
            f"({', '.join(c['memory_receipts'])}, {c['memory_model_calls']} model calls)"
        )
    for t in out.get("throughput", ()):
        print(
            f"(b) {t['events']} events, a checkpoint every {t['range_events']}: "
            f"{t['events_per_s']} events/s, {t['ms_per_extraction']} ms per extraction, "
            f"model {100 * t['model_share']:.0f}% of the time, {t['items']} items, "
            f"{t['model_calls']} model calls"
        )
    for t in out.get("tokens", ()):
        at = ", ".join(f"#{k} {v}" for k, v in t["input_tokens_at_step"].items())
        print(
            f"(c) {t['range_events']} events per range, {t['steps']} compactions "
            f"(session of {t['session_events']}): input tokens {at}; min {t['input_tokens_min']}"
            f" / median {t['input_tokens_median']} / max {t['input_tokens_max']}; last/first "
            f"{t['last_over_first']}; ms per extraction, first 10 {t['ms_first_10']}, last 10 "
            f"{t['ms_last_10']}"
        )


if __name__ == "__main__":
    main()
