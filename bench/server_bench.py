"""Service benchmark (issue 19): the HTTP API of a real ``memoir serve`` subprocess on
127.0.0.1, against the library in the same run.

    .venv/bin/python bench/server_bench.py [--json] [--database-url URL] [--redis-url URL]
        [--batches 60] [--batch-size 20] [--rounds 3] [--pollers 200] [--poll-seconds 10]
        [--storm 50] [--storm-rounds 6] [--before-src DIR] [--client httpx|raw]

A throwaway SQLite home by default (``MEMOIR_LLM=offline``); with ``--database-url`` every
home gets its own fresh schema on that PostgreSQL server (dropped afterwards). A key comes
from ``memoir users add``, as a deployment gets one.

(a) **Append** — ``POST /api/sessions/{id}/events`` with ``--batch-size`` messages per
    request, ``--batches`` requests one after another from one keep-alive client, against
    ``service.append_messages(memoir, user, session_id, messages)`` called directly in this process
    on a second fresh home of the same kind of store, the same batches. In each of
    ``--rounds`` rounds (a fresh session per arm, after ``--warmup`` batches each, 1 by
    default) the two arms
    take turns batch by batch, alternating which goes first.
    Events/s and the p50/p95 per request (per call); the overhead is the ratio of the
    direct rate to the HTTP rate (medians over the rounds, and over all batches).
(b) **Polling** — ``--pollers`` concurrent ``GET /api/sessions/{id}/summary`` loops
    (asyncio + httpx, one connection each) on one session with a stored summary, for
    ``--poll-seconds``: requests/s, p50/p95/p99, non-200 count, and the CPU seconds of
    the server process and of this (client) process over the window.
(c) **Admission** — ``--storm`` concurrent ``POST /api/sessions/{id}/summary/regenerate``
    on a fresh session (connections opened beforehand), ``--storm-rounds`` rounds,
    alternating between two servers on the same home started at once: one with in-process
    admission, one with ``MEMOIR_REDIS_URL`` (``--redis-url``, default
    ``$MEMOIR_TEST_REDIS_URL``; ``--no-redis`` skips that arm). Both run no workers, so
    queued jobs stay queued. p50/p95/max over all requests, the median of the per-round
    p95, the status codes, and how many distinct jobs each storm got (must be 1).

With ``--before-src DIR`` (another checkout's ``src``), (a) runs as child processes, one
round each, on that checkout and on this one, alternating which goes first
(``bench/arms.py``; each child starts its own server on its checkout): both arms' per-round
HTTP / library ratios side by side. Set ``MEMOIR_EMBED_ON_WRITE=0`` to measure the store's
write without the embedder after it.

The machine is usually shared: the client and the server compete for the same cores, so
absolute rates are pessimistic; the ratios are what carries over. Prints a table and, with
``--json``, one JSON document; figures go to docs/benchmarks.md.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import platform
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.parse
import uuid
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import httpx

from memoir import service

__all__: list[str] = []

USER = "bench"
WORDS = [
    "deploy", "checklist", "staging", "rollback", "migration", "schema", "index", "latency",
    "cache", "worker", "queue", "retry", "timeout", "config", "secret", "token", "review",
    "branch", "release", "tests", "fixture", "docker", "image",
]  # fmt: skip


# --- helpers ----------------------------------------------------------------------------
def _pct(values: list[float], q: float) -> float:
    if not values:
        return float("nan")
    ordered = sorted(values)
    k = max(0, min(len(ordered) - 1, round(q * (len(ordered) - 1))))
    return ordered[k]


def _ms(values: list[float]) -> dict[str, float]:
    return {
        "p50_ms": round(1000 * _pct(values, 0.50), 2),
        "p95_ms": round(1000 * _pct(values, 0.95), 2),
        "p99_ms": round(1000 * _pct(values, 0.99), 2),
        "max_ms": round(1000 * max(values), 2) if values else float("nan"),
    }


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _cpu_s(pid: int) -> float:
    """utime + stime of a process (Linux /proc), seconds."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


