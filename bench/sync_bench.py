"""Sync throughput and the nothing-to-do sync.

(a) Throughput: generate ``--mb`` MB of realistic Claude Code JSONL (prompts, replies,
    thinking, tool calls with code-sized inputs and outputs, file-history snapshots) in
    ``--files`` sessions, then time ``memoir.ingest.sync.sync`` into a fresh home (parse +
    archive copy + index, no model, no embeddings) against a bare loop over the same files
    in the same process: read, json-parse every line, insert the text of every user and
    assistant record into an SQLite FTS5 table (one transaction per file). Reports MB/s of
    both and their ratio (targets: sync >= 50 MB/s and >= 1/3 of the bare loop).

(b) Nothing to do: ``--noop-files`` conversations of ``--noop-kb`` KiB each (10,000 × 210 KiB
    ≈ 2 GB by default; every byte real: a conversation followed by a large
    file-history-snapshot record), synced once, then timed: the in-process ``sync()`` call,
    and ``memoir sync --no-summaries`` as a whole process (start-up and imports included).

(c) Peak memory (issue 24): with ``--single-mb N`` (repeatable), one Claude Code transcript
    of N MB, and ``--small-mb`` MB in 1 MB files for comparison, each synced into a fresh
    home by a child process (``--child-sync``) that reports its peak RSS (``ru_maxrss``),
    wall time and MB/s; sync memory should not grow with one transcript's size.

    .venv/bin/python bench/sync_bench.py [--mb 64] [--files 64] [--runs 3]
        [--noop-files 10000] [--noop-kb 210] [--skip-noop] [--skip-throughput]
        [--single-mb 150 --single-mb 1024] [--small-mb 150] [--json] [--dir DIR]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import random
import resource
import shutil
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from memoir import service
from memoir.app import Memoir
from memoir.config import Settings
from memoir.demo import ClaudeWriter, text_block, tool_use_block
from memoir.ingest.records import loads
from memoir.ingest.sync import sync
from memoir.store import open_store

__all__: list[str] = []

_VOCABULARY = (
    "the a to of and in is that for it with as on be this are by we not function value "
    "return error test file import class def self config request response cache index query "
    "database session user token model latency retry timeout build deploy docker branch "
    "commit merge review refactor parser offset buffer thread async await lock queue worker "
    "schema migration column table row join filter sort limit page handler route client "
    "server payment order invoice customer coupon discount checkout cart price total"
)
WORDS = _VOCABULARY.split(" ")


def _words(rng: random.Random, n: int) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(n))


def _code(rng: random.Random, lines: int) -> str:
    out = []
    for i in range(lines):
        name = rng.choice(WORDS)
        out.append(
            f"{i + 1:>5}\t    {name}_{i} = compute({rng.choice(WORDS)}, {rng.randint(0, 999)})"
        )
    return "\n".join(out)


def session_bytes(rng: random.Random, index: int, target: int) -> bytes:
    sid = f"{index:08x}-0000-4000-8000-{rng.getrandbits(48):012x}"
    w = ClaudeWriter(sid, cwd=f"/home/dev/code/project{index % 7}")
    n = 0
    size = 0
    while size < target:
        n += 1
        w.user(_words(rng, rng.randint(15, 120)))
        w.assistant(
            {"type": "thinking", "thinking": _words(rng, rng.randint(30, 150))},
            _words(rng, rng.randint(20, 80)),
            tool_use_block(
                f"toolu_{index}_{n}", "Read", {"file_path": f"src/{rng.choice(WORDS)}.py"}
            ),
        )
        code = _code(rng, rng.randint(20, 200))
        listing = {"filePath": "src/x.py", "content": code, "numLines": code.count("\n") + 1}
        w.tool(f"toolu_{index}_{n}", code, result={"type": "text", "file": listing})
        w.assistant(
            tool_use_block(
                f"toolu_{index}_{n}b",
                "Edit",
                {"file_path": "src/x.py", "old_string": _code(rng, 5), "new_string": _code(rng, 6)},
            )
        )
        w.tool(f"toolu_{index}_{n}b", "The file src/x.py has been updated.")
        w.assistant(text_block(_words(rng, rng.randint(60, 400))))
        if n % 4 == 0:
            w.snapshot()
        size = sum(len(json.dumps(r)) for r in w.records[-8:]) + size
    return w.bytes()


def _turn(w: ClaudeWriter, rng: random.Random, index: int, n: int) -> None:
    """One exchange of the generated sessions: prompt, thinking, a Read, an Edit, a reply."""
    w.user(_words(rng, rng.randint(15, 120)))
    w.assistant(
        {"type": "thinking", "thinking": _words(rng, rng.randint(30, 150))},
        _words(rng, rng.randint(20, 80)),
        tool_use_block(f"toolu_{index}_{n}", "Read", {"file_path": f"src/{rng.choice(WORDS)}.py"}),
    )
    code = _code(rng, rng.randint(20, 200))
    listing = {"filePath": "src/x.py", "content": code, "numLines": code.count("\n") + 1}
    w.tool(f"toolu_{index}_{n}", code, result={"type": "text", "file": listing})
    w.assistant(
        tool_use_block(
            f"toolu_{index}_{n}b",
            "Edit",
            {"file_path": "src/x.py", "old_string": _code(rng, 5), "new_string": _code(rng, 6)},
        )
    )
    w.tool(f"toolu_{index}_{n}b", "The file src/x.py has been updated.")
    w.assistant(text_block(_words(rng, rng.randint(60, 400))))
    if n % 4 == 0:
        w.snapshot()


def write_session(path: Path, rng: random.Random, index: int, target: int) -> int:
    """One session of at least ``target`` bytes written to ``path`` as it is generated (a
    1 GB transcript is never held in memory); returns its size."""
    sid = f"{index:08x}-0000-4000-8000-{rng.getrandbits(48):012x}"
    w = ClaudeWriter(sid, cwd=f"/home/dev/code/project{index % 7}")
    size, n = 0, 0
    with open(path, "wb") as out:
        while size < target:
            n += 1
            _turn(w, rng, index, n)
            if len(w.records) >= 500 or size + 1_000_000 > target:
                size += out.write(w.bytes())
                w.records.clear()
        size += out.write(w.bytes())
    return size


def generate(folder: Path, mb: float, files: int, seed: int = 7) -> int:
    rng = random.Random(seed)
    per = int(mb * 1024 * 1024 / files)
    total = 0
    for i in range(files):
        project = folder / f"-home-dev-code-project{i % 7}"
        project.mkdir(parents=True, exist_ok=True)
        data = session_bytes(rng, i, per)
        (project / f"{i:08x}-0000-4000-8000-{i:012x}.jsonl").write_bytes(data)
        total += len(data)
    return total


def _record_text(obj: dict[str, Any]) -> str:
    content = (obj.get("message") or {}).get("content")
    if isinstance(content, str):
        return content
    parts: list[str] = []
    for block in content or []:
        if not isinstance(block, dict):
            continue
        for key in ("text", "thinking"):
            if isinstance(block.get(key), str):
                parts.append(block[key])
        if "input" in block:
            parts.append(json.dumps(block["input"]))
        if isinstance(block.get("content"), str):
            parts.append(block["content"])
    return "\n".join(parts)


def bare_loop(folder: Path, db: Path) -> None:
    conn = sqlite3.connect(db)
    conn.execute("PRAGMA journal_mode=WAL")
    conn.execute("PRAGMA synchronous=NORMAL")
    conn.execute("CREATE VIRTUAL TABLE fts USING fts5(text)")
    for path in sorted(folder.rglob("*.jsonl")):
        rows = []
        for line in path.read_bytes().splitlines():
            obj = loads(line)
            if obj.get("type") in ("user", "assistant"):
                rows.append((_record_text(obj),))
        with conn:
            conn.executemany("INSERT INTO fts(text) VALUES (?)", rows)
    conn.close()


def _settings(home: Path, source: Path) -> Settings:
    home.mkdir(parents=True, exist_ok=True)
    return Settings.from_env({"MEMOIR_HOME": str(home)}, sources=(source,), database_url=None)


def timed_sync(source: Path, home: Path) -> tuple[float, float, Any]:
    """(wall seconds, CPU seconds of this process, report) of one sync into ``home``."""
    settings = _settings(home, source)
    store = open_store(settings)
    observer = service.sync_observer(Memoir(settings, store))  # what `memoir sync` hands it
    try:
        began, cpu = time.perf_counter(), time.process_time()
        report = sync(settings, store, observer=observer)
        return time.perf_counter() - began, time.process_time() - cpu, report
    finally:
        store.close()


def throughput(work: Path, mb: float, files: int, runs: int) -> dict[str, Any]:
    source = work / "src"
    size = generate(source, mb, files)
    mbytes = size / (1024 * 1024)
    sync_times, bare_times, sync_cpu, bare_cpu = [], [], [], []
    for run in range(runs):
        os.sync()
        wall, cpu, report = timed_sync(source, work / f"home{run}")
        sync_times.append(wall)
        sync_cpu.append(cpu)
        shutil.rmtree(work / f"home{run}")
        os.sync()
        began, cpu0 = time.perf_counter(), time.process_time()
        bare_loop(source, work / f"bare{run}.db")
        bare_times.append(time.perf_counter() - began)
        bare_cpu.append(time.process_time() - cpu0)
        for suffix in ("", "-wal", "-shm"):
            Path(f"{work / f'bare{run}.db'}{suffix}").unlink(missing_ok=True)
    s, b = statistics.median(sync_times), statistics.median(bare_times)
    sc, bc = statistics.median(sync_cpu), statistics.median(bare_cpu)
    return {
        "mb": round(mbytes, 1),
        "files": files,
        "events": report.events_added,
        "exchanges": report.exchanges_added,
        "sync_s": round(s, 3),
        "bare_s": round(b, 3),
        "sync_mb_s": round(mbytes / s, 1),
        "bare_mb_s": round(mbytes / b, 1),
        "ratio": round(b / s, 3),
        "sync_cpu_mb_s": round(mbytes / sc, 1),
        "bare_cpu_mb_s": round(mbytes / bc, 1),
        "cpu_ratio": round(bc / sc, 3),
    }


def child_sync(source: Path, home: Path) -> None:
    """Run in a child process: sync ``source`` into ``home`` and print what it cost."""
    size = sum(p.stat().st_size for p in source.rglob("*.jsonl"))
    wall, cpu, report = timed_sync(source, home)
    peak_kb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss  # KiB on Linux
    result = {
        "mb": round(size / 1024**2, 1),
        "peak_rss_mb": round(peak_kb / 1024, 1),
        "sync_s": round(wall, 2),
        "sync_mb_s": round(size / 1024**2 / wall, 1),
        "sync_cpu_mb_s": round(size / 1024**2 / cpu, 1),
        "events": report.events_added,
        "errors": report.errors,
    }
    print(json.dumps(result))


def _in_child(source: Path, home: Path) -> dict[str, Any]:
    done = subprocess.run(
        [sys.executable, __file__, "--child-sync", str(source), str(home)],
        check=True,
        capture_output=True,
        text=True,
    )
    return dict(json.loads(done.stdout.strip().splitlines()[-1]))


def peak_memory(work: Path, singles: list[float], small_mb: float) -> dict[str, Any]:
    """Peak RSS of a sync of one N MB transcript, and of ``small_mb`` MB in 1 MB files."""
    rng = random.Random(5)
    out: dict[str, Any] = {}
    if small_mb > 0:
        small = work / "mem-small"
        files = max(1, int(small_mb))
        for i in range(files):
            project = small / f"-home-dev-code-project{i % 7}"
            project.mkdir(parents=True, exist_ok=True)
            write_session(project / f"{i:08x}-0000-4000-8000-{i:012x}.jsonl", rng, i, 1 << 20)
        out["small_files"] = {"files": files, **_in_child(small, work / "mem-small-home")}
        shutil.rmtree(small)
        shutil.rmtree(work / "mem-small-home")
    for mb in singles:
        source = work / f"mem-single-{mb:g}"
        project = source / "-home-dev-code-agent"
        project.mkdir(parents=True)
        write_session(
            project / "0badc0de-0000-4000-8000-000000000001.jsonl", rng, 1, int(mb * 2**20)
        )
        out[f"single_{mb:g}mb"] = _in_child(source, work / f"mem-single-{mb:g}-home")
        shutil.rmtree(source)
        shutil.rmtree(work / f"mem-single-{mb:g}-home")
    return out


def noop(work: Path, count: int, kb: int, runs: int) -> dict[str, Any]:
    source = work / "noop-src"
    rng = random.Random(11)
    templates = [session_bytes(rng, i, 6_000) for i in range(16)]
    total = 0
    for i in range(count):
        body = templates[i % len(templates)]
        pad = max(0, kb * 1024 - len(body) - 80)
        snap = b'{"type":"file-history-snapshot","messageId":"m%d","snapshot":{"x":"' % i
        data = body + snap + b"a" * pad + b'"},"isSnapshotUpdate":false}\n'
        project = source / f"-home-dev-p{i % 50}"
        project.mkdir(parents=True, exist_ok=True)
        (project / f"{i:08x}-1111-4222-8333-{i:012x}.jsonl").write_bytes(data)
        total += len(data)
    home = work / "noop-home"
    first, _, report = timed_sync(source, home)
    times = [timed_sync(source, home)[0] for _ in range(runs)]
    env = {k: v for k, v in os.environ.items() if not k.startswith("MEMOIR_")}
    env.update(MEMOIR_HOME=str(home), MEMOIR_SOURCES=str(source))
    cli = []
    for _ in range(runs):
        began = time.perf_counter()
        subprocess.run(
            [sys.executable, "-m", "memoir.cli", "sync", "--no-summaries", "--json"],
            env=env,
            check=True,
            capture_output=True,
        )
        cli.append(time.perf_counter() - began)
    return {
        "files": count,
        "gb": round(total / 1024**3, 2),
        "first_sync_s": round(first, 1),
        "first_sync_mb_s": round(total / 1024**2 / first, 1),
        "noop_sync_s": round(statistics.median(times), 3),
        "noop_cli_s": round(statistics.median(cli), 3),
        "indexed": report.files_indexed,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--mb", type=float, default=64)
    parser.add_argument("--files", type=int, default=64)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--noop-files", type=int, default=10_000)
    parser.add_argument("--noop-kb", type=int, default=210)
    parser.add_argument("--skip-noop", action="store_true")
    parser.add_argument("--skip-throughput", action="store_true")
    parser.add_argument("--single-mb", type=float, action="append", default=[])
    parser.add_argument("--small-mb", type=float, default=150)
    parser.add_argument("--child-sync", nargs=2, type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--dir", type=Path, default=None, help="Work folder (default: a temp dir).")
    args = parser.parse_args()
    if args.child_sync:
        child_sync(*args.child_sync)
        return
    work = args.dir or Path(tempfile.mkdtemp(prefix="memoir-sync-bench-"))
    try:
        out: dict[str, Any] = {
            "date": datetime.now(UTC).strftime("%Y-%m-%d"),
            "machine": f"{platform.machine()} {os.cpu_count()} cores, "
            f"Python {platform.python_version()}",
            "json": "orjson" if _has_orjson() else "json",
        }
        if not args.skip_throughput:
            out["throughput"] = throughput(work, args.mb, args.files, args.runs)
        if not args.skip_noop:
            out["noop"] = noop(work, args.noop_files, args.noop_kb, args.runs)
        if args.single_mb:
            out["memory"] = peak_memory(work, args.single_mb, args.small_mb)
    finally:
        if args.dir is None:
            shutil.rmtree(work, ignore_errors=True)
    if args.json:
        print(json.dumps(out, indent=2))
        return
    print(f"{out['date']} · {out['machine']} · parser {out['json']}")
    if "throughput" in out:
        t = out["throughput"]
        print(
            f"(a) {t['mb']} MB in {t['files']} files: sync {t['sync_mb_s']} MB/s "
            f"({t['sync_s']} s), bare parse+FTS5 {t['bare_mb_s']} MB/s ({t['bare_s']} s), "
            f"ratio {t['ratio']}; CPU time: sync {t['sync_cpu_mb_s']} MB/s, "
            f"bare {t['bare_cpu_mb_s']} MB/s, ratio {t['cpu_ratio']}"
        )
    if "noop" in out:
        n = out["noop"]
        print(
            f"(b) {n['files']} conversations, {n['gb']} GB: first sync {n['first_sync_s']} s; "
            f"nothing-to-do sync() {n['noop_sync_s']} s, `memoir sync --no-summaries` "
            f"{n['noop_cli_s']} s"
        )
    for name, m in out.get("memory", {}).items():
        print(
            f"(c) {name}: {m['mb']} MB, peak RSS {m['peak_rss_mb']} MB, "
            f"sync {m['sync_mb_s']} MB/s ({m['sync_s']} s, CPU {m['sync_cpu_mb_s']} MB/s)"
        )


def _has_orjson() -> bool:
    try:
        import orjson  # noqa: F401
    except ImportError:
        return False
    return True


if __name__ == "__main__":
    main()
