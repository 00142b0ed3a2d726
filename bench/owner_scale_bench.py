"""Reads that cost only the caller's data (issue 37, points 2 and 4): one user's lists
and searches, alone in a home and beside many other users, in the same run.

    PYTHONPATH=src .venv/bin/python bench/owner_scale_bench.py [--json]
        [--database-url URL] [--others 200] [--other-sessions 10000]
        [--other-items 100000] [--exchanges 3] [--repeat 30] [--explain]
        [--before-src DIR]

Two homes of one backend (SQLite by default; ``--database-url``: a fresh PostgreSQL
schema each, dropped afterwards), each with user ``alice``: 50 sessions of 4 messages
(2 exchanges) appended through ``service.append_messages`` (embedded on write by the fake
``hash`` embedder, so search's default mode is hybrid) and 500 memory items. The second
home also holds ``--others`` other users with ``--other-sessions`` sessions between
them (``--exchanges`` exchanges each, with their events, full-text index rows and random
unit vectors) and ``--other-items`` memory items (with random vectors). Those are bulk
inserts into the store's own tables (``Tx.many``), then the store's own index rebuild;
the items are inserted as the item writer inserts them (row, sources, full-text row),
5,000 a statement.

Timed through the real app in process (FastAPI ``TestClient``, alice's key), alternating
the two homes for each request, ``--repeat`` times after a warm-up: the median ms of

- ``GET /api/sessions?order=recent&limit=5`` (page 1) and its 10th page (by cursor),
- ``GET /api/memories`` (newest 100) and ``GET /api/memories?q=…`` (recall),
- ``GET /api/search?q=…`` (default mode: hybrid), ``&mode=vector`` and ``&mode=text``,
  and the default mode again right after a write of alice's (untimed: one message
  appended and embedded),
- the default mode and ``&mode=vector`` right after a write of *another* user's (``bob``,
  in both homes with one scratch session; his message appended and embedded, untimed):
  what a replica pays to learn of someone else's write (issue 37, point 4),

and the ratio beside/alone (target: ≤ 1.2). The client's own cost is in both arms alike.
Beside each search route: ``matrix_ms``, the median time inside ``matrix_for`` (bringing
the replica's vector matrix up to date), which the machine's load disturbs less.
``--only search`` times the search routes alone. ``--before-src DIR`` first runs the same
bench (same arguments) in a child process over another checkout's ``src`` (e.g. ``git
archive main src``) and reports its table beside as ``before``.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import platform
import random
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import numpy as np

from memoir import service
from memoir.memory.item_store import memory_parts

sys.path.insert(0, str(Path(__file__).resolve().parent))
from server_bench import _pg_schema

__all__: list[str] = []

USER = "alice"
T0 = datetime(2026, 1, 5, 9, 0, tzinfo=UTC)
WORDS = [
    "deploy", "checklist", "staging", "rollback", "migration", "schema", "index", "latency",
    "cache", "worker", "queue", "retry", "timeout", "config", "review", "branch", "release",
    "tests", "fixture", "docker", "image", "billing", "invoice", "garden", "piano", "sister",
    "coffee", "lisbon", "porto", "kitchen", "monday", "friday", "postgres", "redis",
]  # fmt: skip
KINDS = ("fact", "preference", "decision", "plan", "constraint")


def _sentence(rng: random.Random, n: int) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(n))


def _others_sentence(rng: random.Random, n: int) -> str:
    """Other users' text: words of a 20,000-word vocabulary (Zipf-like), two of alice's."""
    words = [f"w{int(rng.paretovariate(1.1)) % 20_000}" for _ in range(n - 2)]
    words += rng.sample(WORDS, 2)
    rng.shuffle(words)
    return " ".join(words)


def _items(owner: str, n: int, rng: random.Random, tag: str) -> list[Any]:
    from memoir.memory.item_rows import MemoryItemRow, MemorySourceRow, key_sig

    out = []
    for i in range(n):
        words = rng.sample(WORDS, rng.randint(3, 7))
        content = f"I {rng.choice(['like', 'use', 'prefer', 'want'])} " + " ".join(words)
        content += f" ({tag}{i})."
        keys = tuple(words[: rng.randint(1, 3)])
        at = T0 + timedelta(minutes=i)
        sid = f"{owner}-s{i % 50}"
        out.append(
            MemoryItemRow(
                id=f"{tag}{i:09d}",
                session_id=sid,
                project=f"p{i % 7}",
                scope="global",
                kind=rng.choice(KINDS),
                content=content,
                normalized=content.casefold(),
                keys=keys,
                operation_id=f"op-{tag}{i}",
                created_at=at,
                observed_at=at,
                first_observed_at=at,
                valid_from=at,
                sources=(MemorySourceRow(sid, 1, content, f"op-{tag}{i}"),),
                owner=owner,
                scope_key="",
                key_sig=key_sig(keys),
            )
        )
    return out


def _unit(rng: np.random.Generator, n: int, dim: int) -> np.ndarray:
    m = rng.standard_normal((n, dim)).astype(np.float32)
    return m / np.linalg.norm(m, axis=1, keepdims=True)


def _alice(memoir: Any) -> None:
    """Alice's own data, the same in both homes (seeded)."""
    rng = random.Random(1)
    for s in range(50):
        sid = f"{USER}-s{s}"
        service.create_session(memoir, USER, session_id=sid, project=f"p{s % 7}")
        messages = [
            {
                "role": "user" if m % 2 == 0 else "assistant",
                "content": f"{_sentence(rng, 12)} session {s} turn {m}",
                "id": f"{s}-{m}",
            }
            for m in range(4)
        ]
        service.append_messages(memoir, USER, sid, messages)
    items = _items(USER, 500, rng, "a")
    memory_parts(memoir.store).items.save(items)


