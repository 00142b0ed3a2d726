"""Keyed memories (memoir.memory.keyed) on each backend: ranking by meaning when an embedder
is given (vectors made once, kept, remade after a put), the owner boundary, and the pure
decisions — filters and namespace conditions — as tables."""

from __future__ import annotations

import re
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from memoir import Memoir, Settings, service
from memoir.errors import UsageError
from memoir.memory.item_store import memory_parts
from memoir.memory.keyed import (
    KeyedMemories,
    decode_namespace,
    encode_namespace,
    matches,
    namespace_matches,
)
from memoir.store import Store

CONCEPTS = {
    "cat": 0,
    "kitten": 0,
    "feline": 0,
    "coffee": 1,
    "espresso": 1,
    "latte": 1,
}


class ConceptEmbedder:
    """Words of one concept point the same way; anything else points a third way."""

    name = "concepts-3"

    def __init__(self) -> None:
        self.embedded: list[str] = []

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        self.embedded += texts
        return self.embed_query(texts)

    def embed_query(self, texts: Sequence[str]) -> np.ndarray:
        out = np.zeros((len(texts), 3), dtype=np.float32)
        for row, text in enumerate(texts):
            for word in re.findall(r"\w+", text.lower()):
                out[row, CONCEPTS.get(word, 2)] += 1.0
        norms = np.linalg.norm(out, axis=1, keepdims=True)
        return out / np.where(norms == 0, 1.0, norms)


class Clock:
    def __init__(self) -> None:
        self.now = datetime(2026, 1, 1, tzinfo=UTC)

    def __call__(self) -> datetime:
        self.now += timedelta(seconds=1)
        return self.now


def test_a_query_finds_by_meaning_with_an_embedder(store: Store) -> None:
    embedder = ConceptEmbedder()
    keyed = KeyedMemories(
        memory_parts(store).keyed, "local", clock=Clock(), embedder=lambda: embedder
    )
    keyed.put(("m",), "pet", {"t": "my kitten Miso"}, text="kitten kitten")
    keyed.put(("m",), "drink", {"t": "espresso"}, text="espresso")
    keyed.put(("m",), "hidden", {"t": "feline"}, text="")  # not searchable by query
    found = keyed.search(("m",), query="cat")
    assert [(i.key, i.score is not None and i.score > 0) for i in found] == [
        ("pet", True),  # no word in common: found by meaning alone
        ("hidden", False),
        ("drink", False),
    ]
    assert sorted(embedder.embedded) == ["espresso", "kitten kitten"]
    keyed.search(("m",), query="latte")
    assert len(embedder.embedded) == 2  # vectors kept: nothing embedded again
    keyed.put(("m",), "drink", {"t": "cats"}, text="feline")
    assert keyed.search(("m",), query="cat")[0].key == "drink"  # the new text's vector
    assert embedder.embedded[2:] == ["feline"]


def test_text_and_meaning_fuse(store: Store) -> None:
    embedder = ConceptEmbedder()
    keyed = KeyedMemories(
        memory_parts(store).keyed, "local", clock=Clock(), embedder=lambda: embedder
    )
    keyed.put(("m",), "both", {}, text="cat")
    keyed.put(("m",), "meaning", {}, text="kitten")
    keyed.put(("m",), "word", {}, text="cat espresso espresso espresso")
    found = keyed.search(("m",), query="cat")
    # text: both, word; meaning (word is too far, under the floor): meaning, both
    assert [i.key for i in found] == ["both", "meaning", "word"]
    assert found[0].score > found[1].score > found[2].score > 0  # type: ignore[operator]


def test_without_an_embedder_a_query_is_text_only(store: Store) -> None:
    keyed = KeyedMemories(memory_parts(store).keyed, "local", clock=Clock())
    keyed.put(("m",), "pet", {"t": "my kitten"}, text="kitten")
    assert [i.score for i in keyed.search(("m",), query="cat")] == [0.0]


def test_owners_do_not_see_each_other(store: Store) -> None:
    a = KeyedMemories(memory_parts(store).keyed, "alice", clock=Clock())
    b = KeyedMemories(memory_parts(store).keyed, "bob", clock=Clock())
    a.put(("n",), "k", {"who": "alice"}, text="alice")
    b.put(("n",), "k", {"who": "bob"}, text="bob")
    assert a.get(("n",), "k").value == {"who": "alice"}  # type: ignore[union-attr]
    assert [i.value for i in b.search((), query="alice")] == [{"who": "bob"}]
    assert b.delete(("n",), "k") is True and b.delete(("n",), "k") is False
    assert a.get(("n",), "k") is not None
    assert memory_parts(store).keyed.count() == 1


def test_the_home_s_embedder_ranks_and_its_vectors_are_kept(home: Path, store: Store) -> None:
    env = {"MEMOIR_HOME": str(home), "MEMOIR_EMBEDDER": "hash"}
    memoir = Memoir(Settings.from_env(env, sources=()), store)
    keyed = service.keyed_memories(memoir, "carol")
    keyed.put(("n",), "k", {"t": "green tea"}, text="green tea")
    assert keyed.search(("n",), query="green tea")[0].score > 0  # type: ignore[operator]
    models = store._db.rows("SELECT vector_model FROM keyed_items")  # type: ignore[attr-defined]
    assert [r[0] for r in models] == ["hash-256"]
    memoir.close()


