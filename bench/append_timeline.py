"""Where one HTTP append's time goes (issue 37, item 1): a diagnosis, not a figure the
issue asks for (that is ``server_bench.py``'s rate ratio).

    MEMOIR_EMBED_ON_WRITE=0 .venv/bin/python bench/append_timeline.py --database-url URL
        [--appends 150] [--json]

Starts ``memoir serve --workers 1`` on a fresh schema of ``URL`` through this file (as
``--serve``), which first wraps three things with ``time.perf_counter()`` stamps: the
request middleware (in, body read, response start, body sent, out), anyio's hand-off to
the thread pool (handed, started, ended, back on the loop) and the service call the
append route makes. Then ``--appends`` HTTP appends of 20 messages (one raw keep-alive
socket, ``server_bench.RawPost``) alternate with as many library appends
(``service.append_messages``) on a second fresh schema, in this process. Prints the
medians of each step in ms, and the two arms' rate ratio. The stamps cost a few
microseconds each; the wrapped server is slower than a plain one by that much.
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

__all__: list[str] = []

STEPS = ("mw", "body", "submit", "start", "svc0", "svc1", "end", "resume", "resp", "sent", "done")
LABELS = {
    ("mw", "body"): "middleware in -> body read",
    ("body", "submit"): "body -> handed to the pool (routing, dependencies, validation)",
    ("submit", "start"): "to the pool",
    ("start", "svc0"): "endpoint -> service call",
    ("svc0", "svc1"): "the service call",
    ("svc1", "end"): "service call -> endpoint returns",
    ("end", "resume"): "back from the pool",
    ("resume", "resp"): "-> response start",
    ("resp", "sent"): "-> response body sent",
    ("sent", "done"): "-> middleware out",
}


def _serve(argv: list[str], out: str) -> None:
    """``memoir serve`` with the stamps in; SIGUSR1 writes them to ``out`` as JSON."""
    import anyio.to_thread

    import memoir.server.plumbing as plumbing
    import memoir.service as service

    now = time.perf_counter
    cur: dict[str, float] = {}
    rows: list[dict[str, float]] = []
    run_sync = anyio.to_thread.run_sync

    async def timed_run_sync(func: Any, *args: Any, **kw: Any) -> Any:
        cur["submit"] = now()

        def inner(*a: Any) -> Any:
            cur["start"] = now()
            try:
                return func(*a)
            finally:
                cur["end"] = now()

        try:
            return await run_sync(inner, *args, **kw)
        finally:
            cur["resume"] = now()

    append = service.append_user_messages

    def timed_append(*a: Any, **kw: Any) -> Any:
        cur["svc0"] = now()
        try:
            return append(*a, **kw)
        finally:
            cur["svc1"] = now()

    middleware = plumbing.RequestMiddleware.__call__

    async def timed_middleware(self: Any, scope: Any, receive: Any, send: Any) -> None:
        if scope.get("method") != "POST":
            await middleware(self, scope, receive, send)
            return
        cur.clear()
        cur["mw"] = now()

        async def rcv() -> Any:
            message = await receive()
            cur.setdefault("body", now())
            return message

        async def snd(message: Any) -> None:
            if message["type"] == "http.response.start":
                cur["resp"] = now()
            await send(message)
            if message["type"] == "http.response.body":
                cur["sent"] = now()

        await middleware(self, scope, rcv, snd)
        cur["done"] = now()
        rows.append(dict(cur))

    anyio.to_thread.run_sync = timed_run_sync  # type: ignore[assignment]
    service.append_user_messages = timed_append  # type: ignore[assignment]
    plumbing.RequestMiddleware.__call__ = timed_middleware  # type: ignore[method-assign]
    signal.signal(signal.SIGUSR1, lambda *_: Path(out).write_text(json.dumps(rows)))
    from memoir.cli import main

    sys.argv = ["memoir", *argv]
    main()


def measure(database_url: str, appends: int) -> dict[str, Any]:
    sys.path.insert(0, str(Path(__file__).parent))
    import server_bench as sb

    from memoir import service
    from memoir.app import Memoir

    with (
        tempfile.TemporaryDirectory() as tmp,
        sb._pg_schema(database_url) as served_db,
        sb._pg_schema(database_url) as direct_db,
    ):
        root = Path(tmp)
        env = sb._base_env(root / "served", served_db, None)
        key = sb._add_user(env)
        stamps = root / "stamps.json"
        port = sb._free_port()
        serve = [*("serve", "--port", str(port), "--workers", "1", "--log-level", "warning")]
        with (root / "serve.log").open("w") as log:
            proc = subprocess.Popen(
                [sys.executable, __file__, "--serve", str(stamps), "--", *serve],
                env=env,
                stdout=log,
                stderr=subprocess.STDOUT,
            )
            server = sb.Server.__new__(sb.Server)
            server.port, server.base, server.proc, server._log = (
                port,
                f"http://127.0.0.1:{port}",
                proc,
                log,
            )
            try:
                server.wait_ready()
                import httpx

                with httpx.Client(
                    base_url=server.base, headers={"Authorization": f"Bearer {key}"}
                ) as client:
                    assert client.post("/api/sessions", json={"id": "s"}).status_code == 201
                memoir = Memoir.at(root / "direct", llm="offline", database_url=direct_db)
                service.create_session(memoir, sb.USER, session_id="s")
                raw = sb.RawPost(port, key)
                lat: dict[str, list[float]] = {"http": [], "direct": []}
                for i in range(appends + 1):  # the first pair warms both arms up
                    for arm in ("http", "direct") if i % 2 else ("direct", "http"):
                        batch = sb._messages(arm, 20, i * 20)
                        t = time.perf_counter()
                        if arm == "http":
                            status, answer = raw.post("/api/sessions/s/events", {"messages": batch})
                            if status != 200:
                                raise RuntimeError(f"append failed: {status} {answer}")
                        else:
                            service.append_messages(memoir, sb.USER, "s", batch)
                        if i:
                            lat[arm].append((time.perf_counter() - t) * 1000)
                raw.close()
                memoir.close()
                proc.send_signal(signal.SIGUSR1)
                deadline = time.monotonic() + 10
                while not stamps.exists() and time.monotonic() < deadline:
                    time.sleep(0.1)
            finally:
                proc.send_signal(signal.SIGTERM)
                proc.wait(timeout=60)
        rows = [r for r in json.loads(stamps.read_text())[1:] if all(k in r for k in STEPS)]
    med = statistics.median
    return {
        "appends": appends,
        "http_p50_ms": round(med(lat["http"]), 3),
        "library_p50_ms": round(med(lat["direct"]), 3),
        "rate_ratio": round(sum(lat["direct"]) / sum(lat["http"]), 3),
        "in_app_p50_ms": round(med((r["done"] - r["mw"]) * 1000 for r in rows), 3),
        "steps_p50_ms": {
            LABELS[(a, b)]: round(med((r[b] - r[a]) * 1000 for r in rows), 3)
            for a, b in itertools.pairwise(STEPS)
        },
    }


def main() -> None:
    if len(sys.argv) > 2 and sys.argv[1] == "--serve":
        _serve(sys.argv[4:], sys.argv[2])  # --serve OUT -- ARGS
        return
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--database-url", default=os.environ.get("MEMOIR_TEST_PG_URL"))
    parser.add_argument("--appends", type=int, default=150)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    if not args.database_url:
        parser.error("--database-url (or MEMOIR_TEST_PG_URL) names the PostgreSQL server")
    out = measure(args.database_url, args.appends)
    if args.json:
        print(json.dumps(out, indent=2))
        return
    print(
        f"HTTP append p50 {out['http_p50_ms']} ms, library {out['library_p50_ms']} ms, "
        f"rate ratio {out['rate_ratio']}; in the app {out['in_app_p50_ms']} ms"
    )
    for label, ms in out["steps_p50_ms"].items():
        print(f"  {ms:8.3f}  {label}")


if __name__ == "__main__":
    main()
