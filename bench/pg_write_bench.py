"""PostgreSQL writes against SQLite's, same process, same run (issue 37, point 1).

    PYTHONPATH=src .venv/bin/python bench/pg_write_bench.py --database-url URL
        [--batches 40] [--batch-size 20] [--rounds 3] [--sync-mb 16] [--sync-files 16]
        [--profile] [--json] [--before-src DIR]

(a) **Append** — ``service.append_messages(memoir, user, session_id, messages)`` with
    ``--batch-size`` messages per call, ``--batches`` calls per round into a fresh session,
    on a fresh SQLite home and a fresh PostgreSQL schema; ``--rounds`` rounds alternate
    which backend goes first. Events/s (median over rounds) per backend, their ratio, and
    on PostgreSQL the round trips of one more batch, counted from libpq's protocol trace.
(b) **Sync** — ``--sync-mb`` MB of generated Claude Code transcripts (sync_bench's
    generator, ``--sync-files`` sessions) synced by ``memoir.ingest.sync.sync`` into a fresh
    home of each backend, rounds alternating: MB/s of each and their ratio.

``--profile`` prints the cProfile top functions (cumulative) of the PostgreSQL append
arm. Only public entry points are used, so the same script measures another checkout's
code (``PYTHONPATH=/other/src``). With ``--before-src DIR`` (another checkout's ``src``,
e.g. ``git archive main src | tar -x -C /tmp/before``) it does so itself: each round of
(a) and of (b) runs as a child process on each checkout, before and after alternating
which goes first (``bench/arms.py``), and both arms are reported side by side: the
per-round PostgreSQL / SQLite ratios of each, their medians. Prints a table, or one JSON
document with ``--json``.
"""

from __future__ import annotations

import argparse
import contextlib
import cProfile
import io
import json
import os
import pstats
import statistics
import sys
import tempfile
import time
import urllib.parse
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from memoir import service

sys.path.insert(0, str(Path(__file__).resolve().parent))

__all__: list[str] = []

USER = "bench"
WORDS = [
    "deploy", "checklist", "staging", "rollback", "migration", "schema", "index", "latency",
    "cache", "worker", "queue", "retry", "timeout", "config", "secret", "token", "review",
    "branch", "release", "tests", "fixture", "docker", "image",
]  # fmt: skip


def _messages(tag: str, n: int, start: int = 0) -> list[dict[str, Any]]:
    """As server_bench's: alternating user and assistant messages of 24 words, ids set."""
    out = []
    for i in range(start, start + n):
        words = " ".join(WORDS[(i * 7 + j) % len(WORDS)] for j in range(24))
        role = "user" if i % 2 == 0 else "assistant"
        out.append({"role": role, "content": f"{tag} message {i}: {words}", "id": f"{tag}-{i}"})
    return out


@contextlib.contextmanager
def _pg_schema(admin_url: str) -> Iterator[str]:
    """A fresh schema on ``admin_url`` (its URL, search_path set), dropped afterwards."""
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


class RoundTrips:
    """Round trips of every psycopg connection that waits on the server inside the block,
    from libpq's protocol trace (client ``F``, server ``B`` messages): a run of client
    messages followed by the server's reply is one (an upper bound: a reply read while
    more is still being sent counts again). tests/store/pg_round_trips.py counts alike."""

    def __init__(self) -> None:
        self.count = 0
        self._orig: Any = None
        self._tmp = tempfile.TemporaryDirectory()
        self._path = Path(self._tmp.name) / "trace"
        self._traced: list[Any] = []

    def __enter__(self) -> RoundTrips:
        import psycopg
        from psycopg import pq

        orig = self._orig = psycopg.Connection.wait
        fd = self._fd = os.open(self._path, os.O_WRONLY | os.O_CREAT | os.O_APPEND)
        traced = self._traced

        def wait(conn: Any, *args: Any, **kwargs: Any) -> Any:
            if conn not in traced:
                conn.pgconn.trace(fd)
                conn.pgconn.set_trace_flags(pq.Trace.SUPPRESS_TIMESTAMPS)
                traced.append(conn)
            return orig(conn, *args, **kwargs)

        psycopg.Connection.wait = wait  # type: ignore[method-assign]
        return self

    def __exit__(self, *exc: object) -> None:
        import psycopg

        psycopg.Connection.wait = self._orig  # type: ignore[method-assign]
        for conn in self._traced:
            if not conn.closed:
                conn.pgconn.untrace()
        os.close(self._fd)
        sending = False
        with open(self._path, errors="replace") as trace:
            for line in trace:
                direction = line.split("\t", 1)[0]
                if direction == "F":
                    sending = True
                elif direction == "B" and sending:
                    self.count, sending = self.count + 1, False
        self._tmp.cleanup()