class RawConn:
    """One keep-alive HTTP/1.1 connection, by hand: a request is one write and a read of
    the status line, headers and Content-Length body. httpx's async pool costs more CPU per
    request than the server at 200 connections, on the same two cores; this costs little."""

    def __init__(self, port: int, key: str) -> None:
        self.port, self.key = port, key
        self.reader: asyncio.StreamReader | None = None
        self.writer: asyncio.StreamWriter | None = None

    async def open(self) -> None:
        self.reader, self.writer = await asyncio.open_connection("127.0.0.1", self.port)

    async def request(self, method: str, path: str) -> tuple[int, bytes]:
        assert self.reader is not None and self.writer is not None
        head = (
            f"{method} {path} HTTP/1.1\r\nHost: 127.0.0.1:{self.port}\r\n"
            f"Authorization: Bearer {self.key}\r\nContent-Length: 0\r\n\r\n"
        )
        self.writer.write(head.encode())
        raw = await self.reader.readuntil(b"\r\n\r\n")
        lines = raw.decode("latin-1").split("\r\n")
        status = int(lines[0].split(" ", 2)[1])
        length = 0
        for line in lines[1:]:
            name, _, value = line.partition(":")
            if name.strip().lower() == "content-length":
                length = int(value)
        body = await self.reader.readexactly(length) if length else b""
        return status, body

    async def close(self) -> None:
        if self.writer is not None:
            self.writer.close()
            with contextlib.suppress(OSError):
                await self.writer.wait_closed()


class RawPost:
    """One keep-alive HTTP/1.1 connection for the append arm, by hand and blocking: a POST
    is one write of the head and the JSON body (orjson) and a read of the status line,
    headers and Content-Length body. ``--client raw``: the client's own CPU, which shares
    the server's two cores here, stays small next to the server's (httpx costs about as
    much per request as the route it calls)."""

    def __init__(self, port: int, key: str) -> None:
        self.head = (
            f"Host: 127.0.0.1:{port}\r\nAuthorization: Bearer {key}\r\n"
            "Content-Type: application/json\r\n"
        )
        self.sock = socket.create_connection(("127.0.0.1", port))
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.file = self.sock.makefile("rb")

    def post(self, path: str, body: Any) -> tuple[int, Any]:
        import orjson

        data = orjson.dumps(body)
        head = f"POST {path} HTTP/1.1\r\n{self.head}Content-Length: {len(data)}\r\n\r\n"
        self.sock.sendall(head.encode() + data)
        status = int(self.file.readline().split(b" ", 2)[1])
        length = 0
        while (line := self.file.readline()) not in (b"\r\n", b""):
            name, _, value = line.partition(b":")
            if name.strip().lower() == b"content-length":
                length = int(value)
        return status, orjson.loads(self.file.read(length)) if length else None

    def close(self) -> None:
        self.file.close()
        self.sock.close()


def _messages(tag: str, n: int, start: int = 0) -> list[dict[str, Any]]:
    out = []
    for i in range(start, start + n):
        words = " ".join(WORDS[(i * 7 + j) % len(WORDS)] for j in range(24))
        role = "user" if i % 2 == 0 else "assistant"
        out.append({"role": role, "content": f"{tag} message {i}: {words}", "id": f"{tag}-{i}"})
    return out


def _base_env(home: Path, database_url: str | None, redis_url: str | None) -> dict[str, str]:
    env = {
        k: v
        for k, v in os.environ.items()
        if k not in ("MEMOIR_DATABASE_URL", "MEMOIR_REDIS_URL", "MEMOIR_HOME")
    }
    env["MEMOIR_HOME"] = str(home)
    env["MEMOIR_LLM"] = "offline"
    if database_url:
        env["MEMOIR_DATABASE_URL"] = database_url
    if redis_url:
        env["MEMOIR_REDIS_URL"] = redis_url
    return env


@contextlib.contextmanager
def _pg_schema(admin_url: str | None) -> Iterator[str | None]:
    """A fresh schema on ``admin_url`` (its URL, search_path set), dropped afterwards."""
    if admin_url is None:
        yield None
        return
    import psycopg

    name = f"memoir_bench_{uuid.uuid4().hex[:12]}"
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