def _others(memoir: Any, args: argparse.Namespace, log: Callable[[str], None]) -> None:
    """Other users' sessions, exchanges, events, index rows, vectors and memory items, in
    bulk through the store's own tables."""
    store = memoir.store
    rng = random.Random(2)
    nrng = np.random.default_rng(3)
    kind_author = store._db.rows("SELECT kind, author FROM events ORDER BY ordinal LIMIT 2")
    per_user = args.other_sessions // args.others
    started = time.perf_counter()
    for u in range(args.others):
        name = f"user{u:03d}"
        store.users.add(name)
        sessions, events, exchanges = [], [], []
        with store._db.tx() as tx:
            for s in range(per_user):
                sid = f"{name}-s{s}"
                at = T0 + timedelta(hours=s)
                flags = (False, False, False, False)
                sessions.append(
                    (sid, f"p{s % 7}", "api", name, None, None, *flags, tx.time(at), tx.time(at))
                )
                for x in range(args.exchanges):
                    when = tx.time(at + timedelta(minutes=x))
                    user_text, reply = _others_sentence(rng, 14), _others_sentence(rng, 20)
                    o = 2 * x + 1
                    for k, (ordinal, text) in enumerate(((o, user_text), (o + 1, reply))):
                        kind, author = kind_author[k]
                        events.append((sid, ordinal, kind, author, when, text, False))
                    exchanges.append((f"{sid}:{o}", sid, o, o + 1, when, when, user_text, reply))
            tx.many(
                "INSERT INTO sessions (id, project, harness, user_name, source_path, cwd, "
                "incognito, archived, subagent, memory_disabled, created_at, updated_at) "
                "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                sessions,
            )
            tx.many(
                "INSERT INTO events (session_id, ordinal, kind, author, ts, text, "
                "time_inferred) VALUES (?, ?, ?, ?, ?, ?, ?)",
                events,
            )
            tx.many(
                "INSERT INTO exchanges (id, session_id, first_ordinal, last_ordinal, "
                "started_at, ended_at, user_text, assistant_text) "
                "VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                exchanges,
            )
        ids = [x[0] for x in exchanges]
        vecs = _unit(nrng, len(ids), 256)
        store.embeddings.put("hash-256", [(i, vecs[n].tobytes()) for n, i in enumerate(ids)], 256)
    log(f"  sessions, events, exchanges, vectors: {time.perf_counter() - started:.1f} s")
    t = time.perf_counter()
    store.index.repair()
    log(f"  full-text index rebuilt: {time.perf_counter() - t:.1f} s")
    t = time.perf_counter()
    per = args.other_items // args.others
    rows = []
    for u in range(args.others):
        rows += _items(f"user{u:03d}", per, rng, f"u{u:03d}-")
    for start in range(0, len(rows), 5000):
        _bulk_items(store, rows[start : start + 5000])
    ids = [r.id for r in rows]
    vecs = _unit(nrng, len(ids), 256)
    for start in range(0, len(ids), 10_000):
        chunk = ids[start : start + 10_000]
        memory_parts(store).items.put_vectors(
            "hash-256", {i: vecs[start + n] for n, i in enumerate(chunk)}
        )
    log(f"  memory items and their vectors: {time.perf_counter() - t:.1f} s")


