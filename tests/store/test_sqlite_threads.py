"""One SQLiteStore shared by many threads, as a web server's workers share it."""

from __future__ import annotations

import gc
import os
import threading
import time
from pathlib import Path

from store_builders import ingest

from memoir.errors import StoreError
from memoir.store.port import SearchFilters
from memoir.store.sqlite_store import SQLiteStore


def _open_files_on(path: Path) -> int:
    count = 0
    for fd in os.listdir("/proc/self/fd"):
        try:
            if os.readlink(f"/proc/self/fd/{fd}").startswith(str(path)):
                count += 1
        except OSError:
            pass
    return count


def _filled(tmp_path: Path) -> SQLiteStore:
    store = SQLiteStore(tmp_path / "memoir.db")
    for i in range(20):
        ingest(store, f"s{i}", [(f"where is the parser {i}", "in lines.py", None)])
    return store


def test_a_thread_that_ends_leaves_no_connection_open(tmp_path: Path) -> None:
    store = _filled(tmp_path)
    try:
        before = _open_files_on(tmp_path / "memoir.db")
        found: list[int] = []
        for _ in range(200):  # a thread per request, one after the other
            worker = threading.Thread(
                target=lambda: found.append(len(store.search_text("parser", SearchFilters(), 5)))
            )
            worker.start()
            worker.join()
        gc.collect()
        assert found == [5] * 200
        assert _open_files_on(tmp_path / "memoir.db") <= before + 2  # not 2 per thread
    finally:
        store.close()
    assert _open_files_on(tmp_path / "memoir.db") == 0


def test_close_while_other_threads_search_ends_them_cleanly(tmp_path: Path) -> None:
    store = _filled(tmp_path)
    stop = threading.Event()
    outcomes: list[str] = []

    def search_until_closed() -> None:
        while not stop.is_set():
            try:
                hits = store.search_text("parser OR lines", SearchFilters(), 10)
                assert len(hits) == 10
            except StoreError as exc:
                outcomes.append(str(exc))
                return
        outcomes.append("stopped")

    workers = [threading.Thread(target=search_until_closed) for _ in range(4)]
    for worker in workers:
        worker.start()
    time.sleep(0.5)
    store.close()  # used to close connections mid-call: a segmentation fault
    for worker in workers:
        worker.join(timeout=30)
    stop.set()
    assert not any(worker.is_alive() for worker in workers)
    assert outcomes == ["the store is closed"] * 4
    assert _open_files_on(tmp_path / "memoir.db") == 0
