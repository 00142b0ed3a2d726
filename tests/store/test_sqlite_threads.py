"""One SQLiteStore shared by many threads, as a web server's workers share it."""

from __future__ import annotations

import gc
import os
import sqlite3
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from store_builders import ingest

from memoir.errors import StoreError
from memoir.store import sqlite_store
from memoir.store.sqlite_store import SQLiteStore
from memoir.store.values import SearchFilters


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
                target=lambda: found.append(len(store.index.search("parser", SearchFilters(), 5)))
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
                hits = store.index.search("parser OR lines", SearchFilters(), 10)
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


def _on_a_thread(call: Callable[[], object]) -> BaseException | None:
    """Run ``call`` on a thread of its own; what it raised. A call that never ends (a
    close waiting for itself) fails the test instead of hanging the suite."""
    raised: list[BaseException] = []

    def run() -> None:
        try:
            call()
        except BaseException as exc:
            raised.append(exc)

    worker = threading.Thread(target=run, daemon=True)
    worker.start()
    worker.join(timeout=30)
    assert not worker.is_alive(), "the call waits for itself"
    return raised[0] if raised else None


def test_close_inside_a_search_on_its_own_thread_says_the_store_is_closed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A signal handler running inside a search closes the store: that search ends with
    the closed store's own error, not the driver's "Cannot operate on a closed database"."""
    store = _filled(tmp_path)
    search = sqlite_store.sqlite_search.search

    def closed_halfway(conn: sqlite3.Connection, *args: Any, **kwargs: Any) -> Any:
        store.close()  # as a handler would, between two statements of the call
        return search(conn, *args, **kwargs)

    monkeypatch.setattr(sqlite_store.sqlite_search, "search", closed_halfway)
    raised = _on_a_thread(lambda: store.index.search("parser", SearchFilters(), 5))
    assert (type(raised), str(raised)) == (StoreError, "the store is closed")
    monkeypatch.undo()
    with pytest.raises(StoreError, match=r"^the store is closed$"):
        store.index.search("parser", SearchFilters(), 5)
    assert _open_files_on(tmp_path / "memoir.db") == 0


def test_close_inside_a_write_on_its_own_thread_says_the_store_is_closed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The write's transaction goes with its connection: nothing of the batch is stored,
    and rolling back a closed connection raises nothing over the store's error."""
    store = _filled(tmp_path)
    apply = store.ingest._apply_batch

    def closed_halfway(conn: sqlite3.Connection, batch: Any) -> None:
        apply(conn, batch)
        store.close()  # the batch written, not yet committed

    monkeypatch.setattr(store.ingest, "_apply_batch", closed_halfway)
    raised = _on_a_thread(lambda: ingest(store, "late", [("where is the parser?", "here", None)]))
    assert (type(raised), str(raised)) == (StoreError, "the store is closed")
    monkeypatch.undo()
    reopened = SQLiteStore(tmp_path / "memoir.db")
    try:
        assert reopened.sessions.get("late") is None
        assert reopened.stats()["sessions"] == 20
    finally:
        reopened.close()


def test_close_from_a_handler_inside_close_does_not_wait_for_itself(tmp_path: Path) -> None:
    store = _filled(tmp_path)
    store.index.search("parser", SearchFilters(), 5)  # this thread's connection is open

    def close_inside_close() -> None:
        with store._lock:  # as if a signal handler ran while close held it
            store.close()

    assert _on_a_thread(close_inside_close) is None
    store.close()
    with pytest.raises(StoreError, match=r"^the store is closed$"):
        store.index.search("parser", SearchFilters(), 5)
    assert _open_files_on(tmp_path / "memoir.db") == 0


def _mmap(store: SQLiteStore) -> int:
    with store._use() as conn:
        return int(conn.execute("PRAGMA mmap_size").fetchone()[0])


def test_bulk_writes_read_unmapped_on_their_thread_only(tmp_path: Path) -> None:
    """A sync's thread reads the database unmapped (mapped pages would grow its RSS with
    the database); other threads keep their mapping, and the thread maps again after."""
    store = _filled(tmp_path)
    seen: list[int] = []
    assert _mmap(store) == sqlite_store.MMAP_BYTES
    with store.bulk_writes():
        assert _mmap(store) == 0
        ingest(store, "during", [("still writes", "and reads", None)])
        other = threading.Thread(target=lambda: seen.append(_mmap(store)))
        other.start()
        other.join()
    assert seen == [sqlite_store.MMAP_BYTES]
    assert _mmap(store) == sqlite_store.MMAP_BYTES
    assert store.events.last_ordinal("during") > 0
    with pytest.raises(RuntimeError), store.bulk_writes():  # restored on an error too
        raise RuntimeError("boom")
    assert _mmap(store) == sqlite_store.MMAP_BYTES
    store.close()


def test_a_sync_runs_unmapped(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from contextlib import contextmanager

    from memoir.app import Memoir
    from memoir.config import Settings
    from memoir.demo.make_corpus import corpus_sources

    during: list[int] = []
    real = SQLiteStore.bulk_writes

    @contextmanager
    def watched(self: SQLiteStore) -> Any:
        with real(self):
            during.append(_mmap(self))
            yield

    monkeypatch.setattr(SQLiteStore, "bulk_writes", watched)
    home = tmp_path / "home"
    settings = Settings.from_env({"MEMOIR_HOME": str(home)}, sources=tuple(corpus_sources()))
    with Memoir.open(settings) as memoir:
        assert memoir.sync().files_scanned > 0
    assert during == [0]