def _bulk_items(store: Any, items: list[Any]) -> None:
    """Insert memory items as the item writer's insert does (the row, its sources, its
    full-text row: SQLite's FTS5 table; PostgreSQL's generated ``tsv``), many rows a
    statement. New ids, no merges: the items are distinct."""
    from memoir.memory.item_rows import ITEM_COLS
    from memoir.store.codec import dumps
    from memoir.store.migrations.v007_v013 import fts_body
    from memoir.store.sqlite_store import SQLiteStore

    sqlite = isinstance(store, SQLiteStore)
    with store._db.tx() as tx:
        first = int(tx.run("SELECT coalesce(max(fts_row), 0) FROM memory_items")[0][0]) + 1
        rows = []
        for n, i in enumerate(items):
            rows.append(
                (
                    *(i.id, i.session_id, i.project, i.scope, i.kind, i.content, i.normalized),
                    *(dumps(list(i.keys)), dumps(i.temporal), i.operation_id),
                    *(tx.time(i.created_at), tx.time(i.observed_at), None, None, i.owner),
                    *(i.scope_key, i.key_sig, tx.time(i.first_observed_at)),
                    *(tx.time(i.valid_from), None, first + n if sqlite else None),
                )
            )
        marks = ", ".join("?" * (len(ITEM_COLS.split(",")) + 1))
        tx.many(f"INSERT INTO memory_items ({ITEM_COLS}, fts_row) VALUES ({marks})", rows)
        tx.many(
            "INSERT INTO memory_sources (item_id, n, session_id, ordinal, quote, operation_id) "
            "VALUES (?, ?, ?, ?, ?, ?)",
            [
                (i.id, n, q.session_id, q.ordinal, q.quote, q.operation_id or i.operation_id)
                for i in items
                for n, q in enumerate(i.sources)
            ],
        )
        if sqlite and _has_owner_column(tx):  # v22: the owner's token beside the body
            from memoir.store.index_doc import owner_token

            tx.many(
                "INSERT INTO memory_fts (rowid, body, owner) VALUES (?, ?, ?)",
                [
                    (first + n, fts_body(i.content, i.keys), owner_token(i.owner))
                    for n, i in enumerate(items)
                ],
            )
        elif sqlite:
            tx.many(
                "INSERT INTO memory_fts (rowid, body) VALUES (?, ?)",
                [(first + n, fts_body(i.content, i.keys)) for n, i in enumerate(items)],
            )


def _has_owner_column(tx: Any) -> bool:
    return any(r[1] == "owner" for r in tx.run("PRAGMA table_info(memory_fts)"))