@pytest.mark.parametrize(
    ("value", "where", "expected"),
    [
        ({"a": 1}, None, True),
        ({"a": 1}, {}, True),
        ({"a": 1}, {"a": 1}, True),
        ({"a": 1}, {"a": 1.0}, True),
        ({"a": 1}, {"a": True}, False),
        ({"a": True}, {"a": 1}, False),
        ({"a": 1}, {"a": 2}, False),
        ({"a": 1}, {"b": 1}, False),
        ({"a": None}, {"a": None}, True),
        ({}, {"a": None}, False),  # missing is not null
        ({"a": {"b": 1, "c": 2}}, {"a": {"b": 1}}, True),  # containment
        ({"a": {"b": 1}}, {"a": {"b": 1, "c": 2}}, False),
        ({"a": {"b": {"c": "x"}}}, {"a.b.c": "x"}, True),
        ({"a.b": "flat"}, {"a.b": "flat"}, True),  # the key itself first
        ({"a": [1, 2]}, {"a": [1, 2]}, True),
        ({"a": [1, 2]}, {"a": [2, 1]}, False),
        ({"a": [1, 2]}, {"a": [1]}, False),
        ({"a": 5}, {"a": {"$gt": 4, "$lt": 6}}, True),
        ({"a": 5}, {"a": {"$gte": 5, "$lte": 5}}, True),
        ({"a": 5}, {"a": {"$gt": 5}}, False),
        ({"a": 5}, {"a": {"$ne": 5}}, False),
        ({"a": 5}, {"a": {"$eq": 5}}, True),
        ({"a": "b"}, {"a": {"$gt": "a"}}, True),  # strings order as text
        ({"a": "5"}, {"a": {"$gt": 4}}, False),  # no order between kinds
        ({"a": None}, {"a": {"$lt": 1}}, False),
        ({}, {"a": {"$ne": 1}}, True),  # missing is not 1
        ({"a": 1, "b": 2}, {"a": 1, "b": 3}, False),  # every field must hold
    ],
)
def test_matches(value: dict[str, Any], where: dict[str, Any] | None, expected: bool) -> None:
    assert matches(value, where) is expected


def test_an_unknown_operator_is_a_usage_error() -> None:
    with pytest.raises(UsageError, match=r"\$in"):
        matches({"a": 1}, {"a": {"$in": [1]}})


@pytest.mark.parametrize(
    ("namespace", "kind", "path", "expected"),
    [
        (("a", "b", "c"), "prefix", ("a",), True),
        (("a", "b", "c"), "prefix", ("a", "b", "c"), True),
        (("a", "b", "c"), "prefix", ("a", "*"), True),
        (("a", "b", "c"), "prefix", ("*", "c"), False),
        (("a", "b"), "prefix", ("a", "b", "c"), False),
        (("a", "b", "c"), "suffix", ("c",), True),
        (("a", "b", "c"), "suffix", ("*", "c"), True),
        (("a", "b", "c"), "suffix", ("b",), False),
        (("a",), "suffix", ("*", "a"), False),
        (("a",), "prefix", (), True),
    ],
)
def test_namespace_matches(
    namespace: tuple[str, ...], kind: str, path: tuple[str, ...], expected: bool
) -> None:
    assert namespace_matches(namespace, kind, path) is expected


def test_a_namespace_condition_is_prefix_or_suffix() -> None:
    with pytest.raises(UsageError):
        namespace_matches(("a",), "infix", ("a",))


@pytest.mark.parametrize(
    "bad",
    [("a.b",), ("",), ("a", ""), ("a\x00",), (1,)],  # type: ignore[list-item]
)
def test_a_namespace_label_is_checked(bad: tuple[Any, ...]) -> None:
    with pytest.raises(UsageError):
        encode_namespace(bad)


def test_namespaces_encode_and_decode() -> None:
    assert encode_namespace(("users", "ålice", "日本")) == "users.ålice.日本"
    assert decode_namespace("users.ålice.日本") == ("users", "ålice", "日本")
    assert encode_namespace((), allow_empty=True) == "" and decode_namespace("") == ()
    with pytest.raises(UsageError):
        encode_namespace(())


def test_a_read_only_store_ranks_by_meaning_without_keeping_vectors(store: Store) -> None:
    embedder = ConceptEmbedder()
    writer = KeyedMemories(memory_parts(store).keyed, "local", clock=Clock())
    writer.put(("m",), "pet", {"t": "kitten"}, text="kitten")
    reader = KeyedMemories(
        memory_parts(store).keyed, "local", embedder=lambda: embedder, keep_vectors=False
    )
    assert reader.search(("m",), query="cat")[0].score > 0  # type: ignore[operator]
    reader.search(("m",), query="cat")
    assert embedder.embedded == ["kitten", "kitten"]  # made each time, never stored
    assert store._db.rows("SELECT vector FROM keyed_items") == [(None,)]  # type: ignore[attr-defined]
