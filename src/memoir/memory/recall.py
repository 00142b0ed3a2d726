"""Recall: the memory items that answer a query, and the context block an agent prepends
to its next session's system prompt.

:func:`recall` ranks items two ways and fuses the ranks (:func:`memoir.fusion.rrf`, as
search does): full text over content and keys (the store's FTS5 / tsvector index, any
query word sufficing, stop words dropped), and — when an embedder is given — cosine
similarity of the query to the items' vectors (at least :data:`VECTOR_FLOOR`), over the
newest :data:`VECTOR_POOL` items within the filters plus every text match (items lacking a
vector get one, at most :data:`EMBED_PER_CALL` per call). Filters: owner, project (its
project-scoped items with the global ones), scope, kinds, and ``as_of`` (the items valid
at that time, superseded since or not) or ``history`` (superseded items too).

:func:`context_block` renders the most relevant items within a token budget, counted
exactly on the rendered text with the model's tokenizer; the order is stable (the same
items give the same block).

How a memory item is shown (CLI, HTTP, MCP).

Pure. An item's JSON names each quote's exchange (``SESSION:N``, the id search hits and
``memoir show`` use), so a reader can go from a memory to the words it came from. Its
content and quotes are shown masked (:func:`memoir.secrets.mask`): the validator keeps
secrets out of memory, and this is the backstop for what is shown (an export, which is
data, not presentation, is never masked).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

from memoir.errors import MemoirError, UsageError
from memoir.fusion import rrf
from memoir.llm.port import TokenCounter
from memoir.memory.item_rows import MemoryItemRow, standing_key
from memoir.memory.item_store import MemoryItemsPart
from memoir.secrets import mask
from memoir.store.search_text import MAX_QUERY_CHARS, any_content_word
from memoir.store.values import ItemFilter

if TYPE_CHECKING:
    import numpy as np
from collections.abc import Callable
from datetime import datetime

from memoir.memory.item_rows import ReceiptRow
from memoir.model import Memory, MemoryReceipt

__all__ = [
    "CONTEXT_HEADER",
    "EMBED_PER_CALL",
    "KIND_ORDER",
    "MAX_CONTEXT_POOL",
    "MAX_RECALL",
    "VECTOR_FLOOR",
    "VECTOR_POOL",
    "ContextBlock",
    "ItemEmbedder",
    "Recalled",
    "context_block",
    "embedded_text",
    "exchange_finder",
    "item_json",
    "quoted_exchanges",
    "recall",
    "receipt_json",
]


VECTOR_POOL = 5_000
# a vector-only candidate must be at least this similar (MiniLM: unrelated sentences score
# 0.0–0.25, a related one 0.4 and up): recall answers with nothing rather than with noise
VECTOR_FLOOR = 0.35
EMBED_PER_CALL = 256
TEXT_POOL = 200
MAX_RECALL = 1000  # the most items one recall returns (what `memories search` allows)
MAX_CONTEXT_POOL = 2000  # standing candidates a context block reads, whatever the budget
_JOIN_SLACK = 2  # tokens a line may share with the text before it (BPE across the join)
_GIVE_UP = 200  # consecutive items that did not fit: the block is full
KIND_ORDER = ("constraint", "preference", "decision", "fact", "plan")
CONTEXT_HEADER = (
    "What Memoir remembers about the user (from their own words; each line: [kind] the "
    "item, and its id for `memoir memories show`):"
)


class ItemEmbedder(Protocol):
    """What recall needs of an embedder (``memoir.search``'s embedders are one)."""

    name: str

    def embed(self, texts: Sequence[str]) -> np.ndarray: ...
    def embed_query(self, texts: Sequence[str]) -> np.ndarray: ...


@dataclass(frozen=True, slots=True)
class Recalled:
    """One recalled item with its fused score and its rank in each list (1-based)."""

    item: MemoryItemRow
    score: float
    text_rank: int | None = None
    vector_rank: int | None = None


def embedded_text(item: MemoryItemRow) -> str:
    """What an item's vector is made from."""
    return item.content + " (" + ", ".join(item.keys) + ")"


def recall(
    items: MemoryItemsPart,
    query: str,
    where: ItemFilter,
    *,
    limit: int = 10,
    embedder: ItemEmbedder | None = None,
) -> list[Recalled]:
    """The items best answering ``query`` within ``where`` (see the module)."""
    if not 1 <= limit <= MAX_RECALL:
        raise UsageError(f"limit must be 1 to {MAX_RECALL}, got {limit}")
    if len(query) > MAX_QUERY_CHARS:
        raise UsageError(f"the query is {len(query)} characters; at most {MAX_QUERY_CHARS}")
    if not query.strip():
        newest = items.select(where, limit=limit)
        return [Recalled(i, 0.0) for i in newest]
    pool = max(TEXT_POOL, limit * 5)
    text_ids = items.rank_text(any_content_word(query), where, pool)
    rankings = [text_ids]
    vector_ids: list[str] = []
    if embedder is not None:
        vector_ids = _vector_ranking(items, query, where, embedder, text_ids, pool)
        rankings.append(vector_ids)
    fused = rrf(rankings)[:limit]
    found = items.by_ids([i for i, _ in fused])
    text_rank = {i: n for n, i in enumerate(text_ids, start=1)}
    vector_rank = {i: n for n, i in enumerate(vector_ids, start=1)}
    return [
        Recalled(found[i], score, text_rank.get(i), vector_rank.get(i))
        for i, score in fused
        if i in found
    ]


def _vector_ranking(
    items: MemoryItemsPart,
    query: str,
    where: ItemFilter,
    embedder: ItemEmbedder,
    text_ids: list[str],
    pool: int,
) -> list[str]:
    import numpy as np

    ids = list(dict.fromkeys([*items.ids(where, VECTOR_POOL), *text_ids]))
    if not ids:
        return []
    vectors = items.vectors(embedder.name, ids)
    missing = [i for i in ids if i not in vectors][:EMBED_PER_CALL]
    if missing:
        rows = items.by_ids(missing)
        texts = [embedded_text(rows[i]) for i in missing if i in rows]
        made = embedder.embed(texts) if texts else np.zeros((0, 0), dtype=np.float32)
        fresh = {i: made[n] for n, i in enumerate(i for i in missing if i in rows)}
        items.put_vectors(embedder.name, fresh)
        vectors.update(fresh)
    have = [i for i in ids if i in vectors]
    if not have:
        return []
    matrix = np.stack([vectors[i] for i in have]).astype(np.float32)
    q = np.asarray(embedder.embed_query([query]), dtype=np.float32).reshape(-1)
    scores = matrix @ q
    order = np.lexsort((np.arange(len(have)), -scores))
    return [have[int(n)] for n in order[:pool] if scores[n] >= VECTOR_FLOOR]


@dataclass(frozen=True, slots=True)
class ContextBlock:
    """The rendered block, its exact token count, and the items it holds (in order)."""

    text: str
    tokens: int
    items: tuple[str, ...]
    left_out: int  # relevant items that did not fit the budget

    def as_json(self) -> dict[str, Any]:
        return {
            "text": self.text,
            "tokens": self.tokens,
            "items": list(self.items),
            "left_out": self.left_out,
        }


def _line(item: MemoryItemRow) -> str:
    # the block goes to a model: a secret an item carries (one imported before imports
    # were checked, or one a detector learned since) is shown masked, as everywhere
    content = " ".join(mask(item.content).split())
    return f"- [{item.kind}] {content} ({item.id[:8]})"


def standing_order(items: Sequence[MemoryItemRow]) -> list[MemoryItemRow]:
    """Items in the order a context block takes them without a query: constraints first,
    then preferences, decisions, facts, plans; within a kind, the ones said most often,
    then the newest."""
    return sorted(items, key=lambda i: standing_key(i, KIND_ORDER))


def context_block(
    ordered: Sequence[MemoryItemRow], budget_tokens: int, counter: TokenCounter
) -> ContextBlock:
    """The block of ``ordered`` items (most relevant first) within ``budget_tokens``,
    counted on the rendered text: each item goes in if the whole block still fits, else it
    is skipped and the next one tried; an item saying what one before it said (the same
    kind and words, in another project's scope) is left out. Nothing fits (or nothing to
    say): an empty block. The caller chooses whose items ``ordered`` holds: one user's."""
    if budget_tokens < 0:
        raise MemoirError(f"the budget must be 0 or more tokens, got {budget_tokens}")
    lines: list[str] = []
    taken: list[str] = []
    said: set[tuple[str, str]] = set()  # one line per statement: the same words kept in two
    tokens = counter.count(CONTEXT_HEADER)  # projects' scopes are one line, the first
    misses = repeats = 0
    for item in ordered:
        statement = (item.kind, item.normalized or " ".join(item.content.split()).casefold())
        if statement in said:
            repeats += 1
            continue
        said.add(statement)
        line = _line(item)
        if tokens + counter.count(line) > budget_tokens + _JOIN_SLACK:
            misses += 1  # cannot fit: not worth an exact count
        else:
            count = counter.count("\n".join([CONTEXT_HEADER, *lines, line]))
            if count <= budget_tokens:
                lines.append(line)
                taken.append(item.id)
                tokens, misses = count, 0
            else:
                misses += 1
        if misses >= _GIVE_UP:
            break
    if not lines:
        return ContextBlock("", 0, (), len(ordered) - repeats)
    text = "\n".join([CONTEXT_HEADER, *lines])
    return ContextBlock(text, tokens, tuple(taken), len(ordered) - repeats - len(taken))


def item_json(
    item: Memory | MemoryItemRow, exchange_of: Callable[[str, int], str | None]
) -> dict[str, Any]:
    """``exchange_of(session_id, ordinal)`` names the exchange holding an event."""
    return {
        "id": item.id,
        "content": mask(item.content),
        "kind": item.kind,
        "scope": item.scope,
        "keys": list(item.keys),
        "temporal": item.temporal,
        "project": item.project,
        "session_id": item.session_id,
        "created_at": item.created_at.isoformat(),
        "observed_at": item.observed_at.isoformat() if item.observed_at else None,
        "first_observed_at": _iso(item.first_observed_at),
        "valid_from": _iso(item.valid_from),
        "valid_until": _iso(item.valid_until),
        "superseded_by": item.superseded_by,
        "operation_id": item.operation_id,
        "sources": [
            {
                "session_id": s.session_id,
                "ordinal": s.ordinal,
                "exchange_id": exchange_of(s.session_id, s.ordinal),
                "quote": mask(s.quote),
            }
            for s in item.sources
        ],
    }


def _iso(value: datetime | None) -> str | None:
    return value.isoformat() if value is not None else None


def receipt_json(r: MemoryReceipt | ReceiptRow) -> dict[str, Any]:
    return {
        "operation_id": r.operation_id,
        "session_id": r.session_id,
        "trigger": r.trigger,
        "outcome": r.outcome,
        "reason": r.reason or None,
        "range": [r.range_after, r.range_through],
        "checkpoint_id": r.checkpoint_id,
        "items": r.items,
        "dropped": r.dropped,
        "model": r.model or None,
        "prompt": r.prompt or None,
        "model_calls": r.model_calls,
        "input_tokens": r.input_tokens,
        "created_at": r.created_at.isoformat(),
    }


def quoted_exchanges(
    items: Sequence[Memory | MemoryItemRow],
    holding: Callable[[list[tuple[str, int]]], dict[tuple[str, int], str]],
) -> Callable[[str, int], str | None]:
    """``exchange_of`` for the quotes of ``items``: ``holding`` (the store's
    ``exchanges.holding``) reads every quoted exchange's id at once, however many
    sessions the items quote."""
    found = holding(sorted({(s.session_id, s.ordinal) for i in items for s in i.sources}))
    return lambda session_id, ordinal: found.get((session_id, ordinal))


def exchange_finder(
    exchanges_of: Callable[[str], Sequence[Any]],
) -> Callable[[str, int], str | None]:
    """``exchange_of`` over a session's exchanges (read once per session)."""
    cache: dict[str, Sequence[Any]] = {}

    def find(session_id: str, ordinal: int) -> str | None:
        if session_id not in cache:
            cache[session_id] = exchanges_of(session_id)
        for x in cache[session_id]:
            if x.first_ordinal <= ordinal <= x.last_ordinal:
                return str(x.id)
        return None

    return find
