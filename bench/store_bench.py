"""Store benchmarks: ingest write cost and full-text query latency at the store level.

(a) ingest: ``--sessions`` synthetic sessions (``--turns`` exchanges of prompt, tool call,
    tool result and reply each) written through ``Store.apply_ingest`` (one transaction per
    session), against a bare loop in the same process that inserts the same prompt and
    reply text into a plain FTS5 table with ``executemany`` (one transaction per session).
    Reports MB of event text per CPU second for both, and their ratio. ``--pg`` also runs
    the store on PostgreSQL (MEMOIR_TEST_PG_URL, a fresh schema).

(b) search: ``Store.search_text`` on an existing SQLite database (``--db``, default the
    1,000,000-exchange corpus of bench/search_latency_bench.py) for the same queries under
    no filter, a project filter, a date range and a role filter. Reports p50/p95/max ms.

    .venv/bin/python bench/store_bench.py ingest [--sessions 200] [--turns 50] [--pg]
    .venv/bin/python bench/store_bench.py search [--db PATH] [--queries 200]
"""

from __future__ import annotations

import argparse
import os
import random
import sqlite3
import statistics
import sys
import tempfile
import time
import urllib.parse
import uuid
from datetime import UTC, datetime, timedelta
from pathlib import Path

from memoir.model import Author, Event, EventKind, Harness, Session, build_exchanges
from memoir.store import IngestBatch, SearchFilters, Store
from memoir.store.sqlite_store import SQLiteStore

__all__: list[str] = []

ROOT = Path(__file__).resolve().parents[1]
_VOCABULARY = (
    "the a to of and in is that for it with as on be this are function value return error "
    "test file import class config request response cache index query database session user "
    "token model latency retry timeout build deploy docker branch commit merge review parser "
    "offset buffer thread async lock queue worker schema migration column table row filter"
)
WORDS = _VOCABULARY.split(" ")
T0 = datetime(2024, 1, 1, tzinfo=UTC)


def _text(rng: random.Random, n: int) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(n))


def sessions(count: int, turns: int, seed: int = 5) -> list[tuple[Session, list[Event]]]:
    rng = random.Random(seed)
    out = []
    for s in range(count):
        sid = f"bench-{s:05d}"
        events: list[Event] = []
        for t in range(turns):
            at = T0 + timedelta(hours=s, minutes=t)
            n = len(events) + 1
            events += [
                Event(sid, n, EventKind.USER_TEXT, Author.USER, _text(rng, 40), at),
                Event(
                    sid,
                    n + 1,
                    EventKind.TOOL_CALL,
                    Author.ASSISTANT,
                    _text(rng, 20),
                    at,
                    tool_name="Read",
                    call_id=f"c{n}",
                    payload={"input": {"path": "x.py"}},
                ),
                Event(
                    sid,
                    n + 2,
                    EventKind.TOOL_RESULT,
                    Author.TOOL,
                    _text(rng, 400),
                    at,
                    tool_name="Read",
                    call_id=f"c{n}",
                ),
                Event(sid, n + 3, EventKind.ASSISTANT_TEXT, Author.ASSISTANT, _text(rng, 120), at),
            ]
        out.append((Session(sid, f"p{s % 9}", Harness.CLAUDE_CODE, created_at=T0), events))
    return out


def _mb(data: list[tuple[Session, list[Event]]]) -> float:
    return sum(len(e.text.encode()) for _, evs in data for e in evs) / 2**20


def time_store(store: Store, data: list[tuple[Session, list[Event]]]) -> float:
    cpu = time.process_time()
    for session, events in data:
        store.ingest.apply(IngestBatch(session, tuple(events), tuple(build_exchanges(events))))
    return time.process_time() - cpu


def time_bare(path: Path, data: list[tuple[Session, list[Event]]]) -> float:
    conn = sqlite3.connect(path)
    conn.execute("PRAGMA journal_mode=WAL")
    conn.execute("PRAGMA synchronous=NORMAL")
    conn.execute("CREATE VIRTUAL TABLE fts USING fts5(text)")
    cpu = time.process_time()
    for _, events in data:
        with conn:
            conn.executemany("INSERT INTO fts(text) VALUES (?)", [(e.text,) for e in events])
    took = time.process_time() - cpu
    conn.close()
    return took


