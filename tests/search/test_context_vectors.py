"""The embedded text of an exchange is led by the tail of the previous exchange."""

from __future__ import annotations

import numpy as np
import pytest
from search_corpus import fill

from memoir.search import HashEmbedder, embed_backlog
from memoir.search.backfill import PREVIOUS_CHARS, context_text
from memoir.search.vectors import invalidate
from memoir.store import Store


@pytest.mark.parametrize(
    ("text", "previous", "expected"),
    [
        ("this turn", None, "this turn"),
        ("this turn", "", "this turn"),
        ("this turn", "the turn before", "the turn before\n\nthis turn"),
        ("t", "x" * 10 + "y" * PREVIOUS_CHARS, "y" * PREVIOUS_CHARS + "\n\nt"),  # its end
    ],
)
def test_context_text(text: str, previous: str | None, expected: str) -> None:
    assert context_text(text, previous) == expected


@pytest.fixture
def filled(store: Store) -> Store:
    fill(store)
    invalidate()
    return store


def _stored(store: Store, model: str) -> dict[str, np.ndarray]:
    ids, blob, dim = store.load_embeddings(model)
    return dict(zip(ids, np.frombuffer(blob, np.float32).reshape(len(ids), dim), strict=True))


@pytest.mark.parametrize("batch", [1, 128])
def test_embedded_text_carries_the_previous_exchange(filled: Store, batch: int) -> None:
    embedder = HashEmbedder(dim=64)
    assert embed_backlog(filled, embedder, batch=batch).embedded == 6
    stored = _stored(filled, embedder.name)
    first = "How do I fix the sqlite database lock?\n\nUse WAL mode and a busy timeout."
    second = "Now the tests pass\n\nGreat, the lock is gone."
    expected = embedder.embed([first, context_text(second, first)])
    assert np.allclose(stored["s-web:1"], expected[0], atol=1e-6)  # a session's first: alone
    assert np.allclose(stored["s-web:4"], expected[1], atol=1e-6)
    assert not np.allclose(stored["s-web:4"], embedder.embed([second])[0], atol=1e-3)
