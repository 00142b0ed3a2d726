"""Compaction benchmark: the should-compact decision on a 2,000-message history.

Target (issue 7): under 2 ms per turn once token counts are cached. Also measured in
the same process: the uncached first count (the baseline the cache saves), the decision
with a replayed checkpoint, and one full compaction of a 225,010-token tool result.

    .venv/bin/python bench/compaction_bench.py [--turns 200]

Prints medians and one line per number for docs/benchmarks.md.
"""

from __future__ import annotations

import argparse
import platform
import statistics
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from memoir.compaction import Compactor
from memoir.compaction.sequence import MessageCounter
from memoir.llm import ScriptedModel
from memoir.store.sqlite_store import SQLiteStore

SUMMARY = "The user asked for a long refactor; the assistant did it step by step."


def history(n: int) -> list[dict[str, Any]]:
    msgs: list[dict[str, Any]] = [{"role": "system", "content": "You are a coding agent."}]
    msgs.append({"role": "user", "content": "Refactor the parser module by module."})
    k = 0
    while len(msgs) < n:
        cid = f"call_{k}"
        msgs.append(
            {
                "role": "assistant",
                "content": f"Step {k}: reading the next module.",
                "tool_calls": [
                    {
                        "id": cid,
                        "type": "function",
                        "function": {"name": "read_file", "arguments": f'{{"n": {k}}}'},
                    }
                ],
            }
        )
        body = " ".join(f"line {k}.{j}: value = compute({j}) + offset" for j in range(12))
        msgs.append({"role": "tool", "tool_call_id": cid, "content": body})
        k += 1
    return msgs[:n] if msgs[n - 1]["role"] != "assistant" else msgs[: n - 1]


def median_ms(fn: Any, turns: int) -> float:
    times = []
    for _ in range(turns):
        t = time.perf_counter()
        fn()
        times.append((time.perf_counter() - t) * 1000)
    return statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--turns", type=int, default=200)
    args = parser.parse_args()
    msgs = history(2000)
    window = 200_000
    compactor = Compactor(ScriptedModel(default=SUMMARY))
    total = compactor.tokens.total(msgs)

    def uncached() -> None:
        MessageCounter().total(msgs)

    cold = median_ms(uncached, max(5, args.turns // 20))
    compactor.should_compact(msgs, window=window)  # counts cached
    warm = median_ms(lambda: compactor.should_compact(msgs, window=window), args.turns)

    scratch = tempfile.TemporaryDirectory(prefix="memoir-compaction-bench-")
    store = SQLiteStore(Path(scratch.name) / "memoir.db")  # checkpoints and traces, for real
    replaying = Compactor(ScriptedModel(default=SUMMARY), store=store)
    replaying.compact(msgs, window=60_000, session_id="bench")
    replaying.should_compact(msgs, window=60_000, session_id="bench")
    replay = median_ms(
        lambda: replaying.should_compact(msgs, window=60_000, session_id="bench"), args.turns
    )

    giant = [
        {"role": "user", "content": "Read big.log."},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {
                    "id": "c1",
                    "type": "function",
                    "function": {"name": "read_file", "arguments": "{}"},
                }
            ],
        },
        {"role": "tool", "tool_call_id": "c1", "content": "data" + " x" * 225_009},
    ]
    full = median_ms(
        lambda: Compactor(ScriptedModel(default=SUMMARY)).compact(giant, window=32_000), 5
    )

    when = datetime.now(UTC).strftime("%Y-%m-%d")
    machine = (
        f"{platform.machine()}, {platform.python_implementation()} {platform.python_version()}"
    )
    print(f"2,000 messages, {total} tokens; {args.turns} turns; {machine}; {when}")
    print(
        f"| should_compact, 2,000 messages, counts cached | {warm:.3f} ms median | target < 2 ms |"
    )
    print(
        f"| same, uncached first count (baseline) | {cold:.1f} ms median | "
        f"cache is {cold / warm:.0f}x faster |"
    )
    print(f"| should_compact replaying a checkpoint | {replay:.3f} ms median | |")
    print(
        f"| compact(), one 225,010-token tool result, 32k window | {full:.1f} ms median | "
        "scripted summarizer |"
    )


if __name__ == "__main__":
    main()
