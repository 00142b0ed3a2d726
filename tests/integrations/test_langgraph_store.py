"""MemoirStore against the behaviour LangGraph's own stores are tested for (langgraph's
libs/checkpoint tests of InMemoryStore and the Postgres store: namespaces listed by prefix,
suffix, wildcard, depth and page; puts, gets, deletes, filters, paging, query ranking that
follows re-puts and ``index=False``; invalid namespaces; ordered async calls), written here
for Memoir, on both backends, through LangGraph's real ``BaseStore`` methods."""

from __future__ import annotations

import asyncio
import math
from collections.abc import Iterator
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest
from langgraph.store.base import (
    GetOp,
    InvalidNamespaceError,
    ListNamespacesOp,
    MatchCondition,
    PutOp,
    SearchOp,
)

from memoir import Memoir, Settings
from memoir.errors import UsageError
from memoir.integrations.langgraph import MemoirStore, item_text
from memoir.store import Store


@pytest.fixture
def memoir(home: Path, store: Store) -> Iterator[Memoir]:
    settings = Settings.from_env({"MEMOIR_HOME": str(home), "MEMOIR_EMBEDDER": "none"}, sources=())
    m = Memoir(settings, store)
    yield m
    m.close()


@pytest.fixture
def lg(memoir: Memoir) -> Iterator[MemoirStore]:
    made = MemoirStore(memoir)
    yield made
    made.close()


ODD_VALUE: dict[str, Any] = {
    "text": "naïve café — 日本語 🚀",
    "nul": "a\x00b",
    "surrogate": "\ud800 alone",
    "float": 0.1,
    "tiny": 5e-324,
    "big": 2**70,
    "negative_zero": -0.0,
    "flags": [True, False, None],
    "nested": {"z": 1, "a": {"deep": [1, 2.5, "three", {}]}},
    "empty": {},
    "order": {"b": 1, "a": 2},
}


def test_a_value_round_trips_exactly_with_its_times(lg: MemoirStore) -> None:
    lg.put(("docs", "u1"), "odd", ODD_VALUE)
    got = lg.get(("docs", "u1"), "odd")
    assert got is not None
    assert got.value == ODD_VALUE
    assert list(got.value["order"]) == ["b", "a"]  # key order kept
    assert math.copysign(1.0, got.value["negative_zero"]) == -1.0
    assert type(got.value["big"]) is int and type(got.value["float"]) is float
    assert (got.namespace, got.key) == (("docs", "u1"), "odd")
    assert isinstance(got.created_at, datetime) and got.created_at.tzinfo is not None
    assert got.created_at == got.updated_at
    assert lg.get(("docs", "u1"), "missing") is None
    assert lg.get(("docs",), "odd") is None  # a namespace is exact for get


def test_a_second_put_replaces_the_value_and_keeps_created_at(lg: MemoirStore) -> None:
    lg.put(("docs",), "k", {"v": 1})
    first = lg.get(("docs",), "k")
    lg.put(("docs",), "k", {"w": 2})
    second = lg.get(("docs",), "k")
    assert first is not None and second is not None
    assert second.value == {"w": 2}
    assert second.created_at == first.created_at
    assert second.updated_at > first.updated_at


def test_delete_by_method_and_by_put_of_none(lg: MemoirStore) -> None:
    lg.put(("docs",), "a", {"v": 1})
    lg.put(("docs",), "b", {"v": 2})
    lg.delete(("docs",), "a")
    lg.batch([PutOp(("docs",), "b", None)])
    lg.delete(("docs",), "never-was")  # no error
    assert lg.get(("docs",), "a") is None and lg.get(("docs",), "b") is None
    assert lg.search(("docs",)) == []
    assert lg.list_namespaces() == []


def _fill(lg: MemoirStore) -> None:
    docs = [
        ("doc1", {"text": "red apple", "color": "red", "score": 4.5, "meta": {"k": "x"}}),
        ("doc2", {"text": "red car", "color": "red", "score": 3.0, "meta": {"k": "y"}}),
        ("doc3", {"text": "green apple", "color": "green", "score": 4.0, "tags": ["a", "b"]}),
        ("doc4", {"text": "blue car", "color": "blue", "score": 3.5, "ok": True}),
    ]
    for key, value in docs:
        lg.put(("test",), key, value)


