"""Load test across replicas (issue 37, point 6): two ``memoir serve`` replicas and one
``memoir worker`` on one PostgreSQL schema and one Redis, under a fixed-duration mix from
concurrent clients, then a consistency check.

    .venv/bin/python bench/load_bench.py [--duration 60] [--users 20] [--clients 16]
        [--storm-every 3] [--storm-size 20] [--database-url URL] [--redis-url URL] [--json]

Services: ``--database-url`` / ``--redis-url`` (default ``$MEMOIR_TEST_PG_URL`` /
``$MEMOIR_TEST_REDIS_URL``); when neither is given, ``scripts/test-services.sh`` starts a
throwaway PostgreSQL and Redis and stops them after. Every run works in a fresh schema
(dropped after) and under session ids of its own in Redis. The model is the offline one,
the embedder ``none`` (search runs in text mode): the figures are the service's, not a
model's.

Setup (not timed): ``--users`` users with a key each (the library, as ``memoir users add``
does), three sessions per user through the API with a first exchange each, and one
``remember`` per user so recall has items.

The mix, from ``--clients`` concurrent clients (asyncio + httpx, one connection each,
alternating between the replicas as a load balancer would), each request for a random
user: appends of 4 messages (one in ten replays an acknowledged batch, which must add
nothing), searches, session lists (``order=recent``), memory lists, memory recall and
summary polls. Beside them, every ``--storm-every`` seconds a regeneration storm:
``--storm-size`` concurrent ``POST …/summary/regenerate`` on one session, spread over
both replicas. One job per session per storm may be created; the report counts both.

At the end (the worker given up to 60 s to drain the queue): every acknowledged message
is stored exactly once (its unique token found in exactly one event, read back through the
API; no event without a token the client sent), ordinals are 1..n without a gap, every
job the database holds was answered to a storm, no session ever had two active jobs at
once, and every job is finished (completed, failed) or resumable (queued, running under
a claim).

Reported: throughput and p50/p95/p99 per route, status counts, 5xx and transport errors
(must be 0), jobs requested vs created, the consistency check. The client shares the
machine's cores with the servers: absolute rates are pessimistic.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import platform
import random
import re
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.parse
import uuid
from collections import Counter, defaultdict
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import httpx

__all__: list[str] = []

ROOT = Path(__file__).resolve().parents[1]
WORDS = [
    "deploy", "checklist", "staging", "rollback", "migration", "schema", "index", "latency",
    "cache", "worker", "queue", "retry", "timeout", "config", "secret", "review", "branch",
    "release", "tests", "fixture", "docker", "image", "postgres", "replica", "backup",
]  # fmt: skip
# weights of the mix (the storms run beside it)
MIX = {
    "append": 25,
    "summary_poll": 30,
    "search": 15,
    "sessions_list": 10,
    "memories_list": 10,
    "memory_recall": 10,
}
ROUTES = {
    "append": "POST /api/sessions/{id}/events",
    "summary_poll": "GET /api/sessions/{id}/summary",
    "search": "GET /api/search",
    "sessions_list": "GET /api/sessions?order=recent",
    "memories_list": "GET /api/memories",
    "memory_recall": "GET /api/memories?q=",
    "regenerate": "POST /api/sessions/{id}/summary/regenerate",
}
SESSIONS_PER_USER = 3
TOKEN = re.compile(r"\btok(\d+)x(\d+)\b")


# --- services -------------------------------------------------------------------------
def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@contextlib.contextmanager
def services(database_url: str | None, redis_url: str | None) -> Iterator[tuple[str, str]]:
    """The PostgreSQL and Redis URLs to use: the ones given, else a throwaway pair from
    scripts/test-services.sh (stopped after)."""
    if database_url and redis_url:
        yield database_url, redis_url
        return
    run = tempfile.mkdtemp(prefix="memoir-load-")
    env = {**os.environ, "MEMOIR_TEST_RUN": run}
    script = str(ROOT / "scripts" / "test-services.sh")
    out = subprocess.run([script, "start"], env=env, capture_output=True, text=True, check=True)
    found = dict(re.findall(r"export (\w+)=(\S+)", out.stdout))
    try:
        yield (
            database_url or found["MEMOIR_TEST_PG_URL"],
            redis_url or found["MEMOIR_TEST_REDIS_URL"],
        )
    finally:
        subprocess.run([script, "stop"], env=env, capture_output=True, check=False)


@contextlib.contextmanager
def pg_schema(admin_url: str) -> Iterator[str]:
    """A fresh schema on ``admin_url`` (a URL whose connections see only it), dropped after."""
    import psycopg

    name = f"memoir_load_{uuid.uuid4().hex[:12]}"
    with psycopg.connect(admin_url, autocommit=True) as admin:
        admin.execute(f'CREATE SCHEMA "{name}"')
    parts = urllib.parse.urlsplit(admin_url)
    query = [*urllib.parse.parse_qsl(parts.query), ("options", f"-c search_path={name}")]
    encoded = urllib.parse.urlencode(query, quote_via=urllib.parse.quote)
    try:
        yield urllib.parse.urlunsplit(parts._replace(query=encoded))
    finally:
        with psycopg.connect(admin_url, autocommit=True) as admin:
            admin.execute(f'DROP SCHEMA IF EXISTS "{name}" CASCADE')


def process_env(home: Path, database_url: str, redis_url: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("MEMOIR_")}
    env.update(
        MEMOIR_HOME=str(home),
        MEMOIR_DATABASE_URL=database_url,
        MEMOIR_REDIS_URL=redis_url,
        MEMOIR_LLM="offline",
        MEMOIR_EMBEDDER="none",
        MEMOIR_SUMMARY_STORE="database",
        MEMOIR_SYNC_DISABLED="1",
    )
    return env


@contextlib.contextmanager
def process(
    command: list[str], env: dict[str, str], log: Path
) -> Iterator[subprocess.Popen[bytes]]:
    """A subprocess (output to ``log``), stopped with SIGTERM (then killed) after."""
    with log.open("wb") as out:
        proc = subprocess.Popen(command, env=env, stdout=out, stderr=subprocess.STDOUT)
        try:
            yield proc
        finally:
            if proc.poll() is None:
                proc.send_signal(signal.SIGTERM)
                try:
                    proc.wait(timeout=30)
                except subprocess.TimeoutExpired:
                    proc.kill()
                    proc.wait()


def wait_healthy(base: str, proc: subprocess.Popen[bytes], log: Path) -> None:
    deadline = time.monotonic() + 120  # a start-up on busy shared cores
    while True:
        with contextlib.suppress(httpx.TransportError):
            if httpx.get(f"{base}/healthz", timeout=1).status_code == 200:
                return
        if proc.poll() is not None or time.monotonic() > deadline:
            raise SystemExit(f"{base} did not start:\n{log.read_text()[-3000:]}")
        time.sleep(0.2)


# --- the run's state ------------------------------------------------------------------
@dataclass
class Session:
    user: int
    sid: str
    next_id: int = 0
    acked: set[str] = field(default_factory=set)  # tokens of acknowledged messages
    unsure: set[str] = field(default_factory=set)  # sent, answer lost
    batches: list[list[dict[str, str]]] = field(default_factory=list)


@dataclass
class Run:
    keys: list[str]
    sessions: list[Session]
    samples: list[tuple[str, int, float]] = field(default_factory=list)  # op, status, s
    transport_errors: Counter[str] = field(default_factory=Counter)
    replay_added: int = 0  # messages a replayed batch added (must stay 0)
    storms: list[dict[str, Any]] = field(default_factory=list)
    seen_jobs: set[str] = field(default_factory=set)


def messages(session: Session, n: int) -> list[dict[str, str]]:
    out = []
    for _ in range(n):
        session.next_id += 1
        k = session.next_id
        words = " ".join(random.choice(WORDS) for _ in range(12))
        role = "user" if k % 2 else "assistant"
        token = f"tok{session.user}x{k}"
        out.append({"role": role, "content": f"{words} {token}", "id": f"m{k}"})
    return out


def token_of(session: Session, message: dict[str, str]) -> str:
    return f"tok{session.user}x{message['id'][1:]}"


async def timed(run: Run, op: str, call: Any) -> httpx.Response | None:
    started = time.perf_counter()
    try:
        resp: httpx.Response = await call
    except httpx.TransportError as exc:
        run.transport_errors[f"{op}: {type(exc).__name__}"] += 1
        return None
    run.samples.append((op, resp.status_code, time.perf_counter() - started))
    return resp


async def one_op(run: Run, client: httpx.AsyncClient, rng: random.Random) -> None:
    op = rng.choices(list(MIX), weights=list(MIX.values()))[0]
    session = rng.choice(run.sessions)
    auth = {"Authorization": f"Bearer {run.keys[session.user]}"}
    word = rng.choice(WORDS)
    if op == "append":
        if session.batches and rng.random() < 0.1:  # a client retrying an acked batch
            batch, replay = rng.choice(session.batches), True
        else:
            batch, replay = messages(session, 4), False
        tokens = {token_of(session, m) for m in batch}
        if not replay:
            session.unsure |= tokens
        resp = await timed(
            run,
            op,
            client.post(
                f"/api/sessions/{session.sid}/events", json={"messages": batch}, headers=auth
            ),
        )
        if resp is not None and resp.status_code == 200:
            if replay:
                run.replay_added += resp.json()["data"]["added"]
            else:
                session.acked |= tokens
                session.unsure -= tokens
                session.batches.append(batch)
        return
    path, params = {
        "summary_poll": (f"/api/sessions/{session.sid}/summary", {}),
        "search": ("/api/search", {"q": word, "limit": 10}),
        "sessions_list": ("/api/sessions", {"order": "recent", "limit": 20}),
        "memories_list": ("/api/memories", {"limit": 50}),
        "memory_recall": ("/api/memories", {"q": f"{word} deploy", "limit": 10}),
    }[op]
    await timed(run, op, client.get(path, params=params, headers=auth))


async def client_loop(run: Run, base: str, until: float, seed: int) -> None:
    rng = random.Random(seed)
    async with httpx.AsyncClient(base_url=base, timeout=60) as client:
        while time.monotonic() < until:
            await one_op(run, client, rng)


async def storm_loop(run: Run, bases: list[str], until: float, every: float, size: int) -> None:
    limits = httpx.Limits(max_connections=size, max_keepalive_connections=size)
    clients = [httpx.AsyncClient(base_url=b, timeout=60, limits=limits) for b in bases]
    try:
        # every connection a storm uses opened beforehand: its POSTs arrive together
        await asyncio.gather(*(c.get("/healthz") for c in clients for _ in range(size)))
        n = 0
        while time.monotonic() + every < until:
            await asyncio.sleep(every)
            session = run.sessions[n % len(run.sessions)]
            n += 1
            auth = {"Authorization": f"Bearer {run.keys[session.user]}"}
            path = f"/api/sessions/{session.sid}/summary/regenerate"
            answers = await asyncio.gather(
                *(
                    timed(run, "regenerate", clients[i % len(clients)].post(path, headers=auth))
                    for i in range(size)
                )
            )
            ids = {
                r.json()["data"]["job"]["id"]
                for r in answers
                if r is not None and r.status_code == 202
            }
            new = ids - run.seen_jobs
            run.seen_jobs |= ids
            run.storms.append({"session": session.sid, "answered": sorted(ids), "new": len(new)})
    finally:
        for c in clients:
            await c.aclose()


# --- setup and checks -----------------------------------------------------------------
def add_users(env: dict[str, str], count: int, tag: str) -> list[str]:
    """``count`` users with a key each, through the library (as `memoir users add`)."""
    from memoir import Memoir
    from memoir.config import Settings

    with Memoir.open(Settings.from_env(env, sources=())) as m:
        return [m.store.users.add(f"load-{tag}-{n}") for n in range(count)]


def setup(base: str, keys: list[str], tag: str) -> list[Session]:
    sessions = []
    with httpx.Client(base_url=base, timeout=60) as client:
        for user, key in enumerate(keys):
            auth = {"Authorization": f"Bearer {key}"}
            for n in range(SESSIONS_PER_USER):
                session = Session(user, f"load-{tag}-{user}-{n}")
                made = client.post("/api/sessions", json={"id": session.sid}, headers=auth)
                made.raise_for_status()
                first = messages(session, 2)
                first[0]["content"] = (
                    f"remember: we deploy from the release branch {first[0]['content']}"
                )
                sent = client.post(
                    f"/api/sessions/{session.sid}/events", json={"messages": first}, headers=auth
                )
                sent.raise_for_status()
                session.acked |= {token_of(session, m) for m in first}
                sessions.append(session)
            kept = client.post(f"/api/sessions/load-{tag}-{user}-0/remember", headers=auth)
            kept.raise_for_status()
    return sessions


def check_events(base: str, run: Run) -> dict[str, Any]:
    """Every acknowledged message stored exactly once, nothing the clients did not send,
    ordinals 1..n."""
    missing = duplicated = strays = gaps = events = 0
    with httpx.Client(base_url=base, timeout=60) as client:
        for s in run.sessions:
            auth = {"Authorization": f"Bearer {run.keys[s.user]}"}
            seen: Counter[str] = Counter()
            ordinals: list[int] = []
            after = 0
            while True:
                got = client.get(
                    f"/api/sessions/{s.sid}/events",
                    params={"after": after, "limit": 1000, "reveal": "true"},
                    headers=auth,
                )
                got.raise_for_status()
                page = got.json()["data"]["events"]
                for e in page:
                    ordinals.append(e["ordinal"])
                    for m in TOKEN.finditer(e["text"]):
                        seen[m.group(0)] += 1
                if not got.json()["next_cursor"]:
                    break
                after = page[-1]["ordinal"]
            events += len(ordinals)
            gaps += ordinals != list(range(1, len(ordinals) + 1))
            missing += sum(1 for t in s.acked if seen[t] == 0)
            duplicated += sum(1 for t, c in seen.items() if c > 1)
            strays += sum(1 for t in seen if t not in s.acked and t not in s.unsure)
            strays += len(ordinals) - sum(seen.values())  # an event without a token
    return {
        "events": events,
        "acknowledged": sum(len(s.acked) for s in run.sessions),
        "unacknowledged": sum(len(s.unsure) for s in run.sessions),
        "missing": missing,
        "duplicated": duplicated,
        "strays": strays,
        "sessions_with_gaps": gaps,
        "replayed_batches_added": run.replay_added,
    }


def check_jobs(database_url: str, run: Run, drain_s: float) -> dict[str, Any]:
    """Waits up to ``drain_s`` for the worker to empty the queue, then: every job the
    database holds was answered to a storm, and each is finished or resumable."""
    import psycopg

    deadline = time.monotonic() + drain_s
    with psycopg.connect(database_url, autocommit=True) as conn:
        while True:
            # the schema is this run's own: every job in it is one of the storms'
            rows = conn.execute(
                "SELECT id, state, claimed_by, user_name, session_id, created_at, finished_at "
                "FROM jobs ORDER BY created_at"
            ).fetchall()
            active = [r for r in rows if r[1] in ("queued", "running")]
            if not active or time.monotonic() > deadline:
                break
            time.sleep(0.5)
    # never two active jobs for one session at once: each one created after the one before
    # it (same user and session) had finished
    overlapping = 0
    last: dict[tuple[str, str], Any] = {}
    for row in rows:
        before = last.get((row[3], row[4]))
        if before is not None and (before[6] is None or row[5] < before[6]):
            overlapping += 1
        last[(row[3], row[4])] = row
    states = Counter(str(r[1]) for r in rows)
    bad = [
        r[0]
        for r in rows
        if not (r[1] in ("completed", "failed", "queued") or (r[1] == "running" and r[2]))
    ]
    return {
        "states": dict(states),
        "in_database": len(rows),
        "not_answered": len({str(r[0]) for r in rows} - run.seen_jobs),
        "neither_finished_nor_resumable": len(bad),
        "overlapping": overlapping,
    }


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    k = max(0, min(len(ordered) - 1, round(q * (len(ordered) - 1))))
    return ordered[k]


def report(run: Run, seconds: float) -> dict[str, Any]:
    by: dict[str, list[float]] = defaultdict(list)
    statuses: dict[str, Counter[int]] = defaultdict(Counter)
    for op, status, s in run.samples:
        by[op].append(s)
        statuses[op][status] += 1
    routes = {}
    for op in [*MIX, "regenerate"]:
        values = by.get(op, [])
        routes[op] = {
            "route": ROUTES[op],
            "count": len(values),
            "per_s": round(len(values) / seconds, 1),
            "p50_ms": round(1000 * percentile(values, 0.5), 1) if values else None,
            "p95_ms": round(1000 * percentile(values, 0.95), 1) if values else None,
            "p99_ms": round(1000 * percentile(values, 0.99), 1) if values else None,
            "status": {str(k): v for k, v in sorted(statuses[op].items())},
        }
    return routes


async def drive(run: Run, bases: list[str], args: argparse.Namespace) -> float:
    started = time.monotonic()
    until = started + args.duration
    tasks = [client_loop(run, bases[i % len(bases)], until, i) for i in range(args.clients)]
    tasks.append(storm_loop(run, bases, until, args.storm_every, args.storm_size))
    await asyncio.gather(*tasks)
    return time.monotonic() - started


def main(argv: list[str] | None = None) -> dict[str, Any]:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--duration", type=float, default=60.0, help="seconds of load")
    parser.add_argument("--users", type=int, default=20)
    parser.add_argument("--clients", type=int, default=16, help="concurrent clients")
    parser.add_argument("--storm-every", type=float, default=3.0, help="seconds between storms")
    parser.add_argument("--storm-size", type=int, default=20, help="POSTs per storm")
    parser.add_argument("--database-url", default=os.environ.get("MEMOIR_TEST_PG_URL"))
    parser.add_argument("--redis-url", default=os.environ.get("MEMOIR_TEST_REDIS_URL"))
    parser.add_argument("--json", action="store_true", help="print one JSON document")
    args = parser.parse_args(argv)
    tag = uuid.uuid4().hex[:8]
    with (
        services(args.database_url, args.redis_url) as (admin_url, redis_url),
        pg_schema(admin_url) as db_url,
        tempfile.TemporaryDirectory(prefix="memoir-load-") as tmp,
    ):
        root = Path(tmp)
        envs = {}
        for name in ("a", "b", "worker"):
            (root / name).mkdir()
            envs[name] = process_env(root / name, db_url, redis_url)
        keys = add_users(envs["worker"], args.users, tag)  # migrates the schema, too
        ports = [_free_port(), _free_port()]
        bases = [f"http://127.0.0.1:{p}" for p in ports]
        memoir = [sys.executable, "-m", "memoir.cli"]
        with contextlib.ExitStack() as stack:
            for name, port, base in zip(("a", "b"), ports, bases, strict=True):
                log = root / f"{name}.log"
                command = [*memoir, "serve", "--port", str(port), "--workers", "0"]
                proc = stack.enter_context(process(command, envs[name], log))
                wait_healthy(base, proc, log)
            stack.enter_context(process([*memoir, "worker"], envs["worker"], root / "w.log"))
            run = Run(keys, setup(bases[0], keys, tag))
            memory_items = _memory_items(bases[0], keys)
            seconds = asyncio.run(drive(run, bases, args))
            jobs = check_jobs(db_url, run, drain_s=60)
            events = check_events(bases[1], run)
    routes = report(run, seconds)
    server_errors = sum(1 for _, status, _ in run.samples if status >= 500)
    requested = len(run.storms)
    created = sum(s["new"] for s in run.storms)
    consistent = (
        events["missing"] == 0
        and events["duplicated"] == 0
        and events["strays"] == 0
        and events["sessions_with_gaps"] == 0
        and events["replayed_batches_added"] == 0
        and jobs["not_answered"] == 0
        and jobs["neither_finished_nor_resumable"] == 0
        and jobs["overlapping"] == 0
    )
    result = {
        "date": datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC"),
        "machine": f"{platform.machine()}, {os.cpu_count()} cores, Python "
        f"{platform.python_version()}",
        "setup": {
            "replicas": 2,
            "workers": 1,
            "users": args.users,
            "sessions": len(run.sessions),
            "memory_items": memory_items,
            "clients": args.clients,
            "duration_s": round(seconds, 1),
            "storm_every_s": args.storm_every,
            "storm_size": args.storm_size,
        },
        "requests": len(run.samples),
        "per_s": round(len(run.samples) / seconds, 1),
        "routes": routes,
        "server_errors": server_errors,
        "transport_errors": dict(run.transport_errors),
        "jobs": {
            "storms": requested,
            "requested": requested,
            "created": created,
            "max_per_storm": max((s["new"] for s in run.storms), default=0),
            **jobs,
        },
        "consistency": {**events, "passed": consistent},
    }
    if args.json:
        print(json.dumps(result, indent=2))
    else:
        _print(result)
    return result


def _memory_items(base: str, keys: list[str]) -> int:
    total = 0
    with httpx.Client(base_url=base, timeout=60) as client:
        for key in keys:
            got = client.get("/api/memories", headers={"Authorization": f"Bearer {key}"})
            got.raise_for_status()
            total += len(got.json()["data"]["memories"])
    return total


def _print(result: dict[str, Any]) -> None:
    s = result["setup"]
    print(
        f"{result['date']} · {result['machine']} · {s['replicas']} replicas + {s['workers']} "
        f"worker · {s['users']} users, {s['sessions']} sessions · {s['clients']} clients · "
        f"{s['duration_s']} s · {s['memory_items']} memory items"
    )
    print(f"{'route':<44} {'n':>6} {'/s':>7} {'p50 ms':>8} {'p95 ms':>8} {'p99 ms':>8}  status")
    for r in result["routes"].values():
        print(
            f"{r['route']:<44} {r['count']:>6} {r['per_s']:>7} {r['p50_ms']!s:>8} "
            f"{r['p95_ms']!s:>8} {r['p99_ms']!s:>8}  {r['status']}"
        )
    print(f"all: {result['requests']} requests, {result['per_s']}/s")
    print(f"5xx: {result['server_errors']} · transport errors: {result['transport_errors']}")
    j = result["jobs"]
    print(
        f"storms: {j['storms']} · jobs requested {j['requested']}, created {j['created']} "
        f"(most in one storm: {j['max_per_storm']}) · states {j['states']}"
    )
    c = result["consistency"]
    print(
        f"consistency: {'passed' if c['passed'] else 'FAILED'} · {c['events']} events, "
        f"{c['acknowledged']} acknowledged messages, missing {c['missing']}, duplicated "
        f"{c['duplicated']}, strays {c['strays']}, gaps {c['sessions_with_gaps']}, "
        f"replays added {c['replayed_batches_added']}"
    )


if __name__ == "__main__":
    outcome = main()
    sys.exit(0 if outcome["server_errors"] == 0 and outcome["consistency"]["passed"] else 1)