def _append_arm(
    home: Path,
    url: str | None,
    sid: str,
    n: int,
    size: int,
    profile: cProfile.Profile | None,
    embed: bool = False,
) -> tuple[float, int]:
    """(events/s, waits on the server) of ``n`` timed batches after one warm-up batch."""
    from memoir.app import Memoir

    # embedding on write (on by default since issue 34) runs the embedder after the store's
    # write, the same on both backends: off unless --embed-on-write, so the store is measured
    overrides: dict[str, Any] = {"llm": "offline", "embed_on_write": embed}
    if url:
        overrides["database_url"] = url
    memoir = Memoir.at(home, **overrides)
    try:
        service.create_session(memoir, USER, session_id=sid)
        batches = [_messages(sid, size, i * size) for i in range(n + 1)]
        service.append_messages(memoir, USER, sid, batches[0])
        if profile:
            profile.enable()
        t0 = time.perf_counter()
        for batch in batches[1:]:
            added, _ = service.append_messages(memoir, USER, sid, batch)
            if added != size:
                raise RuntimeError(f"append added {added}")
        elapsed = time.perf_counter() - t0
        if profile:
            profile.disable()
        trips = 0
        if url:  # counted apart from the timed batches (tracing costs time)
            with RoundTrips() as counted:
                service.append_messages(memoir, USER, sid, _messages(sid, size, (n + 1) * size))
            trips = counted.count
        return n * size / elapsed, trips
    finally:
        memoir.close()


def _backends(args: argparse.Namespace, r: int) -> tuple[str, str]:
    """The backends of round ``r`` in the order they run: alternating, from ``--first``."""
    order = ("sqlite", "postgres") if args.first == "sqlite" else ("postgres", "sqlite")
    return order if r % 2 == 0 else (order[1], order[0])


def bench_append(url: str, args: argparse.Namespace, work: Path) -> dict[str, Any]:
    rates: dict[str, list[float]] = {"sqlite": [], "postgres": []}
    ratios: list[float] = []
    trips: list[float] = []
    profile = cProfile.Profile() if args.profile else None
    for r in range(args.rounds):
        arms = _backends(args, r)
        got: dict[str, float] = {}
        for arm in arms:
            sid = f"append-{arm}-{r}"
            if arm == "sqlite":
                got[arm], _ = _append_arm(
                    work / f"sqlite{r}",
                    None,
                    sid,
                    args.batches,
                    args.batch_size,
                    None,
                    args.embed_on_write,
                )
            else:
                with _pg_schema(url) as schema_url:
                    got[arm], waits = _append_arm(
                        work / f"pg{r}",
                        schema_url,
                        sid,
                        args.batches,
                        args.batch_size,
                        profile,
                        args.embed_on_write,
                    )
                trips.append(waits)
            rates[arm].append(got[arm])
        ratios.append(got["postgres"] / got["sqlite"])
    out = {
        "batches_per_round": args.batches,
        "batch_size": args.batch_size,
        "rounds": args.rounds,
        "embed_on_write": args.embed_on_write,
        "sqlite_events_per_s": round(statistics.median(rates["sqlite"]), 1),
        "postgres_events_per_s": round(statistics.median(rates["postgres"]), 1),
        "sqlite_rates": [round(x, 1) for x in rates["sqlite"]],
        "postgres_rates": [round(x, 1) for x in rates["postgres"]],
        "postgres_over_sqlite": round(statistics.median(ratios), 3),
        "round_ratios": [round(x, 3) for x in ratios],
        "postgres_round_trips_per_batch": round(statistics.median(trips), 1),
    }
    if profile is not None:
        text = io.StringIO()
        pstats.Stats(profile, stream=text).sort_stats(
            os.environ.get("PROFILE_SORT", "cumulative")
        ).print_stats(45)
        out["profile"] = text.getvalue()
    return out


