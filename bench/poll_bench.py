"""What a summary poll costs against a floor (issue 37, point 3), in one run.

    PYTHONPATH=src .venv/bin/python bench/poll_bench.py [--json] [--database-url URL]
        [--pollers 64] [--seconds 8] [--rounds 3] [--before-src DIR] [--replicas]

Arms, each a server subprocess on 127.0.0.1 with ``memoir serve``'s uvicorn settings,
polled in turn (the order rotated each round) by ``--pollers`` keep-alive connections
for ``--seconds``:

- ``floor``: a bare FastAPI app with the API's middleware, error handlers and route
  class, and one route of the summary's path and dependency shape (the bearer key read
  and hashed, the Memoir dependency) answering constant JSON; no database;
- ``after``: ``memoir serve`` from this tree, ``GET /api/sessions/{id}/summary`` on a
  session with a stored summary and a finished job;
- ``before`` (with ``--before-src``, a ``src`` folder of an earlier commit, e.g. from
  ``git archive``): the same over that code, on the same home or schema;
- ``two_replicas`` (with ``--replicas``): two ``memoir serve`` of this tree on the same
  home or schema, the pollers split between them, against ``after`` (one replica).

Per arm: requests/s (the median over rounds), p50/p95, and the server's CPU ms per
request (``/proc``); the ratio of each arm to the floor in the same round (median). The
client runs on the same cores as the servers (asyncio, a hand-written HTTP/1.1 client:
:class:`server_bench.RawConn`), so absolute rates are pessimistic; the ratios carry over.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parent))
from server_bench import (
    RawConn,
    Server,
    _add_user,
    _base_env,
    _cpu_s,
    _free_port,
    _ms,
    _pg_schema,
    _prepare_summary,
)

__all__: list[str] = []


# --- the floor --------------------------------------------------------------------------
def floor_app() -> Any:
    """The floor: what every ``/api`` request pays before a route's own work."""
    from fastapi import APIRouter, Depends, FastAPI

    from memoir.app import Memoir
    from memoir.server.auth import Caller, caller, memoir_of
    from memoir.server.plumbing import RequestMiddleware, install_error_handlers
    from memoir.server.schemas import JsonRoute

    app = FastAPI(redirect_slashes=False, docs_url=None, redoc_url=None)
    app.state.memoir = None
    install_error_handlers(app)
    router = APIRouter(prefix="/api/sessions", route_class=JsonRoute)
    answer = {
        "summary": "The team moved the nightly deploy to the new staging cluster.",
        "updated_at": "2026-12-01T10:00:00+00:00",
        "model": "offline",
        "coverage": {"unit": "events", "covered": 40, "current": 40},
        "job": None,
    }

    @router.get("/{session_id}/summary")
    def constant(
        session_id: str,
        who: Caller = Depends(caller),
        memoir: Memoir | None = Depends(memoir_of),
    ) -> dict[str, Any]:
        return {"data": answer}

    app.include_router(router)

    @app.get("/readyz")
    def ready() -> dict[str, str]:
        return {"status": "ok"}

    app.add_middleware(RequestMiddleware)
    return app


def _serve_floor(port: int) -> None:
    import logging

    import uvicorn

    from memoir.server.plumbing import JsonFormatter

    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(JsonFormatter())
    for name in ("memoir", "uvicorn", "uvicorn.error"):  # as memoir serve --log-level warning
        logger = logging.getLogger(name)
        logger.handlers[:] = [handler]
        logger.setLevel("WARNING")
        logger.propagate = False
    config = uvicorn.Config(
        floor_app(),
        host="127.0.0.1",
        port=port,
        log_config=None,
        access_log=False,
        timeout_graceful_shutdown=30,
        lifespan="on",
    )
    uvicorn.Server(config).run()


class FloorServer(Server):
    def __init__(self, env: dict[str, str], log: Path) -> None:
        self.port = _free_port()
        self.base = f"http://127.0.0.1:{self.port}"
        self._log = log.open("w")
        self.proc = subprocess.Popen(
            [sys.executable, __file__, "--serve-floor", str(self.port)],
            env=env,
            stdout=self._log,
            stderr=subprocess.STDOUT,
        )


# --- polling ----------------------------------------------------------------------------
async def _poll(servers: list[Server], key: str, sid: str, pollers: int, seconds: float) -> Any:
    lat: list[float] = []
    bad = 0
    conns = [RawConn(servers[n % len(servers)].port, key) for n in range(pollers)]
    await asyncio.gather(*(c.open() for c in conns))
    url = f"/api/sessions/{sid}/summary"
    for c in conns[: len(servers)]:
        status, body = await c.request("GET", url)
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

    cpu0 = sum(_cpu_s(s.proc.pid) for s in servers)
    t0 = time.perf_counter()
    deadline = t0 + seconds
    await asyncio.gather(*(poller(c) for c in conns))
    elapsed = time.perf_counter() - t0
    cpu = sum(_cpu_s(s.proc.pid) for s in servers) - cpu0
    await asyncio.gather(*(c.close() for c in conns))
    return {
        "requests_per_s": round(len(lat) / elapsed, 1),
        "non_200": bad,
        **_ms(lat),
        "server_cpu_ms_per_request": round(1000 * cpu / max(1, len(lat)), 3),
    }