def _add_user(env: dict[str, str]) -> str:
    done = subprocess.run(
        [sys.executable, "-m", "memoir.cli", "users", "add", USER],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    return done.stdout.strip()


class Server:
    """One ``memoir serve`` subprocess on a free port of 127.0.0.1."""

    def __init__(self, env: dict[str, str], log: Path, workers: int) -> None:
        self.port = _free_port()
        self.base = f"http://127.0.0.1:{self.port}"
        self._log = log.open("w")
        self.proc = subprocess.Popen(
            [
                *(sys.executable, "-m", "memoir.cli", "serve", "--port", str(self.port)),
                *("--workers", str(workers), "--log-level", "warning"),
            ],
            env=env,
            stdout=self._log,
            stderr=subprocess.STDOUT,
        )

    def wait_ready(self, timeout: float = 60) -> None:
        deadline = time.monotonic() + timeout
        while True:
            try:
                if httpx.get(f"{self.base}/readyz", timeout=1).status_code == 200:
                    return
            except httpx.TransportError:
                pass
            if self.proc.poll() is not None:
                raise RuntimeError(f"memoir serve exited ({self.proc.returncode})")
            if time.monotonic() > deadline:
                raise RuntimeError("memoir serve did not become ready")
            time.sleep(0.1)

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=60)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self._log.close()


# --- (a) append -------------------------------------------------------------------------
_OTHER = {"http": "direct", "direct": "http"}


def bench_append(
    server: Server, key: str, direct_home: Path, direct_db: str | None, args: argparse.Namespace
) -> dict[str, Any]:
    from memoir.app import Memoir

    overrides: dict[str, Any] = {"llm": "offline"}
    if direct_db:
        overrides["database_url"] = direct_db
    memoir = Memoir.at(direct_home, **overrides)
    n, size = args.batches, args.batch_size
    http_rates, direct_rates, round_ratios = [], [], []
    http_lat: list[float] = []
    direct_lat: list[float] = []
    try:
        with httpx.Client(
            base_url=server.base, headers={"Authorization": f"Bearer {key}"}, timeout=60
        ) as client:
            for r in range(args.rounds):
                sid = f"append-{r}"
                warm = args.warmup
                batches = {
                    arm: [_messages(f"{arm}{r}", size, i * size) for i in range(warm + n)]
                    for arm in ("http", "direct")
                }
                assert client.post("/api/sessions", json={"id": sid}).status_code == 201
                service.create_session(memoir, USER, session_id=sid)
                raw = RawPost(server.port, key) if args.client == "raw" else None
                path = f"/api/sessions/{sid}/events"
                for i in range(warm):  # not timed: each arm's first batches
                    if raw is not None:
                        assert raw.post(path, {"messages": batches["http"][i]})[0] == 200
                    else:
                        client.post(path, json={"messages": batches["http"][i]})
                    service.append_messages(memoir, USER, sid, batches["direct"][i])

                # batch by batch, the two arms take turns (and turns at going first), so
                # the machine's drift over a round falls on both alike
                lat: dict[str, list[float]] = {"http": [], "direct": []}
                for i in range(warm, warm + n):
                    first = args.first if (r + i - warm + 1) % 2 == 0 else _OTHER[args.first]
                    for arm in (first, _OTHER[first]):
                        batch = batches[arm][i]
                        t = time.perf_counter()
                        if arm == "direct":
                            added, _ = service.append_messages(memoir, USER, sid, batch)
                            status, answer = 200, {"data": {"added": added}}
                        elif raw is not None:
                            status, answer = raw.post(path, {"messages": batch})
                        else:
                            resp = client.post(path, json={"messages": batch})
                            status, answer = resp.status_code, resp.json()
                        lat[arm].append(time.perf_counter() - t)
                        if status != 200 or answer["data"]["added"] != size:
                            raise RuntimeError(f"{arm} append failed: {status} {answer}")
                if raw is not None:
                    raw.close()
                http_lat += lat["http"]
                direct_lat += lat["direct"]
                rates = {arm: n * size / sum(lat[arm]) for arm in lat}
                http_rates.append(rates["http"])
                direct_rates.append(rates["direct"])
                round_ratios.append(rates["direct"] / rates["http"])
    finally:
        memoir.close()
    return {
        "batches_per_round": n,
        "warmup_batches": args.warmup,
        "batch_size": size,
        "rounds": args.rounds,
        "http_events_per_s": round(statistics.median(http_rates), 1),
        "direct_events_per_s": round(statistics.median(direct_rates), 1),
        "http_rates": [round(x, 1) for x in http_rates],
        "direct_rates": [round(x, 1) for x in direct_rates],
        "http_request": _ms(http_lat),
        "direct_call": _ms(direct_lat),
        "overhead_ratio": round(statistics.median(round_ratios), 2),
        "round_ratios": [round(x, 3) for x in round_ratios],
        "overhead_ratio_p50": round(_pct(http_lat, 0.5) / _pct(direct_lat, 0.5), 2),
        "http_minus_direct_p50_ms": round(1000 * (_pct(http_lat, 0.5) - _pct(direct_lat, 0.5)), 2),
    }