def test_search_without_a_query_is_newest_change_first_within_the_prefix(
    lg: MemoirStore,
) -> None:
    _fill(lg)
    lg.put(("testing",), "other", {"text": "red apple"})  # shares the text prefix "test"
    lg.put(("test", "sub"), "deep", {"text": "sub"})
    keys = [r.key for r in lg.search(("test",))]
    assert keys == ["deep", "doc4", "doc3", "doc2", "doc1"]
    assert all(r.score is None for r in lg.search(("test",)))
    assert [r.key for r in lg.search(("test", "sub"))] == ["deep"]
    assert len(lg.search(())) == 6  # the empty prefix: everything
    lg.put(("test",), "doc1", {"text": "red apple", "color": "red", "score": 4.5})
    assert lg.search(("test",), limit=1)[0].key == "doc1"  # changed last: first


def test_search_pages_with_limit_and_offset(lg: MemoirStore) -> None:
    for i in range(7):
        lg.put(("page",), f"k{i}", {"i": i})
    pages = [[r.key for r in lg.search(("page",), limit=3, offset=o)] for o in (0, 3, 6)]
    assert pages == [["k6", "k5", "k4"], ["k3", "k2", "k1"], ["k0"]]
    assert lg.search(("page",), limit=3, offset=9) == []
    filtered = [r.key for r in lg.search(("page",), filter={"i": {"$gte": 2}}, limit=2, offset=1)]
    assert filtered == ["k5", "k4"]


@pytest.mark.parametrize(
    ("where", "keys"),
    [
        ({"color": "red"}, {"doc1", "doc2"}),
        ({"color": {"$eq": "blue"}}, {"doc4"}),
        ({"color": {"$ne": "red"}}, {"doc3", "doc4"}),
        ({"score": {"$gt": 3.5}}, {"doc1", "doc3"}),
        ({"score": {"$gte": 3.5}}, {"doc1", "doc3", "doc4"}),
        ({"score": {"$lt": 3.5}}, {"doc2"}),
        ({"score": {"$lte": 3.5, "$gt": 3.0}}, {"doc4"}),
        ({"score": {"$gte": 4.0}, "color": "green"}, {"doc3"}),
        ({"meta": {"k": "x"}}, {"doc1"}),  # a nested object: its fields
        ({"meta.k": "y"}, {"doc2"}),  # a dotted path
        ({"tags": ["a", "b"]}, {"doc3"}),
        ({"tags": ["b", "a"]}, set()),  # a list: in order
        ({"ok": True}, {"doc4"}),
        ({"score": 3}, {"doc2"}),  # 3 == 3.0, as JSON numbers
        ({"missing": "x"}, set()),
        ({"color": {"$gt": 3}}, set()),  # no order between a string and a number
    ],
)
def test_filters(lg: MemoirStore, where: dict[str, Any], keys: set[str]) -> None:
    _fill(lg)
    assert {r.key for r in lg.search(("test",), filter=where)} == keys


def test_an_unknown_filter_operator_is_refused(lg: MemoirStore) -> None:
    _fill(lg)
    with pytest.raises(UsageError, match=r"\$regex"):
        lg.search(("test",), filter={"color": {"$regex": "r.*"}})


def test_a_query_ranks_matches_first_with_scores_then_the_rest(lg: MemoirStore) -> None:
    _fill(lg)
    found = lg.search(("test",), query="apple")
    assert [r.key for r in found[:2]] == ["doc1", "doc3"]  # doc1's text is the shorter
    assert all(r.score is not None and r.score > 0 for r in found[:2])
    assert [r.key for r in found[2:]] == ["doc4", "doc2"]  # unmatched: newest first
    assert [r.score for r in found[2:]] == [0.0, 0.0]
    scores = [r.score for r in found]
    assert scores == sorted(scores, reverse=True)  # type: ignore[type-var]
    with_filter = lg.search(("test",), query="car", filter={"color": "red"})
    assert [(r.key, r.score and r.score > 0) for r in with_filter] == [
        ("doc2", True),
        ("doc1", False),
    ]
    # no word matches: every item that passes the filter still answers, unscored
    fuzzy = lg.search(("test",), query="bbbbluuu", filter={"score": {"$gt": 3.2}})
    assert [(r.key, r.score) for r in fuzzy] == [("doc4", 0.0), ("doc3", 0.0), ("doc1", 0.0)]