def _timed_sync(source: Path, home: Path, url: str | None) -> float:
    from memoir.app import Memoir
    from memoir.config import Settings
    from memoir.ingest.sync import sync
    from memoir.store import open_store

    home.mkdir(parents=True, exist_ok=True)
    settings = Settings.from_env({"MEMOIR_HOME": str(home)}, sources=(source,), database_url=url)
    store = open_store(settings)
    observer = service.sync_observer(Memoir(settings, store))  # what `memoir sync` hands it
    try:
        began = time.perf_counter()
        sync(settings, store, observer=observer)
        return time.perf_counter() - began
    finally:
        store.close()


def bench_sync(url: str, args: argparse.Namespace, work: Path) -> dict[str, Any]:
    source = Path(args.sync_source) if args.sync_source else work / "transcripts"
    if not args.sync_source:
        from sync_bench import generate

        generate(source, args.sync_mb, args.sync_files)
    mbytes = sum(f.stat().st_size for f in source.rglob("*.jsonl")) / (1024 * 1024)
    speeds: dict[str, list[float]] = {"sqlite": [], "postgres": []}
    ratios: list[float] = []
    for r in range(args.sync_rounds):
        arms = _backends(args, r)
        got: dict[str, float] = {}
        for arm in arms:
            if arm == "sqlite":
                got[arm] = mbytes / _timed_sync(source, work / f"sync-sqlite{r}", None)
            else:
                with _pg_schema(url) as schema_url:
                    got[arm] = mbytes / _timed_sync(source, work / f"sync-pg{r}", schema_url)
            speeds[arm].append(got[arm])
        ratios.append(got["postgres"] / got["sqlite"])
    return {
        "mb": round(mbytes, 1),
        "files": args.sync_files,
        "rounds": args.sync_rounds,
        "sqlite_mb_per_s": round(statistics.median(speeds["sqlite"]), 2),
        "postgres_mb_per_s": round(statistics.median(speeds["postgres"]), 2),
        "postgres_over_sqlite": round(statistics.median(ratios), 3),
        "round_ratios": [round(x, 3) for x in ratios],
    }


def _child_args(args: argparse.Namespace, url: str) -> list[str]:
    out = ["--json", "--database-url", url, "--batches", str(args.batches)]
    out += ["--batch-size", str(args.batch_size)]
    return out + (["--embed-on-write"] if args.embed_on_write else [])


def compare(url: str, args: argparse.Namespace, skip: set[str], work: Path) -> dict[str, Any]:
    """Each round of each part once per checkout, in child processes, before and after
    alternating which goes first (and, round by round, which backend goes first)."""
    from arms import after_src, arm_order, run_child

    script = Path(__file__).resolve()
    srcs = {"before": str(Path(args.before_src).resolve()), "after": after_src()}
    out: dict[str, Any] = {"srcs": srcs}
    parts: list[tuple[str, int, list[str]]] = []
    if "append" not in skip:
        parts.append(("append", args.rounds, ["--skip", "sync", "--rounds", "1"]))
    if "sync" not in skip:
        from sync_bench import generate

        source = work / "transcripts"
        generate(source, args.sync_mb, args.sync_files)
        sync_args = ["--skip", "append", "--sync-rounds", "1", "--sync-source", str(source)]
        parts.append(("sync", args.sync_rounds, sync_args))
    for part, rounds, extra in parts:
        got: dict[str, list[dict[str, Any]]] = {"before": [], "after": []}
        for r in range(rounds):
            first = "sqlite" if r % 2 == 0 else "postgres"
            for arm in arm_order(r):
                child = run_child(
                    script, [*_child_args(args, url), *extra, "--first", first], srcs[arm]
                )
                got[arm].append(child[part])
        out[part] = {arm: _merged(part, rounds_of) for arm, rounds_of in got.items()}
    return out


