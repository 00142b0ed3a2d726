"""A search run: lists fused, the head re-ranked, hits built; and the search a home configures.

Ranking: text ranks from the store's full-text index, vector ranks from the embeddings,
fused by reciprocal rank (hybrid), the head re-ranked token by token, exchanges from dates
the query names favoured, then hits with snippets and the session's summary.

request.query → store.index (sanitised, bm25) ───────┐
request.meaning → embedder → cosine over the matrix ─┴→ rrf → late-interaction re-rank
  (hybrid) → query dates → exchanges + sessions → SearchHit

A search's inputs are one :class:`~memoir.search.request.SearchRequest`, built and checked
where it enters (:func:`search`); what it reads of the store is named by
:class:`~memoir.search.request.SearchReads`, the memory items by ``items`` (the memory
engine's, :class:`~memoir.search.request.ItemReads`), and the summary beside each hit
comes from the caller's ``summaries`` (session id → body). :func:`search_configured` is
what ``Memoir.search`` calls: the embedder ``MEMOIR_EMBEDDER`` names, a session prefix
resolved.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

from memoir.errors import ConfigError, MemoirError, install_hint
from memoir.fusion import rrf, stand_in_ranks
from memoir.search.embedders import Embedder, TokenEmbedder, load_embedder
from memoir.search.hits import MARK_START, SearchHit, SearchMode, clean_summary, make_snippet
from memoir.search.ranking import (
    RERANK_DEPTH,
    dated,
    memory_ranking,
    neighbour_smoothed,
    rerank,
    text_candidates,
)
from memoir.search.request import (
    ItemReads,
    Lookup,
    SearchReads,
    SearchRequest,
    exchange_text,
    exchange_time,
    mentions_any,
    resolve_mode,
)
from memoir.search.vectors import VectorMatrix, matrix_for, nearest, time_mask
from memoir.store.parts import EmbeddingsPart
from memoir.store.search_sql import filter_predicate
from memoir.store.search_text import words_of
from memoir.store.values import SearchFilters, TextHit

if TYPE_CHECKING:
    import numpy as np

__all__ = [
    "DEFAULT_POOL",
    "SearchMode",
    "SummaryReader",
    "resolve_mode",
    "run_search",
    "search",
    "search_configured",
]


log = logging.getLogger(__name__)


SummaryReader = Callable[[str], "str | None"]


# Fusion constant: k=60 comes from fusing 1000-deep TREC runs; for a 10-hit page it
# flattens ranks so far that exchanges both lists rank middling beat each list's best.
# A small k lets the head of each list reach the page (words and meaning find different
# turns: on LoCoMo their top-5s together hold more evidence than either top-10).
HYBRID_K = 10


HYBRID_WEIGHTS = (1.0, 1.0)


MEMORY_WEIGHT = 1.0  # the memory-keys list counts as much as each of the two others


# hybrid's vector query is moved towards the best text hits (Rocchio feedback): the words
# pin down the topic, the vectors then find turns about it that use other words
FEEDBACK_DOCS = 3


FEEDBACK_WEIGHT = 1.0


MAX_FILTER_SCAN = 20_000


# candidates each ranking contributes, whatever the limit (a page of up to 25 hits is
# ranked from 3 × its size; the LoCoMo bench measures this pool)
DEFAULT_POOL = 75


@dataclass
class _Search:
    """One search under way: its request, what it reads, and what it has fetched."""

    request: SearchRequest
    store: SearchReads
    embedder: Embedder | None
    items: ItemReads | None

    def __post_init__(self) -> None:
        self.lookup = Lookup(self.store.exchanges, self.store.sessions)
        self.passes = filter_predicate(self.request.filters)


def _usable_vectors(run: _Search, embedder: Embedder | None) -> VectorMatrix | None:
    """The embedder's vectors in the store, None when there are none of its width. A model
    that never had a vector written (generation 0, none stored) is answered from the store
    alone: no matrix is read, and no vector library imported."""
    if embedder is None:
        return None
    embeddings = run.store.embeddings
    if embeddings.generation(embedder.name) == 0 and embeddings.count(embedder.name) == 0:
        return None
    vectors = matrix_for(run.store, embedder.name)
    return None if vectors.size == 0 or vectors.dim != embedder.dim else vectors


def _vector_ranking(
    run: _Search,
    embedder: Embedder,
    vectors: VectorMatrix | None,
    pool: int,
    feedback: list[str] | None = None,
    query_vector: np.ndarray | None = None,
) -> list[tuple[str, float]]:
    import numpy as np

    if vectors is None:
        return []
    if query_vector is None:
        (query_vector,) = embedder.embed_query([run.request.meaning])
    if feedback:
        rows = vectors.rows_of(feedback[:FEEDBACK_DOCS])
        if rows:
            centroid = vectors.matrix[rows].mean(axis=0)
            query_vector = query_vector + FEEDBACK_WEIGHT * centroid
            query_vector = query_vector / max(float(np.linalg.norm(query_vector)), 1e-9)
    kept = _filtered_nearest(run, embedder.name, vectors, query_vector, pool)
    run.lookup.load([i for i, _ in kept])
    return neighbour_smoothed(dict(kept), run.lookup.exchanges)


def _filtered_nearest(
    run: _Search, model: str, vectors: VectorMatrix, query_vector: np.ndarray, pool: int
) -> list[tuple[str, float]]:
    """The ``pool`` nearest exchanges that pass the filters and hold none of the query's
    excluded terms. Owner, project, harness, session and date filters are a mask over the
    matrix's rows (the store names the sessions that pass and says when each embedded
    exchange happened), so only those rows are scanned, however few; the rest (role,
    subagents) and the exclusions are checked on the candidates, widening the list
    eightfold until enough pass (at most :data:`MAX_FILTER_SCAN`: the text side still
    sees every match)."""
    import numpy as np

    filters, lookup = run.request.filters, run.lookup
    mask: np.ndarray | None = None
    named = (filters.project, filters.harness, filters.session_id, filters.user)
    if any(value is not None for value in named):  # the owner too: before any scoring
        mask = vectors.session_mask(run.store.sessions.ids(filters))
    if filters.after is not None or filters.before is not None:
        dated = time_mask(run.store, model, vectors, filters.after, filters.before)
        mask = dated if mask is None else mask & dated
    available = vectors.size if mask is None else int(np.count_nonzero(mask))
    k = pool
    while True:
        candidates = [(vectors.ids[i], s) for i, s in nearest(vectors, query_vector, k, mask)]
        lookup.load([i for i, _ in candidates])
        kept = [
            (i, s)
            for i, s in candidates
            if (ex := lookup.exchanges.get(i)) is not None
            and run.passes(ex, lookup.sessions.get(ex.session_id))
            and not mentions_any(ex, run.request.excluded)
        ]
        if len(kept) >= pool or k >= min(available, MAX_FILTER_SCAN):
            return kept[:pool]
        k *= 8


@dataclass
class _Ranking:
    """One pass of ranking: the fused order and what the hits report of each list."""

    ranked: list[tuple[str, float]]
    text_hits: dict[str, TextHit]
    text_rank: dict[str, int]  # exchange id → its 1-based place in the text list
    vector_rank: dict[str, int]  # … and in the vector list


def search(
    store: SearchReads,
    query: str,
    *,
    filters: SearchFilters | None = None,
    mode: str | None = None,
    limit: int = 10,
    embedder: Embedder | None = None,
    summaries: SummaryReader | None = None,
    pool: int | None = None,
    memory_keys: bool = True,
    items: ItemReads | None = None,
) -> list[SearchHit]:
    """Rank exchanges for ``query``; best first, at most ``limit`` hits.

    Any query string is safe (the store sanitises it). One with no word to look for —
    empty, punctuation or excluded terms only — returns no hits in every mode (meaning
    search would otherwise rank the exchanges nearest to nothing); stop words alone find
    nothing by text but are still a question to meaning search ("When?"). Excluded terms
    (``-word``, ``NOT word``) hold in every mode: meaning search embeds the query without
    them and drops candidates that hold one. ``summaries`` maps a session id to its
    summary body.

    ``pool`` is how many candidates each ranking contributes to the fusion. By default it
    is :data:`DEFAULT_POOL` whatever the limit, so a smaller ``limit`` shows the first hits
    of a larger one, in the same order (``--limit 3`` is the top 3 of ``--limit 10``); a
    limit beyond what that pool ranks is filled from a deeper pass, after those hits.

    ``memory_keys``: text and hybrid search also rank exchanges through the memory items
    they are evidence for (:mod:`memoir.search.ranking`), read from ``items``.
    """
    request = SearchRequest.of(
        query,
        filters=filters,
        mode=mode,
        limit=limit,
        pool=pool,
        embedder=embedder,
        memory_keys=memory_keys,
    )
    return run_search(store, request, embedder=embedder, summaries=summaries, items=items)


def run_search(
    store: SearchReads,
    request: SearchRequest,
    *,
    embedder: Embedder | None = None,
    summaries: SummaryReader | None = None,
    items: ItemReads | None = None,
) -> list[SearchHit]:
    """:func:`search` for a request already built (``embedder``: the one the request's
    mode was resolved with)."""
    if request.limit == 0 or not words_of(request.meaning):
        return []
    run = _Search(request, store, embedder, items)
    ranking = _rank(run, request.pool or DEFAULT_POOL)
    if request.pool is None and request.limit > len(ranking.ranked) and _a_list_was_cut(ranking):
        ranking = _extended(ranking, _rank(run, max(DEFAULT_POOL, 3 * request.limit)))
    ranked = ranking.ranked[: request.limit]
    run.lookup.load([i for i, _ in ranked])
    snippets = _page_snippets(run, ranked, ranking)
    return _hits(ranked, run.lookup, ranking, snippets, summaries)


def _page_snippets(
    run: _Search, ranked: list[tuple[str, float]], ranking: _Ranking
) -> dict[str, str]:
    """The snippet of each hit shown, made for those only (a store snippet is a query of
    its own). A text match quotes the index's match; another hit, its prompt and reply
    around the query's words — unless none is there (they may be in its tool output: a
    vector hit the index also matches, past the text list's candidates), when the index
    quotes it if it can mark it. A text match the index marks nothing in (it matched
    through its neighbours' words) falls back to its own text too."""
    request, exchanges = run.request, run.lookup.exchanges
    shown = [i for i, _ in ranked if i in exchanges]
    own = {
        i: make_snippet(exchange_text(exchanges[i]), request.meaning)
        for i in shown
        if i not in ranking.text_hits
    }
    asked = [i for i in shown if i not in own or MARK_START not in own[i]]
    stored = run.store.index.snippets(request.query, request.filters, asked) if asked else {}
    out: dict[str, str] = {}
    for i in shown:
        quoted = stored.get(i, "")
        if quoted and (i not in own or MARK_START in quoted):
            out[i] = quoted
        elif i in own:
            out[i] = own[i]
        else:  # a text match the index marks nothing in: its neighbours' words matched
            out[i] = make_snippet(exchange_text(exchanges[i]), request.meaning)
    return out


def _rank(run: _Search, pool: int) -> _Ranking:
    """Every stage of the ranking with ``pool`` candidates from each list."""
    request, embedder = run.request, run.embedder
    chosen = request.mode
    text_hits: dict[str, TextHit] = {}
    text_ranked: list[tuple[str, float]] = []
    if chosen in ("text", "hybrid"):
        # bm25 order, not smoothed over neighbours: the index's context column already lets
        # an exchange match its neighbours' words (smoothing on top counted them twice)
        text_hits = text_candidates(run.store.index, request.query, request.filters, pool)
        text_ranked = sorted(((i, h.score) for i, h in text_hits.items()), key=lambda kv: -kv[1])
    vector_ranked: list[tuple[str, float]] = []
    query_tokens: np.ndarray | None = None
    query_vector: np.ndarray | None = None
    vectors = _usable_vectors(run, embedder) if chosen in ("vector", "hybrid") else None
    if embedder is not None and vectors is not None:  # no stored vector: the model stays unloaded
        feedback = [i for i, _ in text_ranked] if chosen == "hybrid" else None
        if chosen == "hybrid" and isinstance(embedder, TokenEmbedder):
            query_vector, query_tokens = embedder.query_with_tokens(request.meaning)
        vector_ranked = _vector_ranking(run, embedder, vectors, pool, feedback, query_vector)
    text_rank = [i for i, _ in text_ranked]
    vector_rank = [i for i, _ in vector_ranked]
    memory_rank: list[str] = []
    if request.memory_keys and run.items is not None and chosen in ("text", "hybrid"):
        memory_rank = memory_ranking(
            run.items,
            request,
            run.lookup,
            run.passes,
            lambda ex: mentions_any(ex, request.excluded),
            embedder=embedder if chosen == "hybrid" else None,
            query_vector=query_vector if chosen == "hybrid" else None,
        )
    if chosen == "text":
        ranked = rrf([text_rank, memory_rank], k=HYBRID_K) if memory_rank else text_ranked
    elif chosen == "vector":
        ranked = vector_ranked
    else:
        # a text match with no vector yet (stored a moment ago, not embedded) is a
        # text-only candidate: its text rank stands in for the vector rank it cannot have
        unvectored = set(text_rank) if vectors is None else vectors.without(text_rank)
        lists, weights = [text_rank, vector_rank], list(HYBRID_WEIGHTS)
        stand_ins: list[dict[str, int]] = [{}, stand_in_ranks(text_rank, unvectored)]
        if memory_rank:
            lists.append(memory_rank)
            weights.append(MEMORY_WEIGHT)
            stand_ins.append({})
        ranked = rrf(lists, k=HYBRID_K, weights=weights, stand_ins=stand_ins)
        if query_tokens is not None and embedder is not None and vector_rank:
            ranked = _reranked(
                run.store.embeddings, embedder.name, ranked, query_tokens, unvectored
            )
    return _Ranking(
        dated(request.query, ranked, run.lookup, HYBRID_K),
        text_hits,
        _places(text_rank),
        _places(vector_rank),
    )


def _places(order: list[str]) -> dict[str, int]:
    return {i: n for n, i in enumerate(order, start=1)}


def _a_list_was_cut(ranking: _Ranking) -> bool:
    """Whether a list of the pass stopped at the pool (a deeper pass can find more): one
    shorter than the pool already holds every match there is."""
    return max(len(ranking.text_rank), len(ranking.vector_rank)) >= DEFAULT_POOL


def _extended(head: _Ranking, deep: _Ranking) -> _Ranking:
    """``head``'s order, then what only the deeper pass ranked (its scores capped at the
    head's last, so scores still descend)."""
    seen = {i for i, _ in head.ranked}
    floor = head.ranked[-1][1] if head.ranked else float("inf")
    tail = [(i, min(s, floor)) for i, s in deep.ranked if i not in seen]
    # a hit of the head reports what the head's pass knew of it (its list ranks, whether
    # it is a text match), as a smaller limit shows it; a hit of the tail, the deep pass's
    return _Ranking(
        head.ranked + tail,
        {**{i: h for i, h in deep.text_hits.items() if i not in seen}, **head.text_hits},
        _positions(head.text_rank, deep.text_rank, seen),
        _positions(head.vector_rank, deep.vector_rank, seen),
    )


def _positions(head: dict[str, int], deep: dict[str, int], seen: set[str]) -> dict[str, int]:
    """Each list rank as the hit's own pass gave it: the head's for the head's hits, the
    deep pass's for the others."""
    return {**{i: n for i, n in deep.items() if i not in seen}, **head}


def _reranked(
    embeddings: EmbeddingsPart,
    model: str,
    ranked: list[tuple[str, float]],
    query_tokens: np.ndarray,
    unvectored: set[str],
) -> list[tuple[str, float]]:
    """The fused list with its head re-ranked token by token (:mod:`memoir.search.ranking`;
    ``unvectored`` exchanges, with no vector yet, keep their place there). The fused
    scores are handed out again in the new order, so scores still descend."""
    head = [i for i, _ in ranked[:RERANK_DEPTH]]
    stored = embeddings.token_states(model, head)
    if not stored:
        return ranked
    order = rerank([i for i, _ in ranked], query_tokens, stored, stand_in=unvectored)
    return list(zip(order, sorted((s for _, s in ranked), reverse=True), strict=True))


def _hits(
    ranked: list[tuple[str, float]],
    lookup: Lookup,
    ranking: _Ranking,
    snippets: dict[str, str],
    summaries: SummaryReader | None,
) -> list[SearchHit]:
    text_pos, vector_pos = ranking.text_rank, ranking.vector_rank
    bodies: dict[str, str | None] = {}
    out: list[SearchHit] = []
    for exchange_id, score in ranked:
        exchange = lookup.exchanges.get(exchange_id)
        if exchange is None:  # deleted between ranking and lookup
            continue
        session = lookup.sessions.get(exchange.session_id)
        if summaries is not None and exchange.session_id not in bodies:
            bodies[exchange.session_id] = _summary(summaries, exchange.session_id)
        snippet = snippets.get(exchange_id, "")
        out.append(
            SearchHit(
                session_id=exchange.session_id,
                exchange_id=exchange_id,
                timestamp=exchange_time(exchange),
                project=session.project if session is not None else "",
                score=float(score),
                snippet=snippet,
                summary=bodies.get(exchange.session_id),
                text_rank=text_pos.get(exchange_id),
                vector_rank=vector_pos.get(exchange_id),
            )
        )
    return out


def _summary(summaries: SummaryReader, session_id: str) -> str | None:
    """A summary that cannot be read is shown as none; the hit itself still counts."""
    try:
        return clean_summary(summaries(session_id))
    except (MemoirError, OSError, ValueError) as exc:
        log.debug("summary of %s unreadable: %s", session_id, exc)
        return None


def _no_meaning_search(mode: str, setting: str, stored: list[str]) -> str:
    """Why ``--mode vector|hybrid`` cannot run, and what to do, in one line: semantic
    search switched off, or its extra missing — while this home may well hold vectors
    (``memoir stats`` counts them) that an install elsewhere computed."""
    if setting == "none":
        return f"--mode {mode} searches by meaning, which MEMOIR_EMBEDDER=none switches off"
    held = (
        f"this home holds vectors ({', '.join(stored)}), but this Python cannot embed the "
        "query to compare with them"
        if stored
        else "no embedder is installed"
    )
    return (
        f"--mode {mode} searches by meaning: {held}; install the embeddings extra "
        f"({install_hint('embeddings')}) or search with --mode text"
    )


_UNSET: Any = object()


def search_configured(
    store: SearchReads,
    query: str,
    *,
    embedder_setting: str,
    summaries: SummaryReader | None,
    filters: SearchFilters | None = None,
    mode: str | None = None,
    limit: int = 10,
    embedder: Embedder | None = _UNSET,
    items: ItemReads | None = None,
) -> list[SearchHit]:
    """:func:`~memoir.search.engine.search` with the embedder ``embedder_setting`` (the
    home's ``MEMOIR_EMBEDDER``) names unless one is given (None: none), and a session
    filter given as a unique prefix resolved to its session."""
    if embedder is _UNSET:
        embedder = load_embedder(embedder_setting)
        if embedder is None and mode in ("vector", "hybrid"):
            raise ConfigError(_no_meaning_search(mode, embedder_setting, store.embeddings.models()))
    if isinstance(filters, SearchFilters) and filters.session_id is not None:
        sid = store.sessions.resolve(filters.session_id, user=filters.user)
        filters = replace(filters, session_id=sid)
    return search(store, query, filters=filters, mode=mode, limit=limit, embedder=embedder,
                  summaries=summaries, items=items)  # fmt: skip
