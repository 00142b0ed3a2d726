"""A search's inputs as one checked value: what is asked (the query and what the vector
side embeds of it), within which filters, in which mode, how many hits, from how deep a
pool. Built once where a search enters (:meth:`SearchRequest.of`); the ranking passes
read it and never check an argument again."""

from __future__ import annotations

from dataclasses import dataclass

from memoir.errors import ConfigError, install_hint
from memoir.search.embedder import Embedder
from memoir.search.hits import MODES, SearchMode
from memoir.store.search_text import Term, meaning_text, parse_query
from memoir.store.values import SearchFilters, without_surrogates

__all__ = ["MAX_LIMIT", "SearchRequest", "resolve_mode"]

MAX_LIMIT = 1000


def resolve_mode(mode: str | None, embedder: Embedder | None) -> SearchMode:
    """``None`` → hybrid when an embedder is available, else text."""
    if mode is None:
        return "hybrid" if embedder is not None else "text"
    if mode not in MODES:
        raise ConfigError(f"search mode must be one of {', '.join(MODES)}, not {mode!r}")
    if mode != "text" and embedder is None:
        raise ConfigError(
            f"--mode {mode} needs the embeddings extra: {install_hint('embeddings')} "
            "(or MEMOIR_EMBEDDER=hash for the test embedder)"
        )
    return mode


@dataclass(frozen=True, slots=True)
class SearchRequest:
    """``query`` as typed (lone surrogates replaced: the tokenizer of meaning search
    refuses them); ``meaning``, what meaning search embeds of it (no excluded terms or
    operators); ``excluded``, the terms no hit may hold, in any mode; ``mode`` resolved;
    ``limit`` at most :data:`MAX_LIMIT`; ``pool`` the candidates each ranking contributes
    (None: the engine's default, deepened when the limit needs more)."""

    query: str
    meaning: str
    excluded: tuple[Term, ...]
    filters: SearchFilters
    mode: SearchMode
    limit: int
    pool: int | None = None
    memory_keys: bool = True  # exchanges also found through the memory items they support

    @classmethod
    def of(
        cls,
        query: str,
        *,
        filters: SearchFilters | None = None,
        mode: str | None = None,
        limit: int = 10,
        pool: int | None = None,
        embedder: Embedder | None = None,
        memory_keys: bool = True,
    ) -> SearchRequest:
        """The request for these arguments, each checked (``ConfigError`` naming the one
        that cannot be searched for); ``embedder`` is whether meaning search is available
        (a mode of None means hybrid then)."""
        filters = SearchFilters() if filters is None else filters
        if not isinstance(filters, SearchFilters):
            raise ConfigError(f"filters must be a SearchFilters, not {type(filters).__name__}")
        chosen = resolve_mode(mode, embedder)
        if isinstance(limit, bool) or not isinstance(limit, int):
            raise ConfigError(f"limit must be a whole number, not {limit!r}")
        if limit < 0:
            raise ConfigError(f"limit must be 0 or more, not {limit}")
        if not isinstance(query, str):
            raise ConfigError(f"the query must be a string, not {type(query).__name__}")
        if pool is not None and (isinstance(pool, bool) or not isinstance(pool, int) or pool < 1):
            raise ConfigError(f"pool must be a whole number of 1 or more, not {pool!r}")
        query = without_surrogates(query)
        return cls(
            query=query,
            meaning=meaning_text(query),
            excluded=parse_query(query).excluded,
            filters=filters,
            mode=chosen,
            limit=min(limit, MAX_LIMIT),
            pool=pool,
            memory_keys=bool(memory_keys),
        )
