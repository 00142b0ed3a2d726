"""Round trips of arbitrary text and payloads (hypothesis, both backends), and two store
instances writing one SQLite file at once."""

from __future__ import annotations

import itertools
import threading
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from store_builders import T0, batch, ingest, session

from memoir.model import Author, Event, EventKind, build_exchanges
from memoir.store import SearchFilters, Store
from memoir.store.sqlite_store import SQLiteStore

TEXT = st.text(alphabet=st.characters(codec="utf-8", exclude_characters="\x00"), max_size=200)
JSON = st.recursive(
    st.none() | st.booleans() | st.integers(-(2**53), 2**53) | TEXT,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(TEXT, inner, max_size=3),
    max_leaves=8,
)
_ids = itertools.count()


@settings(
    max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(user=TEXT, reply=TEXT, payload=st.dictionaries(TEXT, JSON, max_size=3))
def test_text_and_payload_round_trip(store: Store, user: str, reply: str, payload: dict) -> None:  # type: ignore[type-arg]
    sid = f"h{next(_ids)}"
    events = [
        Event(sid, 1, EventKind.USER_TEXT, Author.USER, user, timestamp=T0, payload=payload),
        Event(sid, 2, EventKind.ASSISTANT_TEXT, Author.ASSISTANT, reply, timestamp=T0),
    ]
    store.ingest.apply(batch(session(sid), events))
    assert store.events.of(sid) == events
    assert store.exchanges.of(sid) == build_exchanges(events)
    store.index.search(user, SearchFilters(session_id=sid), 5)  # any text is a safe query


def test_two_store_instances_share_one_sqlite_file(tmp_path: Path) -> None:
    path = tmp_path / "shared.db"
    stores = [SQLiteStore(path), SQLiteStore(path)]
    errors: list[BaseException] = []

    def work(k: int) -> None:
        try:
            for i in range(10):
                ingest(stores[k], f"p{k}-{i}", [(f"process {k} writes otter {i}", "ok", None)])
        except BaseException as exc:  # pragma: no cover - reported below
            errors.append(exc)

    threads = [threading.Thread(target=work, args=(k,)) for k in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    try:
        assert errors == []
        for s in stores:
            assert s.stats()["sessions"] == 20
            assert len(s.index.search("otter", SearchFilters(), 50)) == 20
    finally:
        for s in stores:
            s.close()