def test_the_better_match_ranks_first(lg: MemoirStore) -> None:
    lg.put(("m",), "strong", {"text": "dark theme editor, dark theme terminal, dark mode"})
    lg.put(("m",), "weak", {"text": "the dark editor opened"})
    lg.put(("m",), "none", {"text": "coffee"})
    found = lg.search(("m",), query="dark theme")
    assert [r.key for r in found] == ["strong", "weak", "none"]
    assert found[0].score > found[1].score > found[2].score == 0.0  # type: ignore[operator]


def test_a_re_put_is_ranked_on_its_new_text_and_index_false_is_not_ranked(
    lg: MemoirStore,
) -> None:
    lg.put(("test",), "doc1", {"text": "zany zebra Xerxes"})
    lg.put(("test",), "doc2", {"text": "something about dogs"})
    lg.put(("test",), "doc3", {"text": "text about birds"})
    first = lg.search(("test",), query="Zany Xerxes")
    assert first[0].key == "doc1" and first[0].score and first[0].score > 0
    lg.put(("test",), "doc1", {"text": "new text about dogs"})
    after = {r.key: r.score for r in lg.search(("test",), query="Zany Xerxes")}
    assert after["doc1"] == 0.0
    assert lg.search(("test",), query="new dogs")[0].key == "doc1"
    lg.put(("test",), "doc4", {"text": "new text about dogs"}, index=False)
    ranked = lg.search(("test",), query="new text about dogs", limit=3)
    assert "doc4" not in {r.key for r in ranked}
    assert {r.key: r.score for r in lg.search(("test",), query="dogs")}["doc4"] == 0.0


def test_index_fields_choose_what_a_query_ranks_on(memoir: Memoir) -> None:
    store = MemoirStore(memoir, fields=("title",))
    store.put(("n",), "a", {"title": "kettle", "body": "teapot"})
    store.put(("n",), "b", {"title": "teapot", "body": "kettle"}, index=["body"])
    store.put(("n",), "c", {"title": "mug", "items": [{"name": "teapot"}]}, index=["items[*].name"])
    kettle = {r.key: r.score for r in store.search(("n",), query="kettle")}
    teapot = {r.key: r.score for r in store.search(("n",), query="teapot")}
    assert kettle["a"] and kettle["b"] and kettle["c"] == 0.0
    assert teapot["a"] == 0.0 and teapot["b"] == 0.0 and teapot["c"]
    store.close()


@pytest.mark.parametrize(
    ("value", "fields", "text"),
    [
        ({"a": "x", "b": {"c": ["y", 2, True, None]}}, ("$",), "x\ny\n2\nTrue"),
        ({"a": "x", "b": {"c": "y"}}, ("b.c",), "y"),
        ({"a": [{"n": "p"}, {"n": "q"}]}, ("a[*].n",), "p\nq"),
        ({"a": "x"}, (), ""),
        ({"a": "x"}, ("missing",), ""),
    ],
)
def test_item_text(value: dict[str, Any], fields: tuple[str, ...], text: str) -> None:
    assert item_text(value, fields) == text


@pytest.mark.parametrize("query", ["", None, "   "])
def test_an_empty_query_is_no_query(lg: MemoirStore, query: str | None) -> None:
    lg.put(("test",), "doc1", {"text": "test document"})
    found = lg.search(("test",), query=query)
    assert [(r.key, r.score) for r in found] == [("doc1", None)]


@pytest.mark.parametrize("query", ["test " * 100, "test!@#$%^&*()", '"unclosed OR (', "x" * 5000])
def test_odd_queries_answer(lg: MemoirStore, query: str) -> None:
    lg.put(("test",), "doc1", {"text": "test document"})
    assert [r.key for r in lg.search(("test",), query=query)] == ["doc1"]


NAMESPACES = [
    ("a", "b", "c"),
    ("a", "b", "d", "e"),
    ("a", "b", "d", "i"),
    ("a", "b", "f"),
    ("a", "c", "f"),
    ("b", "a", "f"),
    ("users", "123"),
    ("users", "456", "settings"),
    ("admin", "users", "789"),
]