# --- (b) polling ------------------------------------------------------------------------
def _prepare_summary(server: Server, key: str, sid: str) -> None:
    with httpx.Client(
        base_url=server.base, headers={"Authorization": f"Bearer {key}"}, timeout=60
    ) as client:
        assert client.post("/api/sessions", json={"id": sid}).status_code == 201
        resp = client.post(f"/api/sessions/{sid}/events", json={"messages": _messages(sid, 40)})
        assert resp.status_code == 200, resp.text
        assert client.post(f"/api/sessions/{sid}/summary/regenerate").status_code == 202
        deadline = time.monotonic() + 120
        while True:
            data = client.get(f"/api/sessions/{sid}/summary").json()["data"]
            if data["summary"]:
                return
            job = data.get("job") or {}
            if job.get("state") in ("failed", "cancelled"):
                raise RuntimeError(f"summary job ended {job}")
            if time.monotonic() > deadline:
                raise RuntimeError(f"no summary after 120 s: {data}")
            time.sleep(0.3)


async def _poll(server: Server, key: str, sid: str, pollers: int, seconds: float) -> dict[str, Any]:
    lat: list[float] = []
    bad = 0
    conns = [RawConn(server.port, key) for _ in range(pollers)]
    await asyncio.gather(*(c.open() for c in conns))  # connected before the clock starts
    url = f"/api/sessions/{sid}/summary"
    status, body = await conns[0].request("GET", url)
    assert status == 200 and json.loads(body)["data"]["summary"], body
    deadline = 0.0

    async def poller(conn: RawConn) -> None:
        nonlocal bad
        while time.perf_counter() < deadline:
            t = time.perf_counter()
            status, _ = await conn.request("GET", url)
            lat.append(time.perf_counter() - t)
            if status != 200:
                bad += 1

    cpu_server, cpu_client = _cpu_s(server.proc.pid), time.process_time()
    t0 = time.perf_counter()
    deadline = t0 + seconds
    await asyncio.gather(*(poller(c) for c in conns))
    elapsed = time.perf_counter() - t0
    cpu_server = _cpu_s(server.proc.pid) - cpu_server
    cpu_client = time.process_time() - cpu_client
    await asyncio.gather(*(c.close() for c in conns))
    return {
        "pollers": pollers,
        "seconds": round(elapsed, 2),
        "requests": len(lat),
        "requests_per_s": round(len(lat) / elapsed, 1),
        "non_200": bad,
        **_ms(lat),
        "server_cpu_s": round(cpu_server, 2),
        "client_cpu_s": round(cpu_client, 2),
    }


# --- (c) admission ----------------------------------------------------------------------
async def _storm(server: Server, key: str, sid: str, width: int) -> dict[str, Any]:
    with httpx.Client(
        base_url=server.base, headers={"Authorization": f"Bearer {key}"}, timeout=60
    ) as client:
        assert client.post("/api/sessions", json={"id": sid}).status_code == 201
        resp = client.post(f"/api/sessions/{sid}/events", json={"messages": _messages(sid, 6)})
        assert resp.status_code == 200, resp.text
    conns = [RawConn(server.port, key) for _ in range(width)]
    await asyncio.gather(*(c.open() for c in conns))  # connected before the storm
    url = f"/api/sessions/{sid}/summary/regenerate"

    async def one(conn: RawConn) -> tuple[float, int, str | None]:
        t = time.perf_counter()
        status, body = await conn.request("POST", url)
        took = time.perf_counter() - t
        job = json.loads(body)["data"]["job"]["id"] if status == 202 else None
        return took, status, job

    out = await asyncio.gather(*(one(c) for c in conns))
    await asyncio.gather(*(c.close() for c in conns))
    return {
        "latencies": [x[0] for x in out],
        "statuses": [x[1] for x in out],
        "jobs": {x[2] for x in out if x[2] is not None},
    }


