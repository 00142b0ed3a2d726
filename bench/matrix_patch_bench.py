"""Time loading the vector matrix at 1M rows: read whole, or patched after changes.

Runs on the corpus ``search_latency_bench.py --n 1000000`` caches. Each phase is its own
process, as a ``memoir search`` after a change would be::

    python bench/matrix_patch_bench.py change --seed 1   # rewrite 1,000 vectors, drop 100
    python bench/matrix_patch_bench.py load              # a fresh process loads the matrix
    python bench/matrix_patch_bench.py whole             # the whole read, for comparison
"""

from __future__ import annotations

import argparse
import json
import time

import numpy as np

from memoir.config import Settings
from memoir.search import vectors
from memoir.search.matrix_files import read_whole
from memoir.store import open_store

HOME = ".tmp/search-latency/corpus-1000000"
MODEL = "all-MiniLM-L6-v2-int8"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("phase", choices=("change", "load", "whole"))
    parser.add_argument("--home", default=HOME)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--changed", type=int, default=1_000)
    parser.add_argument("--removed", type=int, default=100)
    args = parser.parse_args()
    store = open_store(Settings.from_env({"MEMOIR_HOME": args.home}, sources=()))
    try:
        report: dict[str, object] = {"phase": args.phase}
        started = time.perf_counter()
        if args.phase == "change":
            with store._ro() as tx:  # type: ignore[attr-defined]
                ids = [
                    r[0]
                    for r in tx.run(
                        "SELECT exchange_id FROM embeddings WHERE model = ? "
                        "ORDER BY random() LIMIT ?",
                        (MODEL, args.changed + args.removed),
                    )
                ]
            rng = np.random.default_rng(args.seed)
            rows = rng.standard_normal((args.changed, 384)).astype(np.float32)
            rows /= np.linalg.norm(rows, axis=1, keepdims=True)
            changed = ids[: args.changed]
            fresh = [(x, rows[i].tobytes()) for i, x in enumerate(changed)]
            store.embeddings.put(MODEL, fresh, 384)
            with store._tx() as tx:  # type: ignore[attr-defined]
                tx.many(
                    "DELETE FROM embeddings WHERE model = ? AND exchange_id = ?",
                    [(MODEL, x) for x in ids[args.changed :]],
                )
            report["generation"] = store.embeddings.generation(MODEL)
        elif args.phase == "load":
            matrix = vectors.matrix_for(store, MODEL)
            report.update(rows=matrix.size, memmap=isinstance(matrix.matrix, np.memmap))
        else:
            whole = read_whole(store, MODEL, store.embeddings.generation(MODEL), None)
            report["rows"] = len(whole.ids)
        report["seconds"] = round(time.perf_counter() - started, 2)
        print(json.dumps(report))
    finally:
        store.close()


if __name__ == "__main__":
    main()