def _merged(part: str, rounds: list[dict[str, Any]]) -> dict[str, Any]:
    """One arm's rounds (one child each) as one result: the rounds' figures in run order,
    and their medians."""
    ratios = [r["postgres_over_sqlite"] for r in rounds]
    unit = "events_per_s" if part == "append" else "mb_per_s"
    out: dict[str, Any] = {"rounds": len(rounds), "round_ratios": ratios}
    for backend in ("sqlite", "postgres"):
        values = [r[f"{backend}_{unit}"] for r in rounds]
        out[f"{backend}_{unit}"] = round(statistics.median(values), 2)
        out[f"{backend}_rates"] = values
    out["postgres_over_sqlite"] = round(statistics.median(ratios), 3)
    if part == "append":
        trips = [r["postgres_round_trips_per_batch"] for r in rounds]
        out["postgres_round_trips_per_batch"] = statistics.median(trips)
    return out


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--database-url", default=os.environ.get("MEMOIR_TEST_PG_URL"))
    p.add_argument("--batches", type=int, default=40)
    p.add_argument("--batch-size", type=int, default=20)
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--sync-mb", type=float, default=16)
    p.add_argument("--sync-files", type=int, default=16)
    p.add_argument("--sync-rounds", type=int, default=2)
    p.add_argument("--skip", default="", help="comma list of append,sync")
    p.add_argument("--first", choices=("sqlite", "postgres"), default="sqlite")
    p.add_argument("--sync-source", default=None, help="transcripts to sync (else generated)")
    p.add_argument("--before-src", default=None, help="an earlier checkout's src/ to compare")
    p.add_argument("--profile", action="store_true")
    p.add_argument(
        "--embed-on-write",
        action="store_true",
        help="keep embedding on write on in the append arm (off: the store's write alone)",
    )
    p.add_argument("--json", action="store_true")
    args = p.parse_args()
    if not args.database_url:
        p.error("--database-url (or MEMOIR_TEST_PG_URL) is required")
    skip = {s.strip() for s in args.skip.split(",") if s.strip()}
    import memoir

    result: dict[str, Any] = {
        "bench": "pg_write",
        "code": str(Path(memoir.__file__).resolve().parents[1]),
        "load_avg_start": [round(x, 2) for x in os.getloadavg()],
    }
    with tempfile.TemporaryDirectory(prefix="memoir-pg-write-") as tmp:
        work = Path(tmp)
        if args.before_src:
            result["compare"] = compare(args.database_url, args, skip, work)
            skip = {"append", "sync"}
        if "append" not in skip:
            result["append"] = bench_append(args.database_url, args, work)
        if "sync" not in skip:
            result["sync"] = bench_sync(args.database_url, args, work)
    result["load_avg_end"] = [round(x, 2) for x in os.getloadavg()]
    if args.json:
        print(json.dumps({k: v for k, v in result.items()}, indent=2))
        return
    print(f"code: {result['code']}  load {result['load_avg_start']} -> {result['load_avg_end']}")
    for part, arms in result.get("compare", {}).items():
        if part == "srcs":
            continue
        for arm in ("before", "after"):
            x = arms[arm]
            unit = "events_per_s" if part == "append" else "mb_per_s"
            print(
                f"{part} {arm:6}: sqlite {x[f'sqlite_{unit}']:,} postgres "
                f"{x[f'postgres_{unit}']:,} ({unit}), PG/SQLite median "
                f"{x['postgres_over_sqlite']} of {x['round_ratios']}"
            )
    if a := result.get("append"):
        print(
            f"append {a['rounds']} × {a['batches_per_round']} × {a['batch_size']}: sqlite "
            f"{a['sqlite_events_per_s']:,} ev/s, postgres {a['postgres_events_per_s']:,} ev/s, "
            f"ratio {a['postgres_over_sqlite']}, round trips/batch "
            f"{a['postgres_round_trips_per_batch']}"
        )
        if "profile" in a:
            print(a["profile"])
    if s := result.get("sync"):
        print(
            f"sync {s['mb']} MB × {s['rounds']}: sqlite {s['sqlite_mb_per_s']} MB/s, postgres "
            f"{s['postgres_mb_per_s']} MB/s, ratio {s['postgres_over_sqlite']}"
        )


if __name__ == "__main__":
    main()