def run(args: argparse.Namespace) -> dict[str, Any]:
    out: dict[str, Any] = {}
    with (
        tempfile.TemporaryDirectory(prefix="memoir-poll-bench-") as tmp,
        _pg_schema(args.database_url) as db,
    ):
        root = Path(tmp)
        env = _base_env(root / "home", db, None)
        key = _add_user(env)
        sid = "poll-" + uuid.uuid4().hex[:8]
        prep = Server(env, root / "prepare.log", workers=1)
        try:
            prep.wait_ready()
            _prepare_summary(prep, key, sid)
        finally:
            prep.stop()
        arms: dict[str, list[Server]] = {"floor": [FloorServer(env, root / "floor.log")]}
        arms["after"] = [Server(env, root / "after.log", workers=0)]
        if args.before_src:
            before_env = {**env, "PYTHONPATH": str(Path(args.before_src).resolve())}
            arms["before"] = [Server(before_env, root / "before.log", workers=0)]
        if args.replicas:
            arms["two_replicas"] = [
                Server(env, root / f"replica-{n}.log", workers=0) for n in range(2)
            ]
        try:
            for servers in arms.values():
                for s in servers:
                    s.wait_ready()
            with httpx.Client(timeout=30) as probe:  # the arms answer the same poll
                for name, servers in arms.items():
                    got = probe.get(
                        f"{servers[0].base}/api/sessions/{sid}/summary",
                        headers={"Authorization": f"Bearer {key}"},
                    )
                    assert got.status_code == 200 and got.json()["data"]["summary"], (name, got)
            names = list(arms)
            for name in names:  # warm: first requests pay imports and first-call costs
                asyncio.run(_poll(arms[name], key, sid, args.pollers, 1.0))
            per: dict[str, list[dict[str, Any]]] = {n: [] for n in names}
            ratios: dict[str, list[float]] = {n: [] for n in names if n != "floor"}
            for r in range(args.rounds):
                order = names[r % len(names) :] + names[: r % len(names)]
                got_round = {}
                for name in order:
                    got_round[name] = asyncio.run(
                        _poll(arms[name], key, sid, args.pollers, args.seconds)
                    )
                    per[name].append(got_round[name])
                floor = got_round["floor"]["requests_per_s"]
                for name in ratios:
                    ratios[name].append(got_round[name]["requests_per_s"] / floor)
            for name in names:
                rounds = per[name]
                out[name] = {
                    "requests_per_s": round(
                        statistics.median(x["requests_per_s"] for x in rounds), 1
                    ),
                    "p50_ms": round(statistics.median(x["p50_ms"] for x in rounds), 2),
                    "p95_ms": round(statistics.median(x["p95_ms"] for x in rounds), 2),
                    "server_cpu_ms_per_request": round(
                        statistics.median(x["server_cpu_ms_per_request"] for x in rounds), 3
                    ),
                    "non_200": sum(x["non_200"] for x in rounds),
                    "rounds": rounds,
                }
                if name in ratios:
                    out[name]["vs_floor"] = round(statistics.median(ratios[name]), 2)
            if "two_replicas" in out:
                pairs = [
                    b["requests_per_s"] / a["requests_per_s"]
                    for a, b in zip(per["after"], per["two_replicas"], strict=True)
                ]
                out["two_vs_one_replica"] = round(statistics.median(pairs), 2)
        finally:
            for servers in arms.values():
                for s in servers:
                    s.stop()
    return out


def main() -> None:
    if len(sys.argv) == 3 and sys.argv[1] == "--serve-floor":
        _serve_floor(int(sys.argv[2]))
        return
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--json", action="store_true")
    p.add_argument("--database-url", default=None)
    p.add_argument("--pollers", type=int, default=64)
    p.add_argument("--seconds", type=float, default=8.0)
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--before-src", default=None, help="an earlier tree's src/ to compare")
    p.add_argument("--replicas", action="store_true", help="two replicas against one")
    args = p.parse_args()
    result: dict[str, Any] = {
        "bench": "poll",
        "date": datetime.now(UTC).date().isoformat(),
        "machine": f"{platform.machine()} {platform.system()}, {os.cpu_count()} cores, "
        f"Python {platform.python_version()}",
        "store": "postgresql" if args.database_url else "sqlite",
        "pollers": args.pollers,
        "seconds": args.seconds,
        "load_avg_start": [round(x, 2) for x in os.getloadavg()],
        **run(args),
        "load_avg_end": [round(x, 2) for x in os.getloadavg()],
    }
    if args.json:
        print(json.dumps(result, indent=2))
        return
    print(f"{result['machine']}, {result['store']}, {result['date']}, {args.pollers} pollers")
    print(f"load average {result['load_avg_start']} → {result['load_avg_end']}")
    print(f"{'arm':14} {'req/s':>8} {'p50 ms':>8} {'p95 ms':>8} {'cpu ms/req':>10} {'vs floor':>8}")
    for name in ("floor", "after", "before", "two_replicas"):
        if (x := result.get(name)) is not None:
            print(
                f"{name:14} {x['requests_per_s']:>8} {x['p50_ms']:>8} {x['p95_ms']:>8} "
                f"{x['server_cpu_ms_per_request']:>10} {x.get('vs_floor', ''):>8}"
            )
    if "two_vs_one_replica" in result:
        print(f"two replicas / one: {result['two_vs_one_replica']}")


if __name__ == "__main__":
    main()
