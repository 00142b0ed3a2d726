"""Recall latency at 100,000 memory items (SQLite), and the context block's build time.

    .venv/bin/python bench/memory_recall_bench.py [--items 100000] [--queries 200] [--json]

Items are generated (seeded): one first-person sentence each from a fixed vocabulary,
1–4 keys, five kinds, 50 projects, half of them project-scoped; written through the
store's item writer (the path extraction settles through, merges included). Queries are
2–4 words drawn from the same vocabulary. Timed: ``recall`` by text, then — when the
embeddings extra is installed — hybrid recall with the bundled MiniLM embedding the
query and random unit vectors standing in for the items' (timing only: their values do
not matter to the cost); and ``Memoir.context``'s two steps (the standing order
over a project's items — its first 200 candidates, as ``memory_context`` reads for an
800-token budget — and rendering within 800 tokens).
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import tempfile
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

import numpy as np

from memoir.llm import counter_for
from memoir.memory.item_rows import MemoryItemRow, MemorySourceRow, key_sig
from memoir.memory.item_store import memory_parts
from memoir.memory.recall import KIND_ORDER, context_block, recall, standing_order
from memoir.store.sqlite_store import SQLiteStore
from memoir.store.values import ItemFilter

__all__: list[str] = []

_VOCABULARY = (
    "tabs spaces python rust postgres redis docker kubernetes berlin lisbon porto coffee tea "
    "running cycling piano guitar sister brother daughter dog cat garden kitchen invoice "
    "billing deploy friday monday release branch main review tests fixtures migrations "
    "schema index cache queue worker api frontend backend mobile android ios laptop editor "
    "vim emacs vscode terminal shell zsh fish keyboard mouse monitor desk chair morning "
    "evening vegetarian peanuts allergy gluten marathon holiday japan spain italy books "
    "novels podcasts music jazz rock painting pottery climbing swimming yoga chess"
)
WORDS = tuple(_VOCABULARY.split())
KINDS = ("fact", "preference", "decision", "plan", "constraint")
T0 = datetime(2026, 1, 1, tzinfo=UTC)


def _items(n: int, rng: random.Random) -> list[MemoryItemRow]:
    out = []
    for i in range(n):
        words = rng.sample(WORDS, rng.randint(3, 7))
        content = f"I {rng.choice(['like', 'use', 'prefer', 'have', 'want'])} " + " ".join(words)
        content += f" ({i})."
        keys = tuple(words[: rng.randint(1, 4)])
        project = f"p{rng.randrange(50)}"
        scope = "project" if rng.random() < 0.5 else "global"
        at = T0 + timedelta(minutes=i)
        out.append(
            MemoryItemRow(
                id=f"{i:016x}",
                session_id=f"s{i % 5000}",
                project=project,
                scope=scope,
                kind=rng.choice(KINDS),
                content=content,
                normalized=content.casefold(),
                keys=keys,
                operation_id=f"op{i}",
                created_at=at,
                observed_at=at,
                first_observed_at=at,
                valid_from=at,
                sources=(MemorySourceRow(f"s{i % 5000}", 1 + i % 40, content, f"op{i}"),),
                owner="local",
                scope_key=project if scope == "project" else "",
                key_sig=key_sig(keys),
            )
        )
    return out


def _ms(samples: list[float]) -> dict[str, float]:
    ordered = sorted(samples)
    return {
        "p50_ms": round(1000 * statistics.median(ordered), 2),
        "p95_ms": round(1000 * ordered[int(0.95 * (len(ordered) - 1))], 2),
    }


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--items", type=int, default=100_000)
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    rng = random.Random(7)
    out: dict[str, object] = {"items": args.items, "queries": args.queries}
    with tempfile.TemporaryDirectory() as tmp:
        store = SQLiteStore(Path(tmp) / "memoir.db")
        started = time.perf_counter()
        rows = _items(args.items, rng)
        for start in range(0, len(rows), 2_000):
            memory_parts(store).items.save(rows[start : start + 2_000])
        out["write_s"] = round(time.perf_counter() - started, 1)
        out["live_items"] = memory_parts(store).items.count()
        queries = [" ".join(rng.sample(WORDS, rng.randint(2, 4))) for _ in range(args.queries)]
        times = []
        for q in queries:
            t = time.perf_counter()
            recall(memory_parts(store).items, q, ItemFilter(), limit=10)
            times.append(time.perf_counter() - t)
        out["recall_text"] = _ms(times)
        times = []
        for q in queries:
            t = time.perf_counter()
            recall(
                memory_parts(store).items,
                q,
                ItemFilter(projects=("p7",), kinds=("fact",)),
                limit=10,
            )
            times.append(time.perf_counter() - t)
        out["recall_text_filtered"] = _ms(times)
        try:
            from memoir.search.embedders import load_embedder

            embedder = load_embedder("auto")
        except Exception:  # the extra is optional
            embedder = None
        if embedder is not None:
            vectors = rng_vectors(len(rows), embedder.dim)
            ids = [r.id for r in rows]
            for start in range(0, len(ids), 10_000):
                chunk = ids[start : start + 10_000]
                memory_parts(store).items.put_vectors(
                    embedder.name, {i: vectors[start + n] for n, i in enumerate(chunk)}
                )
            times = []
            for q in queries[:50]:
                t = time.perf_counter()
                recall(memory_parts(store).items, q, ItemFilter(), limit=10, embedder=embedder)
                times.append(time.perf_counter() - t)
            out["recall_hybrid"] = {**_ms(times), "queries": 50, "embedder": embedder.name}
        counter = counter_for("cl100k_base")
        where = ItemFilter(projects=("p7",))
        order_t, render_t = [], []
        for _ in range(20):
            t = time.perf_counter()
            found = memory_parts(store).items.select(where, limit=200, standing=KIND_ORDER)
            items = standing_order(found)
            order_t.append(time.perf_counter() - t)
            t = time.perf_counter()
            block = context_block(items, 800, counter)
            render_t.append(time.perf_counter() - t)
        out["context_items_considered"] = len(items)
        out["context_read_and_order"] = _ms(order_t)
        out["context_render_800"] = {**_ms(render_t), "tokens": block.tokens}
        store.close()
    if args.json:
        print(json.dumps(out))
    else:
        for key, value in out.items():
            print(f"{key}: {value}")


def rng_vectors(n: int, dim: int) -> np.ndarray:
    m = np.random.default_rng(7).standard_normal((n, dim)).astype(np.float32)
    return m / np.linalg.norm(m, axis=1, keepdims=True)


if __name__ == "__main__":
    main()
