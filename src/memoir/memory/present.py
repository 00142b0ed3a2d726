"""How a memory item is shown (CLI, HTTP, MCP).

Pure. An item's JSON names each quote's exchange (``SESSION:N``, the id search hits and
``memoir show`` use), so a reader can go from a memory to the words it came from. Its
content and quotes are shown masked (:func:`memoir.secrets.mask`): the validator keeps
secrets out of memory, and this is the backstop for what is shown (an export, which is
data, not presentation, is never masked).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from datetime import datetime
from typing import Any

from memoir.model.results import Memory, MemoryReceipt
from memoir.secrets import mask
from memoir.store.memory_rows import MemoryItemRow, ReceiptRow

__all__ = ["exchange_finder", "item_json", "quoted_exchanges", "receipt_json"]


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