def bench_admission(
    servers: dict[str, Server], key: str, args: argparse.Namespace
) -> dict[str, Any]:
    tag = uuid.uuid4().hex[:8]
    acc: dict[str, dict[str, Any]] = {
        name: {"lat": [], "round_p95": [], "statuses": {}, "jobs_per_storm": []} for name in servers
    }
    names = list(servers)
    for r in range(args.storm_rounds):
        order = names if r % 2 == 0 else names[::-1]
        for name in order:
            sid = f"storm-{tag}-{name}-{r}"
            res = asyncio.run(_storm(servers[name], key, sid, args.storm))
            a = acc[name]
            a["lat"] += res["latencies"]
            a["round_p95"].append(_pct(res["latencies"], 0.95))
            for s in res["statuses"]:
                a["statuses"][str(s)] = a["statuses"].get(str(s), 0) + 1
            a["jobs_per_storm"].append(len(res["jobs"]))
    out: dict[str, Any] = {"width": args.storm, "rounds": args.storm_rounds}
    for name, a in acc.items():
        out[name] = {
            **_ms(a["lat"]),
            "round_p95_median_ms": round(1000 * statistics.median(a["round_p95"]), 2),
            "statuses": a["statuses"],
            "jobs_per_storm": a["jobs_per_storm"],
        }
    return out


# --- before and after -------------------------------------------------------------------
def compare(args: argparse.Namespace) -> dict[str, Any]:
    """(a) once per round on each checkout, in child processes, alternating which goes
    first (and, round by round, which of HTTP and the library goes first)."""
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from arms import after_src, arm_order, run_child

    srcs = {"before": str(Path(args.before_src).resolve()), "after": after_src()}
    child = ["--json", "--skip", "poll,admission", "--rounds", "1", "--batches", str(args.batches)]
    child += ["--batch-size", str(args.batch_size), "--client", args.client]
    child += ["--warmup", str(args.warmup)]
    if args.database_url:
        child += ["--database-url", args.database_url]
    got: dict[str, list[dict[str, Any]]] = {"before": [], "after": []}
    for r in range(args.rounds):
        first = "http" if r % 2 == 0 else "direct"
        for arm in arm_order(r):
            done = run_child(Path(__file__).resolve(), [*child, "--first", first], srcs[arm])
            got[arm].append(done["append"])
    out: dict[str, Any] = {"srcs": srcs}
    for arm, rounds in got.items():
        ratios = [1 / x["overhead_ratio"] for x in rounds]  # HTTP / library, per round
        out[arm] = {
            "rounds": len(rounds),
            "http_events_per_s": round(
                statistics.median(x["http_events_per_s"] for x in rounds), 1
            ),
            "direct_events_per_s": round(
                statistics.median(x["direct_events_per_s"] for x in rounds), 1
            ),
            "http_over_library": round(statistics.median(ratios), 3),
            "round_ratios": [round(x, 3) for x in ratios],
        }
    return out


