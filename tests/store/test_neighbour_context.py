"""The shared store suite, part 5: the index's neighbour context (both backends).

An exchange's index row holds an excerpt of the exchanges before and after it in its
session (the ``context`` column, see ``memoir.store.index_doc``): all query words may be
found between an exchange and its neighbours, but at least one must be its own.
"""

from __future__ import annotations

from datetime import timedelta

from store_builders import T0, ingest

from memoir.store import SearchFilters, Store

TRIP: list[tuple[str, str | None, str | None]] = [
    ("How was the trip to the lake?", "I would love to hear about it.", None),
    ("We hiked all day and saw otters.", "Sounds wonderful!", None),
    ("Then we drove home through the mountains.", "What a weekend.", None),
]


def ids(store: Store, query: str, **filters: object) -> list[str]:
    return [h.exchange_id for h in store.index.search(query, SearchFilters(**filters), 10)]  # type: ignore[arg-type]


def order(store: Store, sid: str) -> list[str]:
    return [x.id for x in store.exchanges.of(sid)]


def test_all_words_may_be_split_between_an_exchange_and_its_neighbours(store: Store) -> None:
    ingest(store, "t", TRIP)
    first, second, third = order(store, "t")
    # "lake" is only in the first exchange, "otters" only in the second
    assert set(ids(store, "lake otters")) == {first, second}
    # a word the exchange does not hold itself never makes it a hit
    assert ids(store, "otters") == [second]
    assert ids(store, "mountains") == [third]
    hits = store.index.search("otters", SearchFilters(), 10)
    assert "\x02otters\x03" in hits[0].snippet.lower()


def test_a_neighbour_appended_later_rewrites_the_previous_row(store: Store) -> None:
    ingest(store, "t", TRIP[:2])
    _, second = order(store, "t")
    assert ids(store, "otters mountains") == [second]  # any-word fallback: otters only
    ingest(store, "t", TRIP)  # the third exchange arrives in a later batch
    second_again, third = order(store, "t")[1:]
    assert second_again == second
    assert set(ids(store, "otters mountains")) == {second, third}
    assert store.integrity_problems() == []
    assert store.stats()["index_rows"] == 3


def test_filters_keep_the_own_word_rule(store: Store) -> None:
    ingest(store, "t", TRIP, project="trips")
    first, second, third = order(store, "t")
    after = T0 - timedelta(days=1)
    assert ids(store, "otters", project="trips") == [second]
    assert ids(store, "otters", harness="claude-code") == [second]
    assert ids(store, "otters", after=after, before=T0 + timedelta(days=1)) == [second]
    assert set(ids(store, "lake otters", project="trips")) == {first, second}
    assert ids(store, "mountains", session_id="t") == [third]


def test_exclusion_looks_at_the_exchange_itself(store: Store) -> None:
    ingest(store, "t", TRIP)
    first, second, _ = order(store, "t")
    assert ids(store, "otters -lake") == [second]  # "lake" is only in the neighbour
    assert ids(store, "lake -otters") == [first]


def test_role_filter_ignores_the_context(store: Store) -> None:
    ingest(store, "t", TRIP)
    assert ids(store, "lake otters", role="user") != []  # any-word fallback per column
    assert set(ids(store, "lake otters", role="user")) == set(order(store, "t")[:2])
    assert ids(store, "otters", role="assistant") == []


def test_other_sessions_are_not_neighbours(store: Store) -> None:
    ingest(store, "a", TRIP[:1])
    ingest(store, "b", TRIP[1:2])
    (a,) = order(store, "a")
    (b,) = order(store, "b")
    assert set(ids(store, "lake otters")) == {a, b}  # any-word fallback, not all-words
    assert ids(store, "lake otters", session_id="a") == [a]


def test_repair_rebuilds_the_context(store: Store) -> None:
    ingest(store, "t", TRIP)
    first, second, _ = order(store, "t")
    assert store.index.repair() >= 0
    assert store.integrity_problems() == []
    assert set(ids(store, "lake otters")) == {first, second}
    assert set(ids(store, "lake otters hiked")) == {first, second}