def _pg_schema_url(admin: str) -> tuple[str, str]:
    name = f"memoir_bench_{uuid.uuid4().hex[:8]}"
    parts = urllib.parse.urlsplit(admin)
    query = urllib.parse.urlencode(
        [("options", f"-c search_path={name}")], quote_via=urllib.parse.quote
    )
    return name, urllib.parse.urlunsplit(parts._replace(query=query))


def ingest(args: argparse.Namespace) -> None:
    data = sessions(args.sessions, args.turns)
    mb = _mb(data)
    with tempfile.TemporaryDirectory() as tmp:
        store = SQLiteStore(Path(tmp) / "store.db")
        store_s = time_store(store, data)
        store.close()
        bare_s = time_bare(Path(tmp) / "bare.db", data)
    print(f"{mb:.1f} MB of event text, {args.sessions} sessions x {args.turns} exchanges")
    print(f"sqlite store  {mb / store_s:6.1f} MB/s CPU ({store_s:.2f} s)")
    print(
        f"bare FTS5     {mb / bare_s:6.1f} MB/s CPU ({bare_s:.2f} s)  ratio {bare_s / store_s:.2f}"
    )
    if args.pg:
        import psycopg

        from memoir.store.postgres_store import PostgresStore

        admin = os.environ["MEMOIR_TEST_PG_URL"]
        name, url = _pg_schema_url(admin)
        with psycopg.connect(admin, autocommit=True) as conn:
            conn.execute(f'CREATE SCHEMA "{name}"')
        try:
            pg = PostgresStore(url)
            began = time.perf_counter()
            cpu = time_store(pg, data)
            wall = time.perf_counter() - began
            pg.close()
            print(
                f"postgres store {mb / wall:6.1f} MB/s wall ({wall:.2f} s, client CPU {cpu:.2f} s)"
            )
        finally:
            with psycopg.connect(admin, autocommit=True) as conn:
                conn.execute(f'DROP SCHEMA "{name}" CASCADE')


def _queries(db: Path, count: int, seed: int = 3) -> list[str]:
    """Words drawn from the corpus itself: half frequent, half rarer."""
    conn = sqlite3.connect(db)
    rows = conn.execute("SELECT user_text FROM exchanges WHERE pk % 997 = 0 LIMIT 400").fetchall()
    conn.close()
    rng = random.Random(seed)
    words = [w for (t,) in rows for w in t.split() if len(w) > 3]
    return [" ".join(rng.sample(words, rng.randint(1, 3))) for _ in range(count)]


def _stats(samples: list[float]) -> str:
    ordered = sorted(samples)
    p95 = ordered[max(0, round(0.95 * len(ordered)) - 1)]
    return f"p50 {statistics.median(ordered):7.1f} ms  p95 {p95:7.1f} ms  max {ordered[-1]:7.1f} ms"


def search(args: argparse.Namespace) -> None:
    db = Path(args.db)
    if not db.exists():
        sys.exit(f"no database at {db}: run bench/search_latency_bench.py first or pass --db")
    store = SQLiteStore(db)
    n = store.stats()["exchanges"]
    qs = _queries(db, args.queries)
    store.index.search(qs[0], SearchFilters(), 10)  # warm-up
    print(f"{n:,} exchanges, {len(qs)} queries, limit 10")
    for label, filters in (
        ("no filter", SearchFilters()),
        ("project", SearchFilters(project="project-3")),
        (
            "date range",
            SearchFilters(
                after=datetime(2023, 3, 1, tzinfo=UTC), before=datetime(2023, 6, 1, tzinfo=UTC)
            ),
        ),
        ("role=user", SearchFilters(role="user")),
    ):
        samples = []
        for q in qs:
            began = time.perf_counter()
            store.index.search(q, filters, 10)
            samples.append(1000 * (time.perf_counter() - began))
        print(f"{label:<11} {_stats(samples)}")
    store.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    sub = parser.add_subparsers(dest="cmd", required=True)
    a = sub.add_parser("ingest")
    a.add_argument("--sessions", type=int, default=200)
    a.add_argument("--turns", type=int, default=50)
    a.add_argument("--pg", action="store_true")
    b = sub.add_parser("search")
    b.add_argument("--db", default=str(ROOT / ".tmp/search-latency/corpus-1000000/memoir.db"))
    b.add_argument("--queries", type=int, default=200)
    args = parser.parse_args()
    ingest(args) if args.cmd == "ingest" else search(args)


if __name__ == "__main__":
    main()