# --- main -------------------------------------------------------------------------------
def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--json", action="store_true")
    p.add_argument("--database-url", default=None, help="PostgreSQL (a schema per home)")
    p.add_argument(
        "--redis-url",
        default=os.environ.get("MEMOIR_TEST_REDIS_URL") or os.environ.get("MEMOIR_REDIS_URL"),
    )
    p.add_argument("--no-redis", action="store_true")
    p.add_argument("--batches", type=int, default=60)
    p.add_argument("--batch-size", type=int, default=20)
    p.add_argument(
        "--warmup",
        type=int,
        default=1,
        help="untimed batches each arm appends first, per round (a fresh server's pooled "
        "connections prepare a statement on its fifth run)",
    )
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--pollers", type=int, default=200)
    p.add_argument("--poll-seconds", type=float, default=10.0)
    p.add_argument("--storm", type=int, default=50)
    p.add_argument("--storm-rounds", type=int, default=6)
    p.add_argument("--skip", default="", help="comma list of append,poll,admission")
    p.add_argument("--first", choices=("http", "direct"), default="http")
    p.add_argument(
        "--client",
        choices=("httpx", "raw"),
        default="httpx",
        help="the append arm's HTTP client: httpx, or one raw keep-alive socket (RawPost)",
    )
    p.add_argument("--before-src", default=None, help="an earlier checkout's src/ to compare")
    args = p.parse_args()
    skip = {s.strip() for s in args.skip.split(",") if s.strip()}
    redis_url = None if args.no_redis else args.redis_url

    result: dict[str, Any] = {
        "bench": "server",
        "date": datetime.now(UTC).date().isoformat(),
        "machine": f"{platform.machine()} {platform.system()}, {os.cpu_count()} cores, "
        f"Python {platform.python_version()}",
        "load_avg_start": [round(x, 2) for x in os.getloadavg()],
        "store": "postgresql" if args.database_url else "sqlite",
    }
    if args.before_src:
        result["compare"] = compare(args)
        result["load_avg_end"] = [round(x, 2) for x in os.getloadavg()]
        print(json.dumps(result, indent=2))
        return
    with (
        tempfile.TemporaryDirectory(prefix="memoir-server-bench-") as tmp,
        _pg_schema(args.database_url) as server_db,
        _pg_schema(args.database_url) as direct_db,
    ):
        root = Path(tmp)
        home, direct_home = root / "home", root / "direct"
        env = _base_env(home, server_db, None)
        key = _add_user(env)

        if not skip >= {"append", "poll"}:
            server = Server(env, root / "serve-a.log", workers=1)
            try:
                server.wait_ready()
                if "append" not in skip:
                    result["append"] = bench_append(server, key, direct_home, direct_db, args)
                if "poll" not in skip:
                    sid = "poll-" + uuid.uuid4().hex[:8]
                    _prepare_summary(server, key, sid)
                    result["poll"] = asyncio.run(
                        _poll(server, key, sid, args.pollers, args.poll_seconds)
                    )
            finally:
                server.stop()

        if "admission" not in skip:
            servers = {"in_process": Server(env, root / "serve-b.log", workers=0)}
            if redis_url:
                servers["redis"] = Server(
                    _base_env(home, server_db, redis_url), root / "serve-c.log", workers=0
                )
            try:
                for s in servers.values():
                    s.wait_ready()
                result["admission"] = bench_admission(servers, key, args)
            finally:
                for s in servers.values():
                    s.stop()
    result["load_avg_end"] = [round(x, 2) for x in os.getloadavg()]

    if args.json:
        print(json.dumps(result, indent=2))
        return
    print(f"{result['machine']}, {result['store']}, {result['date']}")
    print(f"load average {result['load_avg_start']} → {result['load_avg_end']}")
    if a := result.get("append"):
        print(f"\nappend, {a['rounds']} rounds × {a['batches_per_round']} × {a['batch_size']}")
        print(f"  {'':8} {'events/s':>10} {'p50 ms':>8} {'p95 ms':>8}")
        for name, rate, lat in (
            ("HTTP", a["http_events_per_s"], a["http_request"]),
            ("direct", a["direct_events_per_s"], a["direct_call"]),
        ):
            print(f"  {name:8} {rate:>10} {lat['p50_ms']:>8} {lat['p95_ms']:>8}")
        print(
            f"  overhead: direct/HTTP events/s {a['overhead_ratio']}, p50 ratio "
            f"{a['overhead_ratio_p50']} (+{a['http_minus_direct_p50_ms']} ms per request)"
        )
    if q := result.get("poll"):
        print(
            f"\npolling, {q['pollers']} pollers, {q['seconds']} s: {q['requests_per_s']} req/s, "
            f"p50 {q['p50_ms']} / p95 {q['p95_ms']} / p99 {q['p99_ms']} ms, "
            f"non-200 {q['non_200']}; CPU server {q['server_cpu_s']} s, "
            f"client {q['client_cpu_s']} s"
        )
    if adm := result.get("admission"):
        print(f"\nadmission, {adm['width']}-way storm × {adm['rounds']} rounds")
        for name in ("in_process", "redis"):
            if name in adm:
                x = adm[name]
                print(
                    f"  {name:10} p50 {x['p50_ms']} / p95 {x['p95_ms']} / max {x['max_ms']} ms, "
                    f"median round p95 {x['round_p95_median_ms']} ms, statuses {x['statuses']}, "
                    f"jobs per storm {x['jobs_per_storm']}"
                )


if __name__ == "__main__":
    main()
