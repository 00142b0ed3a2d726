"""Episodic summarizer concurrency benchmark.

A scripted model answers each episode after ``--episode-delay`` seconds and the merge after
``--merge-delay``. An 8-episode history at concurrency 4 should take two waves of episodes
plus the merge: ideal = 2 × episode delay + merge delay. The script reports the median wall
time over ``--runs`` runs and its ratio to the ideal (target: within 15%, ratio ≤ 1.15),
plus the same run at concurrency 1 as an in-process baseline (ideal 8 × episode delay +
merge delay)::

    .venv/bin/python bench/episodes_bench.py [--runs 5] [--episode-delay 0.25]
        [--merge-delay 0.25] [--episode-tokens 4000] [--json]
"""

from __future__ import annotations

import argparse
import json
import platform
import statistics
import time
from datetime import UTC, datetime

from memoir.llm import ScriptedModel, default_counter
from memoir.llm.port import ModelRequest, Purpose
from memoir.model import Author, Event, EventKind
from memoir.summaries.episodic import EpisodicSummarizer

__all__: list[str] = []

EPISODES = 8


def history(episode_tokens: int) -> list[Event]:
    """Messages of about a fifth of an episode each: four per episode, eight episodes."""
    counter = default_counter()
    n = 10
    while counter.count("User: turn 00: " + " ".join(f"w{i}" for i in range(n))) < (
        episode_tokens // 5
    ):
        n += 10
    words = " ".join(f"w{i}" for i in range(n))
    out: list[Event] = []
    for k in range(EPISODES * 2):  # a user and an assistant message per turn
        for kind, author in (
            (EventKind.USER_TEXT, Author.USER),
            (EventKind.ASSISTANT_TEXT, Author.ASSISTANT),
        ):
            out.append(Event("bench", len(out) + 1, kind, author, f"turn {k}: {words}"))
    return out


def model(episode_delay: float, merge_delay: float) -> ScriptedModel:
    answer = json.dumps({"narrative": "n", "facts": ["f"], "keywords": ["k"]})

    def reply(request: ModelRequest) -> str:
        merge = request.meta.purpose is Purpose.MERGE
        time.sleep(merge_delay if merge else episode_delay)
        return answer

    return ScriptedModel(default=reply, name="scripted:bench")


def measure(concurrency: int, args: argparse.Namespace, events: list[Event]) -> float:
    times = []
    for _ in range(args.runs):
        summarizer = EpisodicSummarizer(
            model(args.episode_delay, args.merge_delay),
            concurrency=concurrency,
            episode_tokens=args.episode_tokens,
        )
        started = time.perf_counter()
        summary = summarizer.summarize(events)
        times.append(time.perf_counter() - started)
        if summary.episodes != EPISODES:
            raise SystemExit(f"expected {EPISODES} episodes, got {summary.episodes}")
    return statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--episode-delay", type=float, default=0.25)
    parser.add_argument("--merge-delay", type=float, default=0.25)
    parser.add_argument("--episode-tokens", type=int, default=4000)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    events = history(args.episode_tokens)
    ideal4 = 2 * args.episode_delay + args.merge_delay
    ideal1 = EPISODES * args.episode_delay + args.merge_delay
    wall4 = measure(4, args, events)
    wall1 = measure(1, args, events)
    result = {
        "date": datetime.now(UTC).strftime("%Y-%m-%d"),
        "machine": f"{platform.machine()} {platform.system()} py{platform.python_version()}",
        "episodes": EPISODES,
        "runs": args.runs,
        "episode_delay_s": args.episode_delay,
        "merge_delay_s": args.merge_delay,
        "concurrency4_median_s": round(wall4, 4),
        "concurrency4_ideal_s": ideal4,
        "concurrency4_ratio": round(wall4 / ideal4, 4),
        "concurrency1_median_s": round(wall1, 4),
        "concurrency1_ratio": round(wall1 / ideal1, 4),
        "speedup": round(wall1 / wall4, 3),
        "within_15pct": wall4 / ideal4 <= 1.15,
    }
    if args.json:
        print(json.dumps(result, indent=2))
        return
    print(
        f"| {result['date']} | {result['machine']} | 8 episodes, delay "
        f"{args.episode_delay}s/{args.merge_delay}s | concurrency 4: {wall4:.3f}s vs ideal "
        f"{ideal4:.3f}s (ratio {wall4 / ideal4:.3f}) | concurrency 1: ratio "
        f"{wall1 / ideal1:.3f} | speed-up {wall1 / wall4:.2f}× |"
    )


if __name__ == "__main__":
    main()
