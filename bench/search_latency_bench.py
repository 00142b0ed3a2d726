"""Search latency over a synthetic 1,000,000-exchange SQLite archive.

    .venv/bin/python bench/search_latency_bench.py [--n 1000000] [--queries 200] [--json]

The corpus is generated once and cached (``.tmp/search-latency/corpus-<n>/``; delete it
or pass ``--rebuild`` to regenerate): sessions of 500 exchanges written through
``Store.apply_ingest`` (events, exchanges and the FTS index in one transaction per
session). Text is English-like: one Zipf law (s = 1.1) over word ranks whose top 100 are
stop words and the rest a 30,000-word content vocabulary, so the most common content
words are in a few percent of exchanges and rare ones in a handful. Vectors are random unit
rows stored under the real embedder's name (their values do not change the cost of a
brute-force scan); the query is embedded by the real embedder when it is installed (else
the hash fake). Queries: 1–3 content words, half from the 300 most common words, half
from the rest. Reported: p50 / p95 / max in milliseconds for ``search()`` in text and
hybrid mode (the whole library path: store query, snippets, neighbour context, fusion,
late-interaction re-rank, exchange and session lookups), after one warm-up query per mode;
then again with the home's one user (as the library and the CLI search), a project filter
(one project of 40) and a three-month date range.
``--cli`` also times whole ``memoir search`` processes, with and without the vector cache
files (:mod:`memoir.search.matrix_files`).

Hybrid is timed twice: first with no token states stored (the re-rank finds nothing to
read), then after every exchange that reaches a query's re-rank head has been given
synthetic token states of a realistic size (:data:`TOKENS_PER_EXCHANGE` rows of the
embedder's token width) — what the re-rank costs (reading those rows, one MaxSim each)
does not depend on their values, and storing them for all 1M exchanges (~8 GB) would
only make the cached corpus bigger, not the query slower.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import numpy as np

from memoir.config import Settings
from memoir.memory.item_store import memory_parts
from memoir.model import Author, Event, EventKind, Exchange, Harness, Session
from memoir.model.event import LOCAL_USER
from memoir.search import load_embedder, search
from memoir.search.embedders import HashEmbedder, TokenEmbedder
from memoir.search.ranking import RERANK_DEPTH, pack_tokens
from memoir.store import IngestBatch, Store, open_store
from memoir.store.search_text import STOPWORDS
from memoir.store.values import SearchFilters

__all__: list[str] = []

ROOT = Path(__file__).resolve().parents[1]
PER_SESSION = 500
VOCAB = 30_000
STOP_RANKS = 100
TOKENS_PER_EXCHANGE = 80
SYLLABLES = ["ka", "lo", "mi", "ren", "sto", "vu", "tal", "shi", "per", "gon", "da", "xen"]


def vocabulary(rng: np.random.Generator) -> list[str]:
    words: set[str] = set()
    while len(words) < VOCAB:
        n = int(rng.integers(2, 6))
        words.add("".join(SYLLABLES[i] for i in rng.integers(0, len(SYLLABLES), n)))
    return sorted(words)


def _texts(rng: np.random.Generator, words: list[str], count: int, length: int) -> list[str]:
    """Word ranks follow one Zipf law over stop words and content words together: the top
    ``STOP_RANKS`` ranks are stop words (as in English, where the most frequent words are
    function words), the rest index the content vocabulary."""
    stop = sorted(STOPWORDS)
    ranks = rng.zipf(1.1, size=(count, length))
    out = []
    for row in ranks:
        toks = [
            stop[(r - 1) % len(stop)] if r <= STOP_RANKS else words[(r - STOP_RANKS - 1) % VOCAB]
            for r in row.tolist()
        ]
        out.append(" ".join(toks))
    return out


def generate(store: Store, n: int, seed: int = 7) -> None:
    rng = np.random.default_rng(seed)
    words = vocabulary(rng)
    start = datetime(2023, 1, 1, tzinfo=UTC)
    sessions = (n + PER_SESSION - 1) // PER_SESSION
    began = time.perf_counter()
    for s in range(sessions):
        count = min(PER_SESSION, n - s * PER_SESSION)
        sid = f"bench-{s:05d}"
        when = start + timedelta(hours=6 * s)
        users = _texts(rng, words, count, 18)
        replies = _texts(rng, words, count, 36)
        events: list[Event] = []
        exchanges: list[Exchange] = []
        for i in range(count):
            t = when + timedelta(seconds=20 * i)
            o = 2 * i + 1
            events.append(Event(sid, o, EventKind.USER_TEXT, Author.USER, users[i], t))
            events.append(
                Event(sid, o + 1, EventKind.ASSISTANT_TEXT, Author.ASSISTANT, replies[i], t)
            )
            exchanges.append(Exchange(f"{sid}:{o}", sid, o, o + 1, users[i], replies[i], (), t, t))
        session = Session(sid, f"project-{s % 40}", Harness.CLAUDE_CODE, created_at=when)
        store.ingest.apply(IngestBatch(session, tuple(events), tuple(exchanges)))
        if s % 100 == 0:
            rate = (s + 1) * PER_SESSION / (time.perf_counter() - began)
            print(f"  {(s + 1) * PER_SESSION:>9,} exchanges ({rate:,.0f}/s)", file=sys.stderr)


def add_vectors(store: Store, model: str, dim: int, seed: int = 11) -> None:
    rng = np.random.default_rng(seed)
    while True:
        backlog = store.embeddings.backlog(model, 20_000)
        if not backlog:
            return
        vectors = rng.standard_normal((len(backlog), dim), dtype=np.float32)
        vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
        store.embeddings.put(
            model, [(xid, vectors[i].tobytes()) for i, (xid, _) in enumerate(backlog)], dim
        )


def add_token_states(store: Store, embedder: TokenEmbedder, qs: list[str]) -> int:
    """Synthetic token states for every exchange in the re-rank head of these queries."""
    rng = np.random.default_rng(13)
    width = int(embedder.query_with_tokens("width")[1].shape[1])
    head: set[str] = set()
    for q in qs:
        head.update(
            h.exchange_id
            for h in search(store, q, mode="hybrid", embedder=embedder, limit=RERANK_DEPTH)
        )
    rows = [
        (pack_tokens(rng.standard_normal((TOKENS_PER_EXCHANGE, width))), embedder.name, xid)
        for xid in sorted(head)
    ]
    with store._tx() as tx:  # type: ignore[attr-defined]  # bench only: fill one column
        tx.many("UPDATE embeddings SET tokens = ? WHERE model = ? AND exchange_id = ?", rows)
    return len(rows)


def queries(count: int, seed: int = 3) -> list[str]:
    rng = np.random.default_rng(seed)
    words = vocabulary(np.random.default_rng(7))
    order = (np.arange(VOCAB) % len(words)).tolist()
    out = []
    for q in range(count):
        pool = order[:300] if q % 2 == 0 else order[300:]
        picks = rng.choice(len(pool), size=int(rng.integers(1, 4)), replace=False)
        out.append(" ".join(words[pool[int(i)]] for i in picks))
    return out


def percentiles(samples: list[float]) -> dict[str, float]:
    ordered = sorted(samples)
    p95 = ordered[max(0, round(0.95 * len(ordered)) - 1)]
    return {
        "p50_ms": round(statistics.median(ordered), 2),
        "p95_ms": round(p95, 2),
        "max_ms": round(ordered[-1], 2),
    }


def timed(
    store: Store,
    embedder: object,
    qs: list[str],
    mode: str,
    filters: SearchFilters | None = None,
) -> dict[str, float]:
    kw: dict[str, Any] = {"mode": mode, "embedder": embedder, "filters": filters}
    kw["items"] = memory_parts(store).items  # as Memoir.search reads them
    search(store, qs[0], **kw)  # warm-up (and the filter's one-off loads)
    samples = []
    for q in qs[1:]:
        began = time.perf_counter()
        search(store, q, limit=10, **kw)
        samples.append(1000 * (time.perf_counter() - began))
    return percentiles(samples)


# filtered searches: the home's one user (every exchange: what the library and the CLI
# search with, one user per Memoir), one project of 40 (2.5%), three months (~18%)
FILTERS = {
    "user": SearchFilters(user=LOCAL_USER),
    "project": SearchFilters(project="project-7"),
    "3_months": SearchFilters(
        after=datetime(2024, 3, 1, tzinfo=UTC), before=datetime(2024, 6, 1, tzinfo=UTC)
    ),
}


def cli_timings(home: Path, query: str, runs: int = 3) -> dict[str, object]:
    """Wall seconds of whole `memoir search` processes (interpreter, imports, model and
    matrix loads included): text, then hybrid with the vector cache files removed first
    (the first process reads the database and writes them), then hybrid again."""
    import shutil
    import subprocess

    def run(*extra: str) -> float:
        began = time.perf_counter()
        subprocess.run(
            [sys.executable, "-m", "memoir.cli", "search", query, "--limit", "10", *extra],
            env={**os.environ, "MEMOIR_HOME": str(home)},
            check=True,
            capture_output=True,
        )
        return round(time.perf_counter() - began, 2)

    shutil.rmtree(home / "cache", ignore_errors=True)
    return {
        "cli_text_s": [run("--mode", "text") for _ in range(runs)],
        "cli_hybrid_uncached_s": run(),
        "cli_hybrid_s": [run() for _ in range(runs)],
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=1_000_000)
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--rebuild", action="store_true")
    parser.add_argument("--json", action="store_true")
    parser.add_argument(
        "--cli", action="store_true", help="also time whole `memoir search` processes"
    )
    args = parser.parse_args()
    home = ROOT / ".tmp" / "search-latency" / f"corpus-{args.n}"
    if args.rebuild and home.exists():
        for p in home.iterdir():
            p.unlink()
    fresh = not (home / "memoir.db").exists()
    home.mkdir(parents=True, exist_ok=True)
    store = open_store(Settings.from_env({"MEMOIR_HOME": str(home)}, sources=()))
    embedder = load_embedder("auto") or HashEmbedder(dim=384)
    if fresh:
        began = time.perf_counter()
        generate(store, args.n)
        print(f"generated in {time.perf_counter() - began:.0f} s", file=sys.stderr)
    add_vectors(store, embedder.name, embedder.dim)
    report: dict[str, object] = {"exchanges": args.n, "embedder": embedder.name}
    qs = queries(args.queries + 1)
    for label, mode in (("text", "text"), ("hybrid_no_token_states", "hybrid")):
        report[label] = timed(store, embedder, qs, mode)
    if isinstance(embedder, TokenEmbedder):
        report["token_states_written"] = add_token_states(store, embedder, qs)
        report["hybrid"] = timed(store, embedder, qs, "hybrid")
    for name, filters in FILTERS.items():
        for mode in ("text", "hybrid"):
            report[f"{mode}_{name}"] = timed(store, embedder, qs, mode, filters)
    store.close()
    if args.cli:
        report.update(cli_timings(home, qs[1]))
    if args.json:
        print(json.dumps(report, indent=2))
    else:
        for key, value in report.items():
            print(f"{key}: {value}")


if __name__ == "__main__":
    main()