_MINE = "$$'#alice'$$::tsquery"
_EXPLAINED = {
    # the text side of alice's search and recall, with and without the owner condition
    "search_owner": "SELECT count(*) FROM exchange_search d WHERE "
    f"d.tsv @@ websearch_to_tsquery('english', 'rollback') AND d.tsv @@ {_MINE}",
    "search_all": "SELECT count(*) FROM exchange_search d "
    "WHERE d.tsv @@ websearch_to_tsquery('english', 'rollback')",
    "recall_owner": "SELECT count(*) FROM memory_items i WHERE "
    f"i.tsv @@ websearch_to_tsquery('english', 'deploy') AND i.tsv @@ {_MINE} "
    "AND i.owner = 'alice'",
    "recall_all": "SELECT count(*) FROM memory_items i WHERE "
    "i.tsv @@ websearch_to_tsquery('english', 'deploy') AND i.owner = 'alice'",
}


def _explain(memoir: Any) -> dict[str, list[str]]:
    """PostgreSQL's plans (ANALYZE, BUFFERS) of the owner-narrowed text match and the
    match over every user's rows (needs v22)."""
    db = memoir.store._db
    db.rows("ANALYZE")
    return {
        name: [str(r[0]) for r in db.rows(f"EXPLAIN (ANALYZE, BUFFERS) {sql}")]
        for name, sql in _EXPLAINED.items()
    }


@contextlib.contextmanager
def _home(root: Path, name: str, db: str | None) -> Iterator[Any]:
    from memoir.app import Memoir

    overrides: dict[str, Any] = {"llm": "offline", "embedder": "hash"}
    if db:
        overrides["database_url"] = db
    memoir = Memoir.at(root / name, **overrides)
    try:
        yield memoir
    finally:
        memoir.close()


def _client(memoir: Any, key: str) -> Any:
    from fastapi.testclient import TestClient

    from memoir.server import create_app

    return TestClient(create_app(memoir), headers={"Authorization": f"Bearer {key}"})


def _tenth_page(client: Any) -> str:
    url = "/api/sessions?order=recent&limit=5"
    cursor = None
    for _ in range(9):
        got = client.get(url + (f"&cursor={cursor}" if cursor else "")).json()
        cursor = got["next_cursor"]
        assert cursor, got
    return f"{url}&cursor={cursor}"


def _check(name: str, body: dict[str, Any], hers: set[str]) -> int:
    """How many rows a request answered (and that they are alice's: ``hers`` are her
    sessions' stored ids, digests of her names for them)."""
    data = body["data"]
    if "sessions" in data:
        rows = data["sessions"]
        assert all(r["id"] in hers for r in rows), name
        return len(rows)
    if "memories" in data:
        assert all(not m["id"].startswith("u") for m in data["memories"]), name
        return len(data["memories"])
    hits = data["hits"]
    assert all(h["session_id"] in hers for h in hits), name
    return len(hits)


def _timing_matrix_for() -> dict[str, float]:
    """Wrap search's ``matrix_for`` (the same name before and after) to add up its time."""
    from memoir.search import engine

    spent = {"s": 0.0}
    real = engine.matrix_for

    def timed(*args: Any, **kwargs: Any) -> Any:
        started = time.perf_counter()
        try:
            return real(*args, **kwargs)
        finally:
            spent["s"] += time.perf_counter() - started

    engine.matrix_for = timed  # type: ignore[assignment]
    return spent


