"""The embedded text of an exchange is led by the tail of the previous exchange."""

from __future__ import annotations

import numpy as np
import pytest
from search_corpus import fill

from memoir.search import PREVIOUS_CHARS, HashEmbedder, embed_backlog, embedded_context
from memoir.search.vectors import invalidate
from memoir.store import Store
from memoir.store.index_doc import embedding_text


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
    assert embedded_context(text, previous) == expected


@pytest.fixture
def filled(store: Store) -> Store:
    fill(store)
    invalidate()
    return store


def _stored(store: Store, model: str) -> dict[str, np.ndarray]:
    ids, blob, dim = store.embeddings.load(model)
    return dict(zip(ids, np.frombuffer(blob, np.float32).reshape(len(ids), dim), strict=True))


def _first_text(store: Store) -> str:
    """What s-web:1 is embedded as: the prompt, what its tool did, the reply."""
    first = embedding_text(store.exchanges.many(["s-web:1"])["s-web:1"])
    assert first == (
        "How do I fix the sqlite database lock?\n\nBash sqlite3 db.sqlite\n\n"
        "Use WAL mode and a busy timeout."
    )
    return first


@pytest.mark.parametrize("batch", [1, 128])
def test_embedded_text_carries_the_previous_exchange(filled: Store, batch: int) -> None:
    embedder = HashEmbedder(dim=64)
    assert embed_backlog(filled, embedder, batch=batch).embedded == 6
    stored = _stored(filled, embedder.name)
    first = _first_text(filled)
    second = "Now the tests pass\n\nGreat, the lock is gone."
    expected = embedder.embed([first, embedded_context(second, first)])
    assert np.allclose(stored["s-web:1"], expected[0], atol=1e-6)  # a session's first: alone
    assert np.allclose(stored["s-web:4"], expected[1], atol=1e-6)
    assert not np.allclose(stored["s-web:4"], embedder.embed([second])[0], atol=1e-3)


def test_an_exchange_a_sync_changes_while_it_is_embedded_is_embedded_anew(
    filled: Store,
) -> None:
    """embed reads a batch, a sync grows one of its exchanges before the vectors are
    written: the stale vector must not be stored (it would never be redone)."""
    from dataclasses import replace

    from memoir.store.values import IngestBatch

    inner = HashEmbedder(dim=64)
    grown: list[str] = []

    class SyncMeanwhile:
        name, dim = inner.name, inner.dim

        def embed(self, texts: list[str]) -> np.ndarray:
            if not grown:  # the first batch: a sync commits while the model runs
                x = filled.exchanges.many(["s-web:4"])["s-web:4"]
                later = replace(x, assistant_text=x.assistant_text + " Also: quasar nebula.")
                session = filled.sessions.get(x.session_id)
                assert session is not None
                filled.ingest.apply(IngestBatch(session=session, exchanges=(later,)))
                grown.append(x.id)
            return inner.embed(texts)

        def embed_query(self, texts: list[str]) -> np.ndarray:
            return inner.embed_query(texts)

    result = embed_backlog(filled, SyncMeanwhile(), batch=128)  # type: ignore[arg-type]
    assert grown == ["s-web:4"]
    assert result.embedded == 6  # five from the first batch, the grown one from a second
    stored = _stored(filled, inner.name)
    first = _first_text(filled)
    now = "Now the tests pass\n\nGreat, the lock is gone. Also: quasar nebula."
    assert np.allclose(stored["s-web:4"], inner.embed([embedded_context(now, first)])[0], atol=1e-6)


def test_the_backlog_count_is_what_a_catch_up_will_embed(filled: Store) -> None:
    embedder = HashEmbedder(dim=64)
    assert filled.embeddings.backlog_count(embedder.name) == 6
    assert embed_backlog(filled, embedder, batch=4, max_items=4).embedded == 4
    assert filled.embeddings.backlog_count(embedder.name) == 2
    assert filled.embeddings.backlog_count(embedder.name, with_tokens=True) == 2  # tokens too
    embed_backlog(filled, embedder)
    assert filled.embeddings.backlog_count(embedder.name) == 0
    assert filled.embeddings.backlog_count("another-model") == 6
