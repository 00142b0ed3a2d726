"""Memories as search keys: an exchange that is evidence for a memory item is also found
through the item — its content and keys by full text, its vector by meaning — as a third
ranked list fused with the exchange lists (reciprocal rank fusion, as the two others).

A memory item is one durable sentence of the user's with its topic keys, a sharper target
for a question than the whole exchange it was said in (LoCoMo recall@10 with and without
this list: docs/benchmarks.md). Only live items count, only the caller's (``user``), and
every exchange reached this way passes the same filters and exclusions as any other.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from memoir.fusion import rrf
from memoir.model import Exchange, Session
from memoir.search.embedder_port import Embedder
from memoir.search.reads import Lookup, SearchReads
from memoir.search.request import SearchRequest
from memoir.store.parts.memory_items import ItemFilter
from memoir.store.search_text import STOPWORDS, any_content_word, words_of

if TYPE_CHECKING:
    import numpy as np

__all__ = ["ITEM_POOL", "MIN_SHARED_WORDS", "VECTOR_FLOOR", "VECTOR_POOL", "memory_ranking"]

ITEM_POOL = 50  # items each item list contributes
VECTOR_POOL = 5_000  # the newest live items a query's vector is compared with (as recall)
# The list competes with the exchanges' own lists, so it holds only items that answer: by
# text, an item sharing at least two of the query's content words (or its only one); by
# meaning, one at least this similar (MiniLM: unrelated 0.0–0.25, on topic 0.5 and up).
MIN_SHARED_WORDS = 2
VECTOR_FLOOR = 0.5


def memory_ranking(
    store: SearchReads,
    request: SearchRequest,
    lookup: Lookup,
    passes: Callable[[Exchange, Session | None], bool],
    excluded: Callable[[Exchange], bool],
    *,
    embedder: Embedder | None = None,
    query_vector: np.ndarray | None = None,
) -> list[str]:
    """Exchange ids in the order the items they are evidence for answer the query."""
    items = store.memory_items
    if not items.any_live():
        return []
    where = ItemFilter(owner=request.filters.user)
    wanted = {w for w in words_of(request.query) if w not in STOPWORDS}
    need = min(MIN_SHARED_WORDS, len(wanted))
    matched = items.rank_text(any_content_word(request.query), where, ITEM_POOL)
    rows = items.by_ids(matched)
    rankings = [
        [
            i
            for i in matched
            if i in rows
            and len(wanted & set(words_of(" ".join([rows[i].content, *rows[i].keys])))) >= need
        ]
    ]
    if embedder is not None:
        ids = items.ids(where, VECTOR_POOL)
        vectors = items.vectors(embedder.name, ids)
        have = [i for i in ids if i in vectors and vectors[i].shape[0] == embedder.dim]
        if have:
            import numpy as np

            if query_vector is None:
                (query_vector,) = embedder.embed_query([request.meaning])
            matrix = np.stack([vectors[i] for i in have])
            scores = matrix @ np.asarray(query_vector, dtype=np.float32).reshape(-1)
            order = np.lexsort((np.arange(len(have)), -scores))[:ITEM_POOL]
            rankings.append([have[int(n)] for n in order if scores[n] >= VECTOR_FLOOR])
    fused = [i for i, _ in rrf(rankings)]
    evidence = items.evidence_exchanges(fused)
    ordered = list(dict.fromkeys(x for i in fused for x in evidence.get(i, ())))
    lookup.load(ordered)
    return [
        x
        for x in ordered
        if (ex := lookup.exchanges.get(x)) is not None
        and passes(ex, lookup.sessions.get(ex.session_id))
        and not excluded(ex)
    ]