@pytest.mark.parametrize(
    ("kwargs", "expected"),
    [
        ({"prefix": ("a", "b")}, NAMESPACES[:4]),
        ({"suffix": ("f",)}, [("a", "b", "f"), ("a", "c", "f"), ("b", "a", "f")]),
        ({"prefix": ("a",), "suffix": ("f",)}, [("a", "b", "f"), ("a", "c", "f")]),
        (
            {"prefix": ("a", "b"), "max_depth": 3},
            [("a", "b", "c"), ("a", "b", "d"), ("a", "b", "f")],
        ),
        ({"prefix": ("a", "b"), "limit": 2}, NAMESPACES[:2]),
        ({"prefix": ("a", "b"), "offset": 2}, NAMESPACES[2:4]),
        ({"prefix": ("a", "*", "f")}, [("a", "b", "f"), ("a", "c", "f")]),
        ({"suffix": ("*", "f")}, [("a", "b", "f"), ("a", "c", "f"), ("b", "a", "f")]),
        ({"prefix": ("users", "*")}, [("users", "123"), ("users", "456", "settings")]),
        ({"prefix": ("*", "users"), "suffix": ("*", "settings")}, []),
        ({"prefix": ("nonexistent",)}, []),
        ({"prefix": ("users", "123")}, [("users", "123")]),
        ({"prefix": ("a", "b", "c", "d")}, []),  # longer than every namespace under it
        ({"max_depth": 1}, [("a",), ("admin",), ("b",), ("users",)]),
        ({}, sorted(NAMESPACES)),
    ],
)
def test_list_namespaces(lg: MemoirStore, kwargs: dict[str, Any], expected: list[Any]) -> None:
    for i, ns in enumerate(NAMESPACES):
        lg.put(ns, f"id_{i}", {"data": f"value_{i:02d}"})
    assert lg.list_namespaces(**kwargs) == expected


def test_list_namespaces_pages_and_an_empty_store(lg: MemoirStore) -> None:
    assert lg.list_namespaces() == []
    for i in range(20):
        lg.put(("namespace", f"sub_{i:02d}"), f"id_{i:02d}", {"data": i})
    for offset in (0, 5, 15):
        got = lg.list_namespaces(prefix=("namespace",), limit=5, offset=offset)
        assert got == [("namespace", f"sub_{i:02d}") for i in range(offset, offset + 5)]
    ops = [ListNamespacesOp((MatchCondition("suffix", ("sub_03",)),), max_depth=None, limit=9)]
    assert lg.batch(ops) == [[("namespace", "sub_03")]]


@pytest.mark.parametrize(
    "bad", [(), ("the", "thing.about"), ("some", "fun", ""), ("langgraph", "x")]
)
def test_invalid_namespaces_are_refused(lg: MemoirStore, bad: tuple[str, ...]) -> None:
    with pytest.raises(InvalidNamespaceError):
        lg.put(bad, "foo", {"foo": "bar"})
    with pytest.raises(InvalidNamespaceError):
        asyncio.run(lg.aput(bad, "foo", {"foo": "bar"}))
    assert lg.list_namespaces() == []


def test_ops_past_the_put_method_are_checked_too(lg: MemoirStore) -> None:
    with pytest.raises(InvalidNamespaceError):
        lg.batch([PutOp(("a.b",), "k", {"v": 1})])  # would address ("a", "b")
    with pytest.raises(InvalidNamespaceError):
        lg.batch([GetOp(("a", ""), "k")])
    # the reserved root is a rule of the put method only, as in LangGraph's stores
    lg.batch([PutOp(("langgraph", "foo"), "bar", {"foo": "bar"})])
    assert lg.search(("langgraph", "foo"))[0].value == {"foo": "bar"}
    lg.put(("foo", "langgraph", "foo"), "bar", {"x": 1})
    assert lg.get(("foo", "langgraph", "foo"), "bar") is not None


def test_a_batch_answers_each_op_in_order(lg: MemoirStore) -> None:
    results = lg.batch(
        [
            PutOp(("b",), "k", {"v": 1}),
            GetOp(("b",), "k"),
            PutOp(("b",), "k", {"v": 2}),
            SearchOp(("b",), filter={"v": 2}),
            PutOp(("b",), "k", None),
            GetOp(("b",), "k"),
            ListNamespacesOp(),
        ]
    )
    assert results[0] is None and results[2] is None and results[4] is None
    assert results[1].value == {"v": 1}  # type: ignore[union-attr]
    assert [i.value for i in results[3]] == [{"v": 2}]  # type: ignore[union-attr]
    assert results[5] is None and results[6] == []