def run(args: argparse.Namespace, log: Callable[[str], None]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    spent = _timing_matrix_for()
    with (
        tempfile.TemporaryDirectory(prefix="memoir-owner-scale-") as tmp,
        _pg_schema(args.database_url) as db_alone,
        _pg_schema(args.database_url) as db_beside,
        _home(Path(tmp), "alone", db_alone) as alone,
        _home(Path(tmp), "beside", db_beside) as beside,
    ):
        keys, bob_keys = {}, {}
        for name, memoir in (("alone", alone), ("beside", beside)):
            t = time.perf_counter()
            keys[name] = memoir.store.users.add(USER)
            bob_keys[name] = memoir.store.users.add("bob")
            _alice(memoir)
            log(f"{name}: alice's data {time.perf_counter() - t:.1f} s")
        t = time.perf_counter()
        _others(beside, args, log)
        out["build_others_s"] = round(time.perf_counter() - t, 1)
        if args.database_url:  # statistics as autovacuum leaves them a minute after a load;
            # without this the plans depend on whether it sampled a table mid-build (it
            # did once: the newest-items read then walked every user's items, 59 ms)
            for memoir in (alone, beside):
                with memoir.store._db.tx() as tx:
                    tx.run("ANALYZE")
        if args.explain and args.database_url:
            out["explain"] = _explain(beside)
        out["beside_rows"] = {
            table: int(beside.store._db.rows(f"SELECT count(*) FROM {table}")[0][0])
            for table in ("users", "sessions", "exchanges", "events", "embeddings", "memory_items")
        }
        clients = {n: _client(m, keys[n]) for n, m in (("alone", alone), ("beside", beside))}
        bobs = {n: _client(m, bob_keys[n]) for n, m in (("alone", alone), ("beside", beside))}
        with clients["alone"], clients["beside"], bobs["alone"], bobs["beside"]:
            routes = {
                "sessions_page_1": "/api/sessions?order=recent&limit=5",
                "sessions_page_10": _tenth_page(clients["alone"]),
                "memories_newest": "/api/memories",
                "memories_recall": "/api/memories?q=deploy%20staging%20coffee",
                "search_default": "/api/search?q=rollback%20migration%20latency",
                "search_vector": "/api/search?q=rollback%20migration%20latency&mode=vector",
                "search_text": "/api/search?q=rollback%20migration%20latency&mode=text",
                # the first search after a write (alice's own, embedded on write): the
                # replica's vectors are read again for the new generation
                "search_after_write": "/api/search?q=rollback%20migration%20latency",
                # the first search after another user's write: what a replica pays to
                # learn of it (issue 37, point 4)
                "search_after_other_write": "/api/search?q=rollback%20migration%20latency",
                "search_vector_after_other_write": (
                    "/api/search?q=rollback%20migration%20latency&mode=vector"
                ),
            }
            if args.only:
                routes = {r: u for r, u in routes.items() if r.startswith(args.only)}
            pages = {n: _tenth_page(c) for n, c in clients.items()}
            mine = "SELECT id FROM sessions WHERE user_name = ?"
            for c in clients.values():
                made = c.post("/api/sessions", json={"id": f"{USER}-scratch"})
                assert made.status_code == 201, made.text
            hers = {
                arm: {str(r[0]) for r in m.store._db.rows(mine, (USER,))}
                for arm, m in (("alone", alone), ("beside", beside))
            }
            for c in bobs.values():
                assert c.post("/api/sessions", json={"id": "bob-scratch"}).status_code == 201
            written = 0
            times: dict[str, dict[str, list[float]]] = {
                r: {"alone": [], "beside": []} for r in routes
            }
            matrix: dict[str, dict[str, list[float]]] = {
                r: {"alone": [], "beside": []} for r in routes
            }
            counts: dict[str, dict[str, int]] = {r: {} for r in routes}
            for rep in range(args.repeat + 2):  # two warm-up rounds
                order = ("alone", "beside") if rep % 2 == 0 else ("beside", "alone")
                for route, url in routes.items():
                    for arm in order:
                        path = pages[arm] if route == "sessions_page_10" else url
                        if "after" in route:
                            written += 1
                            note = [
                                {"role": "user", "content": f"note {written}", "id": str(written)}
                            ]
                            own = route == "search_after_write"
                            writer = clients[arm] if own else bobs[arm]
                            scratch = f"{USER}-scratch" if own else "bob-scratch"
                            w = writer.post(
                                f"/api/sessions/{scratch}/events", json={"messages": note}
                            )
                            assert w.status_code == 200, w.text
                        spent["s"] = 0.0
                        t = time.perf_counter()
                        r = clients[arm].get(path)
                        took = time.perf_counter() - t
                        assert r.status_code == 200, (route, arm, r.text)
                        counts[route][arm] = _check(route, r.json(), hers[arm])
                        if rep >= 2:
                            times[route][arm].append(took)
                            matrix[route][arm].append(spent["s"])
        table = {}
        for route in routes:
            a = statistics.median(times[route]["alone"]) * 1000
            b = statistics.median(times[route]["beside"]) * 1000
            table[route] = {
                "alone_ms": round(a, 2),
                "beside_ms": round(b, 2),
                "ratio": round(b / a, 2),
                "rows": counts[route],
            }
            if route.startswith("search"):
                table[route]["matrix_ms"] = {
                    arm: round(statistics.median(matrix[route][arm]) * 1000, 3)
                    for arm in ("alone", "beside")
                }
        out["routes"] = table
    return out


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--json", action="store_true")
    p.add_argument("--database-url", default=None)
    p.add_argument("--others", type=int, default=200)
    p.add_argument("--other-sessions", type=int, default=10_000)
    p.add_argument("--other-items", type=int, default=100_000)
    p.add_argument("--exchanges", type=int, default=3)
    p.add_argument("--repeat", type=int, default=30)
    p.add_argument("--explain", action="store_true", help="PostgreSQL: plans of the text match")
    p.add_argument(
        "--before-src",
        default=None,
        help="also run this bench first over the code in this src folder (e.g. `git "
        "archive main src`), in a process of its own: the figures from before",
    )
    p.add_argument("--only", default=None, help="time only the routes named with this prefix")
    args = p.parse_args()

    def log(line: str) -> None:
        print(line, file=sys.stderr, flush=True)

    before = None
    if args.before_src:
        argv = [a for a in sys.argv[1:] if a not in ("--json", "--explain")]
        at = argv.index("--before-src")
        del argv[at : at + 2]
        env = {**os.environ, "PYTHONPATH": str(Path(args.before_src).resolve())}
        log(f"before: {args.before_src}")
        done = subprocess.run(
            [sys.executable, __file__, *argv, "--json"],
            env=env,
            stdout=subprocess.PIPE,
            text=True,
            check=True,
        )
        before = json.loads(done.stdout)
        log("after: this checkout")

    result: dict[str, Any] = {
        "bench": "owner_scale",
        "date": datetime.now(UTC).date().isoformat(),
        "machine": f"{platform.machine()} {platform.system()}, {os.cpu_count()} cores, "
        f"Python {platform.python_version()}",
        "store": "postgresql" if args.database_url else "sqlite",
        "load_avg_start": [round(x, 2) for x in os.getloadavg()],
        **run(args, log),
        "load_avg_end": [round(x, 2) for x in os.getloadavg()],
    }
    if before is not None:
        result = {"before": before, "after": result}
    if args.json:
        print(json.dumps(result, indent=2))
        return
    arms = [("before", before)] if before else []
    arms.append(("after", result["after"] if before else result))
    for name, one in arms:
        print(f"{name}: {one['machine']}, {one['store']}, {one['date']}")
        print(f"load average {one['load_avg_start']} → {one['load_avg_end']}")
        print(f"beside: {one['beside_rows']}")
        print(f"{'route':18} {'alone ms':>9} {'beside ms':>10} {'ratio':>6}")
        for route, x in one["routes"].items():
            print(f"{route:18} {x['alone_ms']:>9} {x['beside_ms']:>10} {x['ratio']:>6}")


if __name__ == "__main__":
    main()