def test_ttl_is_not_offered(lg: MemoirStore) -> None:
    assert lg.supports_ttl is False
    with pytest.raises(NotImplementedError):
        lg.put(("t",), "k", {"v": 1}, ttl=5)


def test_a_store_sees_only_its_user_s_items(memoir: Memoir) -> None:
    alice = MemoirStore(memoir.as_user("alice"))
    bob = MemoirStore(memoir, user="bob")
    assert (alice.user, bob.user) == ("alice", "bob")
    alice.put(("prefs",), "theme", {"text": "dark theme"})
    assert bob.get(("prefs",), "theme") is None
    assert bob.search(("prefs",), query="dark theme") == []
    assert bob.list_namespaces() == []
    bob.put(("prefs",), "theme", {"text": "light theme"})
    bob.delete(("prefs",), "theme")
    got = alice.get(("prefs",), "theme")
    assert got is not None and got.value == {"text": "dark theme"}
    assert [r.value for r in alice.search((), query="theme")] == [{"text": "dark theme"}]
    assert MemoirStore(memoir).search(()) == []  # the home's own user: local
    alice.close()
    bob.close()


def test_items_persist_in_the_home(home: Path) -> None:
    env = {"MEMOIR_HOME": str(home), "MEMOIR_EMBEDDER": "none"}
    with Memoir(Settings.from_env(env, sources=()), _sqlite(home)) as first:
        MemoirStore(first).put(("keep",), "k", {"v": [1, 2]})
    with Memoir.at(home, embedder="none") as again:
        got = MemoirStore(again).get(("keep",), "k")
    assert got is not None and got.value == {"v": [1, 2]}


def _sqlite(home: Path) -> Store:
    from memoir.store import open_store

    settings = Settings.from_env({"MEMOIR_HOME": str(home)}, sources=())
    settings.ensure_home()
    return open_store(settings)


def test_async_methods_and_ordered_concurrent_calls(lg: MemoirStore) -> None:
    colors = ["red", "blue", "green", "yellow", "purple"]
    things = ["apple", "car", "house", "book", "phone"]
    docs = [
        (f"doc{i}", {"text": f"{colors[i % 5]} {things[i % 5]}", "color": colors[i % 5], "i": i})
        for i in range(30)
    ]

    async def run() -> None:
        await asyncio.gather(
            *[lg.aput(("test",), k, v) for k, v in docs],
            *[lg.adelete(("test",), k) for k, _ in docs],
            *[lg.aput(("test",), k, v) for k, v in docs],
        )
        got = await lg.aget(("test",), "doc7")
        assert got is not None and got.value == docs[7][1]  # put, delete, put: there
        searches = await asyncio.gather(
            lg.asearch(("test",), query="apple", filter={"color": "red"}),
            lg.asearch(("test",), query="house", filter={"i": {"$gt": 20}}),
            lg.asearch(("test",), filter={"i": {"$lte": 3}}, limit=50),
        )
        assert {r.key for r in searches[0]} == {f"doc{i}" for i in range(0, 30, 5)}
        assert all(r.score and r.score > 0 for r in searches[0])
        assert [r.key for r in searches[1] if r.score] == ["doc22", "doc27"]
        assert {r.value["i"] for r in searches[1]} == set(range(21, 30))
        assert {r.key for r in searches[2]} == {"doc0", "doc1", "doc2", "doc3"}
        assert await lg.alist_namespaces() == [("test",)]
        await lg.adelete(("test",), "doc7")
        assert await lg.aget(("test",), "doc7") is None

    asyncio.run(run())


def test_without_the_extra_the_import_names_it(monkeypatch: pytest.MonkeyPatch) -> None:
    import importlib
    import sys

    monkeypatch.setitem(sys.modules, "langgraph.store.base", None)  # as if not installed
    monkeypatch.delitem(sys.modules, "memoir.integrations.langgraph")
    with pytest.raises(ImportError) as caught:
        importlib.import_module("memoir.integrations.langgraph")
    assert str(caught.value) == (
        "the LangGraph adapter needs the langgraph extra: pip install 'memoir-engine[langgraph]'"
    )


def test_import_memoir_stays_light() -> None:
    import subprocess
    import sys

    code = (
        "import sys, memoir; "
        "print(sorted(m for m in sys.modules if m.startswith(('langgraph', 'langchain'))))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"
